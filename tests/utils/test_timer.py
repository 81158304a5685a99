"""timed_operation: the log lines around a timed block."""
import re

import pytest

from tfloop.utils import logger
from tfloop.utils.timer import IterSpeedCounter, Timer, timed_operation


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


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_timer_excludes_paused_time():
    clock = FakeClock()
    timer = Timer(clock)
    clock.now = 2.0
    timer.pause()
    assert timer.is_paused()
    clock.now = 10.0
    assert timer.seconds() == 2.0
    timer.resume()
    clock.now = 11.5
    assert timer.seconds() == 3.5 and not timer.is_paused()
    with pytest.raises(RuntimeError, match="not paused"):
        timer.resume()
    timer.pause()
    with pytest.raises(RuntimeError, match="paused already"):
        timer.pause()
    timer.reset()
    assert timer.seconds() == 0.0


def test_iter_speed_counter_logs_every_n_calls(log_lines):
    clock = FakeClock()
    speed = IterSpeedCounter(2, "load", clock=clock)
    for step in range(5):
        clock.now = step * 0.5
        speed()
    assert log_lines == ["load: 0.50 sec, 2 times, 0.25 sec/time",
                         "load: 1.50 sec, 4 times, 0.375 sec/time"]
    with pytest.raises(ValueError, match="print_every must be"):
        IterSpeedCounter(0)
