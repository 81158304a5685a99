"""Session calls that feed values without ``Session.run``'s Python work.

``Session.make_callable(fetches, feed_list=...)`` is no callable at all: with a feed list it calls
``Session.run`` with a feed_dict every time, parsing fetches and converting feeds in Python while
holding the GIL. :func:`fed_callable` makes a real one (TensorFlow's ``Session::MakeCallable``),
which hands the arrays to C++ as they are. Optionally the call runs its graph in the calling
thread instead of TensorFlow's inter-op thread pool, which saves two thread switches per call for
a graph of one small op (an enqueue).
"""
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.client import session as tf_session

__all__ = ["fed_callable"]


def fed_callable(sess, feeds, targets, in_caller_thread=False):
    """A function ``call(*values)`` that feeds ``values`` to the tensors ``feeds`` and runs the ops
    ``targets`` in ``sess``, returning nothing.

    Each value must already be a numpy array of its tensor's dtype and shape: unlike
    ``Session.run``, the call neither casts nor checks values against the placeholders.
    A session that is not a ``tf.compat.v1.Session`` (a wrapper) gets its own
    ``make_callable``.

    Args:
        sess: the session.
        feeds (list[tf.Tensor]): the fed tensors, in the order of the call's arguments.
        targets (list[tf.Operation]): the ops to run.
        in_caller_thread (bool): run the graph in the calling thread (for a graph of a few cheap
            ops; a blocking op then blocks the caller, as it would anyway). In-process sessions
            only: a session with a target (``grpc://...``) runs it as usual.

    Example:
        >>> enqueue = fed_callable(sess, placeholders, [queue.enqueue(placeholders)])
        >>> enqueue(images, labels)
    """
    if not isinstance(sess, tf_session.BaseSession):
        return sess.make_callable(list(targets), feed_list=list(feeds))
    options = config_pb2.CallableOptions()
    options.feed.extend(t.name for t in feeds)
    options.target.extend(op.name for op in targets)
    if in_caller_thread and not sess.sess_str:   # an in-process session, not a remote master's
        options.run_options.inter_op_thread_pool = -1
    return sess._make_callable_from_options(options)

