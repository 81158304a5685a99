"""Random number generators for DataFlows and augmentors: a different stream in every process.

Every :class:`~tfloop.dataflow.RNGDataFlow` and image augmentor draws from the
``np.random.RandomState`` that :func:`get_rng` gives it in ``reset_state()``. Without a fixed seed,
the seed mixes the object, the process id and the time, so forked workers differ. With
:func:`fix_rng_seed`, runs repeat exactly, and a parallel runner's worker ``k`` still gets a
stream of its own (the fixed seed offset by the worker's number).
"""
import os
import time
import weakref

import numpy as np

from tfloop.utils.checks import is_int
from tfloop.utils.coerce import tensorpack_int

__all__ = ["fix_rng_seed", "get_rng"]

_FIXED_SEED = None
_WORKER_INDEX = 0


def fix_rng_seed(seed: int) -> None:
    """Make every RNG created after this call by :func:`get_rng` start from ``seed``.

    Call it before ``reset_state()``. Worker processes of the parallel runners offset the seed by
    their index, so they still produce different data.

    Example:
        >>> fix_rng_seed(0)
        >>> get_rng().randint(100) == get_rng().randint(100)
        True
        >>> fix_rng_seed(None)  # back to different seeds
    """
    global _FIXED_SEED
    seed = tensorpack_int(seed, "fix_rng_seed: seed")
    if seed is not None and not is_int(seed):
        raise TypeError(f"fix_rng_seed needs an int (or None to unfix), got {seed!r}.")
    _FIXED_SEED = None if seed is None else int(seed)


def set_worker_index(index: int) -> None:
    """Called in a freshly forked worker: later RNGs of this process get a stream of their own."""
    global _WORKER_INDEX
    _WORKER_INDEX = int(index)


def get_rng(obj=None) -> np.random.RandomState:
    """A ``np.random.RandomState`` for ``obj``, different in every process unless a seed is fixed.

    Args:
        obj: the object that will own the RNG; its identity is mixed into the seed.
    """
    if _FIXED_SEED is not None:
        seed = (_FIXED_SEED + 1_000_003 * _WORKER_INDEX) % (2 ** 32)
    else:
        seed = (id(obj) + os.getpid() * 7919 + time.time_ns() + _WORKER_INDEX) % (2 ** 32)
    return np.random.RandomState(seed)


_RESEED_AFTER_FORK = weakref.WeakSet()


def reseed_after_fork(obj) -> None:
    """Call ``obj.reset_state()`` in every forked child (and again in each worker of the parallel
    runners once its seed offset is set), so that forked copies draw different numbers."""
    _RESEED_AFTER_FORK.add(obj)


def reseed_registered() -> None:
    for obj in list(_RESEED_AFTER_FORK):
        obj.reset_state()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=reseed_registered)
