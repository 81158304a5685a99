"""TerminateOnNaN and CheckNumerics on a model whose learning rate makes the loss diverge."""
import math
import os

import numpy as np
import pytest
from support import FINAL_WEIGHTS_READ, LinearModel, RecordingCallback, RunCounter, train_linear

import tfloop
from tfloop.compat import tfv1

DIVERGING_LR = 1000.0       # the loss of LinearModel overflows to inf at step 7 (epoch 3)


def fetched(log, name):
    """The values a RecordingCallback fetched, by global step."""
    return {e[3]: e[5] for e in log if e[0] == name and e[1] == "after_run"}


def finite(value):
    parts = value if isinstance(value, list) else [value]
    return all(np.all(np.isfinite(np.asarray(p))) for p in parts)


def first_non_finite(values):
    return min(step for step, v in values.items() if not finite(v))


def test_terminate_on_nan_names_the_loss_and_the_step(logdir):
    log = []
    recorder, saver = RecordingCallback("r", log, fetches="cost"), tfloop.ModelSaver()
    with pytest.raises(tfloop.NaNLossError) as info:
        train_linear([saver, recorder, tfloop.TerminateOnNaN()],
                     model=LinearModel(lr=DIVERGING_LR), max_epoch=5)
    losses = fetched(log, "r")
    bad_step = first_non_finite(losses)
    assert bad_step == 7 and math.isinf(losses[bad_step])
    assert info.value.global_step == bad_step and info.value.names == ["cost:0"]
    assert isinstance(info.value, RuntimeError)
    assert "global step 7 (epoch 3): the loss cost:0 is Inf" in str(info.value)
    # Training ended at that step; every callback's after_train still ran.
    assert max(losses) == bad_step
    assert [e[1:4] for e in log if e[1] == "after_train"] == [("after_train", 3, 7)]
    # No final checkpoint of the diverged weights: the latest is the last good one.
    assert tfv1.train.latest_checkpoint(logdir) == os.path.join(logdir, "model-6")
    assert not os.path.exists(os.path.join(logdir, "model-7.index"))
    assert saver.last_checkpoint == os.path.join(logdir, "model-6")


def test_terminate_on_nan_adds_no_session_run():
    counter = RunCounter()
    train_linear([counter, tfloop.TerminateOnNaN()], max_epoch=2)
    assert counter.runs == 6 + FINAL_WEIGHTS_READ


def test_check_numerics_reports_every_non_finite_tensor():
    log = []
    with pytest.raises(tfloop.NonFiniteError) as info:
        train_linear([RecordingCallback("r", log, fetches=["pred", "cost"]),
                      tfloop.CheckNumerics(["pred", "cost"])],
                     model=LinearModel(lr=DIVERGING_LR), max_epoch=5)
    values = fetched(log, "r")
    bad_step = first_non_finite(values)
    pred, cost = values[bad_step]
    expected = [name for name, v in (("pred", pred), ("cost", cost)) if not finite(v)]
    assert not isinstance(info.value, tfloop.NaNLossError)
    assert (info.value.global_step, info.value.names) == (bad_step, expected)
    assert "cost is Inf" in str(info.value)
    assert f"CheckNumerics found non-finite values at global step {bad_step}" in \
        str(info.value)


def test_check_numerics_checks_trainable_variables_by_default():
    log = []
    with pytest.raises(tfloop.NonFiniteError) as info:
        train_linear([RecordingCallback("r", log, fetches="cost"), tfloop.CheckNumerics()],
                     model=LinearModel(lr=DIVERGING_LR), max_epoch=8)
    assert info.value.names == ["w"]
    assert info.value.global_step > first_non_finite(fetched(log, "r"))
    assert "w has " in str(info.value) and "among its 3 values" in str(info.value)


def test_check_numerics_finds_a_variable_by_name_and_passes_finite_training():
    trainer = train_linear([tfloop.CheckNumerics(["w", "pred:0"])], max_epoch=2)
    assert trainer.global_step == 6


def test_check_numerics_bad_names_are_clear_errors_at_setup():
    with pytest.raises(KeyError, match="no_such_tensor"):
        train_linear([tfloop.CheckNumerics(["no_such_tensor"])], max_epoch=1)
    with pytest.raises(TypeError, match="float tensors; 'global_step' is"):
        train_linear([tfloop.CheckNumerics(["global_step"])], max_epoch=1)
    with pytest.raises(ValueError, match="list of tensor or variable names"):
        tfloop.CheckNumerics([])
