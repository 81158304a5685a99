"""StopEpoch: a callback ends the current epoch; the epoch's end hooks run, training goes on."""
import pytest
from support import LinearModel, RecordingCallback, batches, make_regression_data, train_linear

import tfloop
from tfloop import StopEpoch
from tfloop.compat import tf, tfv1


class Recorder(tfloop.Callback):
    """Every hook with the epoch and global step it saw; raises StopEpoch after ``stop_at``."""

    _chief_only = False

    def __init__(self, stop_at=()):
        self.stop_at = set(stop_at)
        self.calls = []

    def _before_epoch(self):
        self.calls.append(("before_epoch", self.epoch_num, self.global_step))

    def _trigger_step(self):
        self.calls.append(("trigger_step", self.epoch_num, self.global_step))
        if self.global_step in self.stop_at:
            raise StopEpoch(f"enough at step {self.global_step}")

    def _after_epoch(self):
        self.calls.append(("after_epoch", self.epoch_num, self.global_step))

    def _trigger_epoch(self):
        self.calls.append(("trigger_epoch", self.epoch_num, self.global_step))

    def _after_train(self):
        self.calls.append(("after_train", self.epoch_num, self.global_step))


def test_stop_epoch_ends_the_epoch_after_the_step_and_training_goes_on(log_lines):
    recorder = Recorder(stop_at=[1])
    trainer = train_linear([recorder], max_epoch=2)
    assert recorder.calls == [
        ("before_epoch", 1, 0), ("trigger_step", 1, 1),
        ("after_epoch", 1, 1), ("trigger_epoch", 1, 1),
        ("before_epoch", 2, 1), ("trigger_step", 2, 2), ("trigger_step", 2, 3),
        ("trigger_step", 2, 4), ("after_epoch", 2, 4), ("trigger_epoch", 2, 4),
        ("after_train", 2, 4)]
    assert trainer.global_step == 4 and trainer.training_error is None
    assert "Epoch 1 ends early at global step 1: enough at step 1" in log_lines
    assert "Training has finished." in log_lines


def test_callbacks_after_the_one_that_stops_the_epoch_still_see_the_step(log_warnings):
    first, second = Recorder(stop_at=[1]), Recorder()
    train_linear([first, second], max_epoch=1)
    assert second.calls == first.calls == [
        ("before_epoch", 1, 0), ("trigger_step", 1, 1), ("after_epoch", 1, 1),
        ("trigger_epoch", 1, 1), ("after_train", 1, 1)]
    assert log_warnings == []       # an early end is a request, not an error


def test_stop_epoch_in_the_last_epoch_finishes_training():
    recorder = Recorder(stop_at=[4])
    trainer = train_linear([recorder], max_epoch=2)
    assert [c for c in recorder.calls if c[0] != "trigger_step"][-3:] == [
        ("after_epoch", 2, 4), ("trigger_epoch", 2, 4), ("after_train", 2, 4)]
    assert trainer.global_step == 4


@pytest.mark.parametrize("name", ["StopEpoch"])
def test_exported(name):
    assert getattr(tfloop, name) is getattr(tfloop.callbacks, name)


class GatedLinear(LinearModel):
    """LinearModel with Adam behind the skip-update gate (Adam's state must not move either)."""

    def optimizer(self):
        return tfloop.SkipUpdateGate(tfv1.train.AdamOptimizer(0.1))


def test_skip_update_when_leaves_weights_and_adam_alone_but_takes_and_counts_the_batch():
    weights, data = WeightLog(), CountingBatches(batches(*make_regression_data(12), 4))
    skipper = tfloop.SkipUpdateWhen(lambda trainer: trainer.global_step in (1, 2))
    trainer = train_linear([skipper, weights], data=tfloop.FeedInput(data), model=GatedLinear(),
                           max_epoch=2)
    assert skipper.skipped == [1, 2] and trainer.global_step == 6
    steps = [step for step, _ in weights.after_step]
    assert steps == [1, 2, 3, 4, 5, 6]
    w = dict(weights.after_step)
    assert w[2] == w[1] and w[3] == w[2] and w[4] != w[3] and w[5] != w[4]   # steps 2, 3
    assert data.served == 6
    # Adam's step count (beta1_power) moved for the 4 applied updates only.
    assert weights.beta1_power == pytest.approx(0.9 ** 5)


def test_skip_update_when_without_the_gate_says_how_to_add_it():
    with pytest.raises(ValueError, match=r"return SkipUpdateGate\(tf.compat.v1.train."):
        train_linear([tfloop.SkipUpdateWhen(lambda trainer: False)], max_epoch=1)


class WeightLog(tfloop.Callback):
    """``(global step, w bytes)`` after every step; Adam's beta1_power at the end."""

    def _setup_graph(self):
        self.w = next(v for v in tfv1.global_variables() if v.op.name == "w")
        self.beta1 = next(v for v in tfv1.global_variables() if v.op.name == "beta1_power")
        with tf.control_dependencies([self.trainer.train_op]):
            self.w_after = tf.identity(self.w.read_value())
        self.after_step = []

    def _before_run(self, ctx):
        return [self.w_after]

    def _after_run(self, ctx, values):
        self.after_step.append((self.global_step, values.results[0].tobytes()))

    def _after_train(self):
        self.beta1_power = float(self.trainer.sess.run(self.beta1))


class CountingBatches:
    """A re-iterable list of batches that counts the batches handed out."""

    def __init__(self, data):
        self.data, self.served = data, 0

    def __iter__(self):
        for dp in self.data:
            self.served += 1
            yield dp

    def __len__(self):
        return len(self.data)


@pytest.mark.parametrize("hook", ["before_train", "before_epoch", "after_run", "after_epoch",
                                  "trigger_epoch", "after_train"])
def test_stop_epoch_anywhere_else_names_the_callback_and_where_it_belongs(hook):
    class Misplaced(tfloop.Callback):
        def _before_run(self, ctx):
            return None

    def stop(self, *args):
        raise StopEpoch("done")
    setattr(Misplaced, f"_{hook}", stop)
    with pytest.raises(RuntimeError) as error:
        train_linear([Misplaced()], max_epoch=1)
    assert str(error.value) == (
        f"Misplaced raised StopEpoch('done') in {hook}: StopEpoch may be raised only in "
        "trigger_step (override _trigger_step), where it ends the epoch after that step. To end "
        f"the whole training from {hook}, raise StopTraining.")


def test_stop_epoch_in_a_wrapped_callbacks_epoch_trigger_names_the_wrapper():
    class EveryEpoch(tfloop.Callback):
        def _trigger(self):
            raise StopEpoch()

    # The dispatcher calls the wrapper's trigger() after the epoch, on its schedule.
    with pytest.raises(RuntimeError, match=r"^PeriodicTrigger\(EveryEpoch\) raised StopEpoch in "
                                           r"trigger: StopEpoch may be raised only in"):
        train_linear([tfloop.PeriodicTrigger(EveryEpoch(), every_k_epochs=1)], max_epoch=1)


def test_stop_epoch_from_a_trigger_scheduled_at_a_step_ends_the_epoch_after_that_step():
    class EndsEpoch(tfloop.Callback):
        def _trigger(self):
            raise StopEpoch("enough")

    log = []
    train_linear([tfloop.PeriodicTrigger(EndsEpoch(), every_k_steps=2),
                  RecordingCallback("r", log)], max_epoch=2)
    # every callback still sees step 2; epoch 1 ends after it, epoch 2 after step 4
    assert [e[3] for e in log if e[1] == "trigger_step"] == [1, 2, 3, 4]
    assert [e[3] for e in log if e[1] == "after_epoch"] == [2, 4]
