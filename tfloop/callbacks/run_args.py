"""What a callback's ``_before_run`` may return, turned into the ``SessionRunArgs`` that
:class:`~tfloop.tfutils.hooked_session.HookedSession` merges into the step's one session call."""
import collections.abc
import functools

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_op_or_tensor_by_name
from tfloop.tfutils.fetch_structure import mapping_builder, sequence_builder

__all__ = ["as_run_args", "answering_as_run_args"]

SessionRunArgs = tfv1.train.SessionRunArgs

_FETCH_TYPES = (tf.Tensor, tf.Operation, tf.Variable, tf.SparseTensor)


def _is_resolved(fetches):
    """Whether ``fetches`` is a graph element or a flat list of them: nothing to resolve, so the
    object can be passed on as it is (no per-step copy)."""
    if isinstance(fetches, _FETCH_TYPES):
        return True
    if type(fetches) is not list:
        return False
    for f in fetches:
        if not isinstance(f, _FETCH_TYPES):
            return False
    return True


def as_run_args(answer, graph, who):
    """``answer`` (None, a tensor/op/variable/name, a list, tuple, named tuple or mapping of them,
    nested as deep as wanted, or ``SessionRunArgs``) as ``SessionRunArgs`` with names looked up
    in ``graph``, or None. The containers keep their types, so the callback's ``after_run`` gets
    its results in the structure it asked for, as ``Session.run`` gives them.

    Args:
        answer: what ``who._before_run`` returned.
        graph (tf.Graph): where names are looked up.
        who: the callback, named in the error.

    Raises:
        TypeError: ``answer`` holds something that cannot be fetched.

    Example:
        >>> as_run_args(["cost", accuracy], graph, callback).fetches
        [<tf.Tensor 'cost:0' ...>, <tf.Tensor 'accuracy:0' ...>]
    """
    if answer is None:
        return None
    if isinstance(answer, SessionRunArgs):
        if answer.fetches is None or _is_resolved(answer.fetches):
            return answer
        return SessionRunArgs(_resolve(answer.fetches, graph, who), answer.feed_dict,
                              answer.options)
    return SessionRunArgs(fetches=answer if _is_resolved(answer)
                          else _resolve(answer, graph, who))


def _resolve(fetches, graph, who):
    """``fetches`` with its names looked up, in containers of the same types (a named tuple
    stays one, an ``OrderedDict`` too), so that the results come back in the structure asked
    for."""
    if isinstance(fetches, _FETCH_TYPES):
        return fetches
    if isinstance(fetches, str):
        return get_op_or_tensor_by_name(fetches, graph)
    cls = type(fetches)
    if cls is list:
        return [_resolve(f, graph, who) for f in fetches]
    if cls is dict:
        return {k: _resolve(v, graph, who) for k, v in fetches.items()}
    if isinstance(fetches, (list, tuple)):
        return sequence_builder(fetches)([_resolve(f, graph, who) for f in fetches])
    if isinstance(fetches, collections.abc.Mapping):
        return mapping_builder(fetches)([(k, _resolve(v, graph, who))
                                         for k, v in fetches.items()])
    raise TypeError(
        f"{who}._before_run returned {fetches!r} ({type(fetches).__name__}); return None, a "
        "tensor/op/name, a list, tuple or dict of them, or tf.compat.v1.train.SessionRunArgs.")


def answering_as_run_args(before_run):
    """``before_run`` (a callback class's own public hook) made to answer as
    ``Callback.before_run`` does: what it returns goes through :func:`as_run_args`."""
    @functools.wraps(before_run)
    def resolved(self, ctx):
        return as_run_args(before_run(self, ctx), self.graph, self)
    return resolved
