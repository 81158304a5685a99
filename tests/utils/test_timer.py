"""timed_operation: the log lines around a timed block."""
import re

import pytest

from tfloop.utils import logger
from tfloop.utils.timer import timed_operation


def test_timed_operation_logs_the_capitalized_message_with_the_time(log_lines):
    with timed_operation("load annotations"):
        pass
    assert len(log_lines) == 1
    assert re.fullmatch(r"Load annotations finished, time:\d+\.\d{4} sec\.", log_lines[0])


def test_timed_operation_logs_the_start_when_asked(log_lines):
    with timed_operation("build", log_start=True):
        logger.info("inside")
    assert log_lines[:2] == ["Start build ...", "inside"]
    assert log_lines[2].startswith("Build finished, time:")


def test_timed_operation_needs_a_message():
    with pytest.raises(ValueError, match="non-empty message"):
        with timed_operation(""):
            pass
