"""Timeouts of the tests' waits, scaled for a loaded machine. Free of TensorFlow: the conftest
imports it in pytest's main process, which under pytest-xdist runs no test and so never needs
TensorFlow (importing it there would delay the start of every worker by its import time)."""
import os


def _timeout_scale():
    text = os.environ.get("TFLOOP_TEST_TIMEOUT_SCALE", "3")
    try:
        scale = float(text)
    except ValueError:
        scale = 0.0
    if not scale > 0:
        raise ValueError(f"TFLOOP_TEST_TIMEOUT_SCALE must be a number > 0, got {text!r}; "
                         "unset it for the default 3")
    return scale


# How many times longer than on an idle machine a test waits for a subprocess, a cluster or a
# thread: a 2-core machine busy with other work is several times slower.
TIMEOUT_SCALE = _timeout_scale()


def scaled_timeout(seconds: float) -> float:
    """``seconds`` (enough for the wait on an idle machine) times ``TFLOOP_TEST_TIMEOUT_SCALE``
    (3 by default). Only for waits that end as soon as what they wait for happens; a timeout
    that is itself under test keeps its value."""
    return seconds * TIMEOUT_SCALE
