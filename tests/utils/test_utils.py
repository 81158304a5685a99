"""change_env, execute_only_once, get_tqdm, humanize_time_delta, the shared RNG, get_num_gpu."""
import io
import os

import pytest

from tfloop.dataflow import fix_rng_seed as dataflow_fix_rng_seed
from tfloop.utils import gpu
from tfloop.utils.utils import (
    change_env,
    execute_only_once,
    fix_rng_seed,
    get_rng,
    get_tqdm,
    get_tqdm_kwargs,
    humanize_time_delta,
)


@pytest.mark.parametrize("seconds, text", [
    (0, "0 second"), (1, "1 second"), (61, "1 minute 1 second"), (87.6, "1 minute 27 seconds"),
    (0.01, "0.01 second"), (3601, "1 hour 1 second"),
    (86400 + 9 * 3600 + 120 + 3, "1 day 9 hours 2 minutes 3 seconds"),
])
def test_humanize_time_delta(seconds, text):
    assert humanize_time_delta(seconds) == text


def test_humanize_negative_warns(log_warnings):
    assert humanize_time_delta(-2) == "-2 seconds"
    assert log_warnings == ["humanize_time_delta got a negative duration (-2 s)."]


def test_change_env_sets_unsets_and_restores_even_after_an_error():
    os.environ["TFLOOP_TEST_VAR"] = "old"
    try:
        with change_env("TFLOOP_TEST_VAR", "new"):
            assert os.environ["TFLOOP_TEST_VAR"] == "new"
        with pytest.raises(RuntimeError), change_env("TFLOOP_TEST_VAR", None):
            assert "TFLOOP_TEST_VAR" not in os.environ
            raise RuntimeError
        assert os.environ["TFLOOP_TEST_VAR"] == "old"
    finally:
        del os.environ["TFLOOP_TEST_VAR"]
    with change_env("TFLOOP_TEST_VAR", "x"):
        pass
    assert "TFLOOP_TEST_VAR" not in os.environ


def test_execute_only_once_is_per_calling_line():
    first = [execute_only_once() for _ in range(3)]
    other = execute_only_once()
    assert first == [True, False, False]
    assert other is True


def test_get_tqdm_uses_the_defaults_and_the_refresh_variable():
    out = io.StringIO()
    with change_env("TENSORPACK_PROGRESS_REFRESH", "7"):
        assert get_tqdm_kwargs(file=out)["mininterval"] == 7.0
    assert get_tqdm_kwargs(file=out)["mininterval"] == 180
    bar = get_tqdm(range(3), file=out, leave=True)
    assert list(bar) == [0, 1, 2]
    bar.close()
    assert "3/3" in out.getvalue()


def test_fixed_seed_is_shared_with_the_dataflows():
    try:
        fix_rng_seed(5)
        a = get_rng(object()).randint(1000, size=5)
        dataflow_fix_rng_seed(5)
        b = get_rng(object()).randint(1000, size=5)
        assert list(a) == list(b)
        assert fix_rng_seed is dataflow_fix_rng_seed
    finally:
        fix_rng_seed(None)


def test_get_num_gpu_follows_cuda_visible_devices():
    with change_env("CUDA_VISIBLE_DEVICES", "0,3"):
        assert gpu.get_num_gpu() == 2
    with gpu.change_gpu(-1):
        assert gpu.get_num_gpu() == 0
    driver = "/proc/driver/nvidia/gpus"
    with change_env("CUDA_VISIBLE_DEVICES", None), change_env("PATH", ""):  # no nvidia-smi
        assert gpu.get_num_gpu() == (len(os.listdir(driver)) if os.path.isdir(driver) else 0)
