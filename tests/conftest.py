import logging
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Python's bytecode cache for tfloop and the tests, whatever PYTHONDONTWRITEBYTECODE says: the
# suite imports tfloop in hundreds of processes (its workers, the programs it runs), and each
# would compile every module again; with the cache only the first does (it writes __pycache__
# beside the sources, as plain python does).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import pytest  # noqa: E402
from timeout_support import scaled_timeout  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true",
                     help="also run the tests marked slow: the full suite, as .ci/run does")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """pytest-timeout's limit per test (``timeout`` in pytest.ini, enough on an idle machine) is
    scaled like every other wait of the tests, unless --timeout or PYTEST_TIMEOUT sets it."""
    if (config.pluginmanager.hasplugin("timeout") and config.getoption("timeout") is None
            and "PYTEST_TIMEOUT" not in os.environ and config.getini("timeout")):
        config.option.timeout = scaled_timeout(float(config.getini("timeout")))


def pytest_collection_modifyitems(config, items):
    """Plain ``pytest`` runs the fast suite: the tests marked slow are deselected unless
    --run-slow is given, ``-m`` chooses by mark, or tests are named by node id (``file::test``)."""
    if (config.getoption("--run-slow") or config.option.markexpr
            or any("::" in arg for arg in config.args)):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
        config.hook.pytest_deselected(items=slow)


@pytest.fixture(autouse=True)
def _no_logger_dir_leaks():
    """Every test starts and ends without a log directory set."""
    from tfloop.utils import logger  # here: the main process of pytest-xdist never imports TF
    logger.unset_logger_dir()
    yield
    logger.unset_logger_dir()


@pytest.fixture(autouse=True)
def _no_seed_leaks():
    """A seed a test set (tf.random.set_seed, keras.utils.set_random_seed, TrainConfig(seed=))
    seeds every later training of the process: every test ends without one."""
    yield
    from tfloop.utils.rng import fix_rng_seed
    fix_rng_seed(None)
    if "tensorflow" in sys.modules:
        sys.modules["tensorflow"].random.set_seed(None)


@pytest.fixture
def logdir(tmp_path):
    """A fresh log directory set for the test."""
    from tfloop.utils import logger
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
