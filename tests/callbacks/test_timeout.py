"""SessionRunTimeout: a step slower than the limit fails with DeadlineExceededError."""
import time

import pytest
from support import LinearModel, train_linear

from tfloop import SessionRunTimeout
from tfloop.compat import tf


class SlowModel(LinearModel):
    """Each step sleeps 0.5 s inside the graph."""

    def build_graph(self, x, y):
        slept = tf.py_function(lambda: time.sleep(0.5) or 0.0, [], tf.float32)
        with tf.control_dependencies([slept]):
            x = tf.identity(x)
        return super().build_graph(x, y)


def test_a_step_over_the_limit_fails_with_deadline_exceeded():
    with pytest.raises(tf.errors.DeadlineExceededError):
        train_linear([SessionRunTimeout(50)], model=SlowModel(), max_epoch=1)


def test_steps_within_the_limit_train_normally():
    trainer = train_linear([SessionRunTimeout(60_000)], max_epoch=1)
    assert trainer.global_step == 3


@pytest.mark.parametrize("value", [0, -5, "1.5", True])
def test_bad_timeout_is_refused(value):
    with pytest.raises(ValueError, match="timeout_in_ms must be an int > 0"):
        SessionRunTimeout(value)
