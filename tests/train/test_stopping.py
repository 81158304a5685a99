"""StopTraining from every hook, exceptions and Ctrl-C: after_train always runs."""
import pytest
from support import RecordingCallback, train_linear

import tfloop
from tfloop.compat import tfv1

HOOKS = ["_before_train", "_before_epoch", "_before_run", "_after_run", "_trigger_step",
         "_after_epoch", "_trigger"]


def raising_callback(hook, exc_factory, at_step=2):
    """A callback that raises ``exc_factory()`` in ``hook`` once the global step reaches at_step
    (for hooks that run before any step, at once)."""

    def raiser(self, *args):
        if hook in ("_before_train", "_before_epoch") or self.global_step >= at_step:
            raise exc_factory()
        return None

    return type("Raise" + hook.strip("_").title().replace("_", ""), (tfloop.Callback,),
                {hook: raiser})()


@pytest.mark.parametrize("hook", HOOKS + ["_trigger_epoch"])
def test_stop_training_from_each_hook_ends_cleanly_and_runs_after_train(hook, tfloop_log):
    log = []
    recorder = RecordingCallback("rec", log)
    trainer = train_linear([raising_callback(hook, lambda: tfloop.StopTraining("enough")),
                            recorder], max_epoch=3)
    hooks_seen = [entry[1] for entry in log]
    assert hooks_seen[-1] == "after_train"
    assert hooks_seen.count("after_train") == 1
    assert trainer.global_step < 9
    # A clean stop is never an error, whichever hook raised it.
    assert [entry for entry in tfloop_log if entry[0] == "ERROR"] == []
    assert ("INFO", "Training stopped: enough") in tfloop_log


def test_stop_training_after_step_two_stops_exactly_there():
    log = []
    train_linear([raising_callback("_trigger_step", tfloop.StopTraining, at_step=2),
                  RecordingCallback("rec", log)], max_epoch=3)
    steps = [entry[3] for entry in log if entry[1] == "after_run"]
    assert steps == [1, 2]


def test_request_stop_from_after_run():
    class Stopper(tfloop.Callback):
        def _after_run(self, ctx, values):
            if self.global_step == 4:
                ctx.request_stop()

    log = []
    trainer = train_linear([Stopper(), RecordingCallback("rec", log)], max_epoch=3)
    assert trainer.global_step == 4
    assert [e[1] for e in log][-3:] == ["after_run", "trigger_step", "after_train"]


class Boom(Exception):
    pass


@pytest.mark.parametrize("hook", HOOKS)
def test_exception_in_a_hook_propagates_after_every_after_train_ran(hook, caplog):
    before, after = [], []
    with pytest.raises(Boom) as info:
        train_linear([RecordingCallback("first", before), raising_callback(hook, Boom),
                      RecordingCallback("last", after)], max_epoch=2)
    assert before[-1][1] == "after_train"
    assert after[-1][1] == "after_train"
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert hook.strip("_") in notes and "Raise" in notes


def test_exception_in_after_train_does_not_stop_other_after_trains():
    log = []

    class BadEnd(tfloop.Callback):
        def _after_train(self):
            raise Boom("after_train failed")

    with pytest.raises(Boom):
        train_linear([BadEnd(), RecordingCallback("rec", log)], max_epoch=1)
    assert log[-1][1] == "after_train"


def test_keyboard_interrupt_runs_after_train_then_reraises():
    log = []
    with pytest.raises(KeyboardInterrupt):
        train_linear([raising_callback("_trigger_step", KeyboardInterrupt, at_step=3),
                      RecordingCallback("rec", log)], max_epoch=3)
    assert log[-1][1] == "after_train"
    assert log[-1][3] == 3


def test_session_is_closed_after_training():
    trainer = train_linear([], max_epoch=1)
    assert trainer.sess._closed


def test_hook_exception_keeps_first_error_when_after_train_also_fails():
    class BadEnd(tfloop.Callback):
        def _after_train(self):
            raise ValueError("secondary")

    with pytest.raises(Boom):
        train_linear([raising_callback("_trigger_step", Boom), BadEnd()], max_epoch=1)


def test_chief_only_callbacks_are_skipped_on_non_chief(caplog):
    log = []

    class Worker(tfloop.SimpleTrainer):
        is_chief = False

    chief_only = RecordingCallback("chief", log)
    chief_only.chief_only = True
    everywhere = RecordingCallback("all", log)
    train_linear([chief_only, everywhere], trainer=Worker(), max_epoch=1)
    assert {entry[0] for entry in log} == {"all"}


def test_graph_is_finalized_before_training():
    seen = []

    class Check(tfloop.Callback):
        def _before_train(self):
            seen.append(self.graph.finalized)
            with pytest.raises(RuntimeError):
                tfv1.constant(1.0)

    train_linear([Check()], max_epoch=1)
    assert seen == [True]
