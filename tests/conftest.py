import logging
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



class _Collect(logging.Handler):
    """Appends ``convert(record)`` to a list for each record that ``keep`` accepts."""

    def __init__(self, convert, keep=lambda record: True):
        super().__init__()
        self.convert, self.keep, self.seen = convert, keep, []

    def emit(self, record):
        if self.keep(record):
            self.seen.append(self.convert(record))


def _capture(convert, keep=lambda record: True):
    handler = _Collect(convert, keep)
    logging.getLogger("tfloop").addHandler(handler)
    try:
        yield handler.seen
    finally:
        logging.getLogger("tfloop").removeHandler(handler)


@pytest.fixture
def tfloop_log():
    """``(levelname, message)`` of every tfloop log record during the test."""
    yield from _capture(lambda r: (r.levelname, r.getMessage()))


@pytest.fixture
def log_lines():
    """The message of every tfloop log record during the test."""
    yield from _capture(lambda r: r.getMessage())


@pytest.fixture
def log_warnings():
    """The message of every tfloop warning or error during the test."""
    yield from _capture(lambda r: r.getMessage(), lambda r: r.levelno >= logging.WARNING)
