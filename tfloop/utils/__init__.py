"""Helpers with no TensorFlow graph code: the logger, timing and small utilities."""
from tfloop.utils import gpu, logger, rng, stats, utils
from tfloop.utils.dirlock import LogDirInUseError
from tfloop.utils.env_info import collect_env_info
from tfloop.utils.files import UnknownSchemeError
from tfloop.utils.logdir_format import RunStatus, read_run_status
from tfloop.utils.timer import Clock
from tfloop.utils.utils import (
    change_env,
    execute_only_once,
    fix_rng_seed,
    get_rng,
    get_tqdm,
    humanize_time_delta,
)

__all__ = ["logger", "gpu", "rng", "stats", "utils", "Clock", "change_env", "execute_only_once",
           "fix_rng_seed", "get_rng", "get_tqdm", "humanize_time_delta", "collect_env_info",
           "LogDirInUseError", "UnknownSchemeError", "RunStatus", "read_run_status"]
