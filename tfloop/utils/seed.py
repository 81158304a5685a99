"""Seeding the Python and NumPy random number generators that tfloop and DataFlows draw from."""
import random

import numpy as np

from tfloop.utils.checks import is_int
from tfloop.utils.rng import fix_rng_seed

__all__ = ["check_seed", "seed_host_rngs"]


def check_seed(seed, owner="seed_host_rngs"):
    """``seed`` as an int in [0, 2**32), or None; anything else is a ``TypeError``/``ValueError``
    naming the value and ``owner``."""
    if seed is None:
        return None
    if not is_int(seed):
        raise TypeError(f"{owner}: seed must be an int (e.g. seed=0) or None, got {seed!r} "
                        f"({type(seed).__name__}).")
    if not 0 <= int(seed) < 2 ** 32:
        raise ValueError(f"{owner}: seed must be in [0, 2**32), got {seed}; e.g. "
                         f"seed={int(seed) % 2 ** 32}.")
    return int(seed)


def seed_host_rngs(seed):
    """Seed Python's ``random``, NumPy's global RNG and every RNG :func:`tfloop.utils.rng.get_rng`
    hands out from now on (DataFlow shuffles, augmentors; worker ``k`` of a parallel runner gets
    ``seed`` offset by ``k``).

    Example:
        >>> seed_host_rngs(0)
        >>> np.random.rand() == (seed_host_rngs(0), np.random.rand())[1]
        True
    """
    seed = check_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    fix_rng_seed(seed)
