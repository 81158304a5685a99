"""seed_host_rngs: Python's, NumPy's and tfloop's DataFlow RNGs repeat after the same seed."""
import random

import numpy as np
import pytest

from tfloop.utils.rng import get_rng
from tfloop.utils.seed import check_seed, seed_host_rngs


def draws():
    return random.random(), np.random.rand(), get_rng(object()).rand()


def test_the_same_seed_gives_the_same_draws_everywhere():
    seed_host_rngs(11)
    first = draws()
    seed_host_rngs(11)
    assert draws() == first
    seed_host_rngs(12)
    assert draws() != first


@pytest.mark.parametrize("seed,error", [(True, TypeError), ("1", TypeError), (2 ** 32, ValueError)])
def test_a_bad_seed_names_the_value(seed, error):
    with pytest.raises(error, match=f"owner: seed must .*{seed!r}" if error is TypeError
                       else "must be in \\[0, 2\\*\\*32\\), got 4294967296; e.g. seed=0"):
        check_seed(seed, "owner")
