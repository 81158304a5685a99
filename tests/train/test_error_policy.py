"""TrainingErrorPolicy: how training ends, what is logged, what after_train sees and what is
raised, for a clean end, StopTraining, sys.exit, Ctrl-C, an error, and an input that runs out;
the loop-end listeners before every after_train."""
import logging

import pytest
from support import train_linear

import tfloop
from tfloop.compat import tf
from tfloop.utils.logdir_format import read_run_status


class Boom(Exception):
    pass


class SeesTheEnd(tfloop.Callback):
    """Records ``trainer.training_error`` as after_train sees it."""

    _chief_only = False

    def __init__(self):
        self.seen = []

    def _after_train(self):
        self.seen.append(self.trainer.training_error)


class RaiseAt(tfloop.Callback):
    """Raises ``make_error()`` in ``_trigger_step`` at global step 2, or in ``_trigger`` at the
    end of the first epoch."""

    _chief_only = False

    def __init__(self, make_error, in_trigger=False):
        self.make_error = make_error
        self.in_trigger = in_trigger

    def _trigger_step(self):
        if not self.in_trigger and self.global_step == 2:
            raise self.make_error()

    def _trigger(self):
        if self.in_trigger:
            raise self.make_error()


def ending_lines(caplog):
    return [r.getMessage() for r in caplog.records
            if r.getMessage().startswith(("Training", "Ctrl-C", "after_train"))]


@pytest.fixture(autouse=True)
def info_logs(caplog):
    caplog.set_level(logging.INFO)


def test_a_clean_end_is_logged_and_after_train_sees_no_error(caplog):
    end = SeesTheEnd()
    trainer = train_linear([end])
    assert end.seen == [None] and trainer.training_error is None
    assert ending_lines(caplog) == ["Training has finished."]


def test_stop_training_ends_cleanly_with_its_reason_logged(caplog):
    end = SeesTheEnd()
    trainer = train_linear([RaiseAt(lambda: tfloop.StopTraining("enough")), end], max_epoch=3)
    assert end.seen == [None] and trainer.global_step == 2
    assert ending_lines(caplog) == ["Training stopped: enough"]


def test_a_stop_without_a_reason_is_logged_by_its_class_name(caplog):
    train_linear([RaiseAt(tfloop.StopTraining)], max_epoch=3)
    assert ending_lines(caplog) == ["Training stopped: StopTraining"]


class FailsAfterTrain(tfloop.Callback):
    _chief_only = False

    def _after_train(self):
        raise Boom("cleanup failed")


def test_an_after_train_error_after_a_stop_is_raised_without_the_stop_as_its_context():
    with pytest.raises(Boom) as info:
        train_linear([RaiseAt(lambda: tfloop.StopTraining("enough")), FailsAfterTrain()],
                     max_epoch=3)
    assert info.value.__suppress_context__ and info.value.__cause__ is None


@pytest.mark.slow
def test_ctrl_c_runs_after_train_with_the_interrupt_then_reraises_it(caplog):
    end = SeesTheEnd()
    with pytest.raises(KeyboardInterrupt) as info:
        train_linear([RaiseAt(KeyboardInterrupt), end], max_epoch=3)
    assert end.seen == [info.value]
    assert ending_lines(caplog) == ["Ctrl-C: stopping training at global step 2."]


def test_an_error_is_logged_seen_by_after_train_and_reraised(caplog):
    end = SeesTheEnd()
    with pytest.raises(Boom) as info:
        train_linear([RaiseAt(lambda: Boom("b")), end], max_epoch=3)
    assert end.seen == [info.value]
    assert ending_lines(caplog) == ["Training failed at global step 2: Boom: b"]


def test_an_after_train_that_fails_after_an_error_is_logged_and_the_first_error_raised(caplog):
    class FailingEnd(tfloop.Callback):
        _chief_only = False

        def _after_train(self):
            raise Boom("end")

    with pytest.raises(Boom) as info:
        train_linear([RaiseAt(lambda: Boom("b")), FailingEnd()])
    assert info.value.args == ("b",)
    assert ending_lines(caplog) == ["Training failed at global step 2: Boom: b",
                                    "after_train also failed: Boom: end"]


def test_an_after_train_that_fails_after_a_clean_end_raises():
    class FailingEnd(tfloop.Callback):
        _chief_only = False

        def _after_train(self):
            raise Boom("end")

    with pytest.raises(Boom) as info:
        train_linear([FailingEnd()])
    assert info.value.args == ("end",)


def out_of_range():
    return tf.errors.OutOfRangeError(None, None, "End of sequence")


def test_running_out_of_range_during_the_steps_is_reported_as_the_input_running_out(caplog):
    end = SeesTheEnd()
    with pytest.raises(ValueError) as info:
        train_linear([RaiseAt(out_of_range), end], max_epoch=3)
    message = ("The input FeedInput ran out at step 1 of epoch 1 (global step 2), before the "
               "epoch's steps_per_epoch=3 steps: it is not repeated and has fewer batches. Leave "
               "steps_per_epoch out to make each epoch one pass over the data, or give the data as "
               "it is (data=dataset, or DatasetInput(dataset) with repeat=True, the default), "
               "which tfloop repeats.")
    assert str(info.value) == message
    assert isinstance(info.value.__context__, tf.errors.OutOfRangeError)
    assert info.value.__suppress_context__
    assert end.seen == [info.value]
    assert ending_lines(caplog) == [f"Training failed at global step 2: ValueError: {message}"]


def test_out_of_range_outside_the_steps_is_not_taken_for_the_input():
    end = SeesTheEnd()
    with pytest.raises(tf.errors.OutOfRangeError) as info:
        train_linear([RaiseAt(out_of_range, in_trigger=True), end], max_epoch=3)
    assert end.seen == [info.value]


class SeesTheOutcome(tfloop.Callback):
    """Records, in after_train, how the experiment trackers would record the run's end."""

    _chief_only = False

    def _after_train(self):
        from tfloop.monitors.outcome import training_outcome
        self.outcome = training_outcome(self.trainer)


def _exits(code):
    def make():
        raise SystemExit(code) if code != "no argument" else SystemExit()
    return make


@pytest.mark.parametrize("code", [0, None, False, "no argument"])
def test_a_system_exit_of_status_0_is_a_clean_stop_then_exits_as_asked(logdir, caplog, code):
    # sys.exit(0) in a callback, or Ray Tune ending a trial from inside tune.report.
    end, outcome = SeesTheEnd(), SeesTheOutcome()
    with pytest.raises(SystemExit) as info:
        train_linear([RaiseAt(_exits(code)), tfloop.ModelSaver(), end, outcome], max_epoch=3)
    trainer = end.trainer
    assert info.value.code == (None if code == "no argument" else code)
    assert end.seen == [None] and trainer.training_error is None
    assert outcome.outcome == ("finished", 0)
    reason = f"SystemExit({info.value.code!r}) at global step 2, a clean exit (status 0)"
    assert ending_lines(caplog) == [f"Training stopped: {reason}"]
    status = read_run_status(logdir)
    assert (status.state, status.reason, status.record["global_step"]) == ("stopped", reason, 2)
    assert tf.train.latest_checkpoint(logdir).endswith("model-2")    # the final checkpoint
    assert trainer.final_weights is not None


@pytest.mark.parametrize("code", [3, "bye"])
def test_a_system_exit_of_another_status_is_a_failure(logdir, caplog, code):
    end, outcome = SeesTheEnd(), SeesTheOutcome()
    with pytest.raises(SystemExit) as info:
        train_linear([RaiseAt(_exits(code)), tfloop.ModelSaver(), end, outcome], max_epoch=3)
    assert end.seen == [info.value]
    assert outcome.outcome == ("failed", 3 if code == 3 else 1)
    assert ending_lines(caplog) == [f"Training failed at global step 2: SystemExit: {code}"]
    assert read_run_status(logdir).state == "failed"
    assert tf.train.latest_checkpoint(logdir) is None           # no checkpoint of a failed run


class Order(tfloop.Callback):
    """Adds to ``calls`` when the loop-end listeners and after_train run."""

    _chief_only = False

    def __init__(self, calls, name):
        self.calls, self.name = calls, name

    def _setup_graph(self):
        self.trainer.loop_end_listeners.append(lambda: self.calls.append(("loop end", self.name)))

    def _after_train(self):
        self.calls.append(("after_train", self.name))


@pytest.mark.parametrize("make_error, listeners_run", [
    (None, True), (lambda: tfloop.StopTraining("enough"), True), (lambda: Boom("b"), False),
    (KeyboardInterrupt, False),
])
def test_loop_end_listeners_run_after_a_clean_end_before_every_after_train(make_error,
                                                                            listeners_run):
    calls = []
    callbacks = [Order(calls, "a"), Order(calls, "b")]
    if make_error is not None:
        callbacks.insert(1, RaiseAt(make_error))
    try:
        train_linear(callbacks, max_epoch=2)
    except (Boom, KeyboardInterrupt):
        pass
    ends = [("after_train", "a"), ("after_train", "b")]
    assert calls == ([("loop end", "a"), ("loop end", "b")] if listeners_run else []) + ends


def test_a_loop_end_listener_that_fails_lets_every_other_listener_and_after_train_run():
    calls = []

    class FailsAtLoopEnd(tfloop.Callback):
        def _setup_graph(self):
            self.trainer.loop_end_listeners.append(self._fail)

        def _fail(self):
            raise Boom("listener")

    with pytest.raises(Boom, match="listener"):
        train_linear([FailsAtLoopEnd(), Order(calls, "a")], max_epoch=1)
    assert calls == [("loop end", "a"), ("after_train", "a")]
