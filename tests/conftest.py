import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from tfloop.utils import logger  # noqa: E402


@pytest.fixture(autouse=True)
def _no_logger_dir_leaks():
    """Every test starts and ends without a log directory set."""
    logger.unset_logger_dir()
    yield
    logger.unset_logger_dir()


@pytest.fixture
def logdir(tmp_path):
    """A fresh log directory set for the test."""
    path = tmp_path / "train_log"
    logger.set_logger_dir(str(path), action="keep")
    return str(path)
