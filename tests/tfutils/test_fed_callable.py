"""fed_callable: feeding values to a session call without Session.run."""
import threading

import numpy as np
import pytest

from tfloop.compat import tf, tfv1
from tfloop.tfutils.fed_callable import fed_callable


def queue_graph(capacity=4, dtypes=(tf.float32, tf.int32, tf.string)):
    graph = tf.Graph()
    with graph.as_default():
        placeholders = [tfv1.placeholder(d, None) for d in dtypes]
        queue = tfv1.FIFOQueue(capacity, list(dtypes))
        enqueue = queue.enqueue(placeholders)
        dequeue = queue.dequeue()
        close = queue.close(cancel_pending_enqueues=True)
    return graph, placeholders, enqueue, dequeue, close


class NoRun(tfv1.Session):
    """A session whose Session.run fails: what is fed must not go through it."""

    def run(self, *args, **kwargs):
        raise AssertionError("Session.run was called")


@pytest.mark.parametrize("in_caller_thread", [False, True])
def test_fed_values_reach_the_graph_exactly_without_session_run(in_caller_thread):
    graph, placeholders, enqueue, dequeue, _ = queue_graph()
    wide = np.arange(24, dtype=np.float32).reshape(4, 6)
    values = [(wide[:, ::2], np.array([3, -1], np.int32), np.array([b"a", b"bc"], object)),
              (np.float32(2.5), np.int32(7), np.array("d\u00e9", object))]
    with NoRun(graph=graph) as sess:
        call = fed_callable(sess, placeholders, [enqueue], in_caller_thread=in_caller_thread)
        for v in values:
            assert call(*v) == []
        for v in values:
            got = tfv1.Session.run(sess, dequeue)
            np.testing.assert_array_equal(got[0], v[0])
            np.testing.assert_array_equal(got[1], v[1])
            # Strings come back as bytes (str encoded as UTF-8), as Session.run feeds them.
            assert [bytes(s) for s in np.atleast_1d(got[2])] == [
                s if isinstance(s, bytes) else s.encode() for s in np.atleast_1d(v[2])]


def test_an_enqueue_blocked_on_a_full_queue_in_the_caller_thread_is_cancelled_by_close():
    graph, placeholders, enqueue, _, close = queue_graph(capacity=1, dtypes=(tf.float32,))
    errors = []
    with tfv1.Session(graph=graph) as sess:
        call = fed_callable(sess, placeholders, [enqueue], in_caller_thread=True)
        call(np.float32(1))

        def blocked():
            try:
                call(np.float32(2))
            except tf.errors.CancelledError as e:
                errors.append(e)

        thread = threading.Thread(target=blocked)
        thread.start()
        thread.join(0.2)
        assert thread.is_alive()
        sess.run(close)
        thread.join(30)
    assert not thread.is_alive() and len(errors) == 1


class Wrapper:
    """A session wrapper (e.g. a debugger's): only make_callable and run."""

    def __init__(self, sess):
        self.sess = sess

    def make_callable(self, fetches, feed_list=None):
        return self.sess.make_callable(fetches, feed_list=feed_list)


def test_a_session_wrapper_gets_its_own_make_callable():
    graph, placeholders, enqueue, dequeue, _ = queue_graph(dtypes=(tf.int32,))
    with tfv1.Session(graph=graph) as sess:
        fed_callable(Wrapper(sess), placeholders, [enqueue])(np.int32(5))
        assert sess.run(dequeue) == 5
