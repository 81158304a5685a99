"""The one dispatch rule: underscore hooks, or public hooks with the same meaning, are called; the
trainer asks each callback (and wrappers answer for what they wrap) whether it uses the
per-step hooks; step_period and walk()."""
import numpy as np
import pytest
from support import RecordingCallback, train_linear

import tfloop
from tfloop.compat import tfv1


class Idle(tfloop.Callback):
    pass


class StepOnly(tfloop.Callback):
    def __init__(self, log):
        self.log = log

    def _trigger_step(self):
        self.log.append(("StepOnly", "trigger_step", self.global_step))


class RunOnly(tfloop.Callback):
    def __init__(self, log):
        self.log = log

    def _before_run(self, ctx):
        self.log.append(("RunOnly", "before_run", self.global_step))
        return ["cost:0"]

    def _after_run(self, ctx, values):
        self.log.append(("RunOnly", "after_run", self.global_step,
                         round(float(values.results[0]), 4)))


class KerasStyle(tfloop.Callback):
    """RecordingCallback's hooks, defined as public methods (as a Keras callback would)."""

    _chief_only = False

    def __init__(self, name, log):
        self.name = name
        self.log = log

    def _record(self, hook, extra=None):
        trainer = self.trainer
        self.log.append((self.name, hook, trainer.epoch_num, trainer.global_step,
                         trainer.local_step, extra))

    def setup_graph(self, trainer):                       # no super(): trainer is set anyway
        assert self.trainer is trainer and self.graph is not None
        self.log.append((self.name, "setup_graph"))

    def before_train(self):
        self._record("before_train")

    def after_train(self):
        self._record("after_train")

    def before_epoch(self):
        self._record("before_epoch")

    def after_epoch(self):
        self._record("after_epoch")

    def before_run(self, ctx):
        self._record("before_run")
        return ["cost:0"]                                 # a name, resolved as _before_run's

    def after_run(self, ctx, values):
        self._record("after_run", [np.asarray(r).tolist() for r in values.results])

    def trigger_step(self):
        self._record("trigger_step")

    def trigger(self):
        self._record("trigger")

    def state_dict(self):
        return {"seen": len(self.log)}

    def load_state_dict(self, state):
        self.log.append((self.name, "load_state_dict", state))


def test_public_hooks_are_called_exactly_where_the_underscore_ones_are():
    log = []
    classic = RecordingCallback("cb", log, fetches=["cost:0"])
    keras = KerasStyle("keras", log)
    trainer = train_linear([classic, keras], max_epoch=2)
    mine = [entry for entry in log if entry[0] == "cb"]
    theirs = [entry for entry in log if entry[0] == "keras"]
    assert [("keras",) + entry[1:] for entry in mine] == theirs
    assert [entry[1] for entry in mine].count("trigger_step") == 6
    assert [entry[1] for entry in theirs][:4] == ["setup_graph", "before_train", "before_epoch",
                                                   "before_run"]
    assert keras in trainer.step_callbacks and keras in trainer.run_callbacks
    assert keras.uses_run_hooks() and keras.uses_step_hook()
    keras.load_state_dict(keras.state_dict())
    assert log[-1] == ("keras", "load_state_dict", {"seen": len(log) - 1})


def test_a_public_hook_from_a_mixin_counts_and_a_public_before_run_may_call_super():
    class StepMixin:
        def trigger_step(self):
            self.steps.append(self.global_step)

    class Stepper(StepMixin, tfloop.Callback):
        def __init__(self):
            self.steps = []

    class Extra(tfloop.Callback):
        def before_run(self, ctx):
            return super().before_run(ctx)                # the base answer: nothing to fetch

    stepper, extra = Stepper(), Extra()
    assert stepper.uses_step_hook() and not stepper.uses_run_hooks()
    trainer = train_linear([stepper, extra], max_epoch=1)
    assert stepper.steps == [1, 2, 3]
    assert extra in trainer.run_callbacks and extra.before_run(None) is None


def test_a_dispatchers_public_hooks_are_left_as_they_are_also_in_subclasses():
    def before_run(self, ctx):
        return ["not", "resolved"]

    Fanout = type("Fanout", (tfloop.Callback,), {"before_run": before_run}, dispatcher=True)
    Quieter = type("Quieter", (Fanout,), {"before_run": before_run})
    Plain = type("Plain", (tfloop.Callback,), {"before_run": before_run})
    assert Fanout.before_run is before_run and Quieter.before_run is before_run
    assert Plain.before_run is not before_run and Plain.before_run.__wrapped__ is before_run
    group = tfloop.Callbacks([StepOnly([])])              # the group answers for its members
    assert group.uses_step_hook() and not tfloop.Callbacks([Idle()]).uses_step_hook()


def test_underscore_hooks_are_called_in_order_and_only_where_used():
    log = []
    step, run, idle = StepOnly(log), RunOnly(log), Idle()
    trainer = train_linear([run, idle, step], max_epoch=1)
    costs = [entry[3] for entry in log if entry[1] == "after_run"]
    assert log == [call for gs, cost in zip(range(3), costs) for call in (
        ("RunOnly", "before_run", gs), ("RunOnly", "after_run", gs + 1, cost),
        ("StepOnly", "trigger_step", gs + 1))]
    assert len(costs) == 3 and all(cost > 0 for cost in costs)       # the fetched losses
    mine = (run, idle, step)
    assert [cb for cb in trainer.step_callbacks if cb in mine] == [step]
    assert [cb for cb in trainer.run_callbacks if cb in mine] == [run]
    assert type(trainer.run_callbacks[0]).__name__ == "MaintainStepCounter"
    assert isinstance(trainer.step_callbacks, tuple) and isinstance(trainer.run_callbacks, tuple)


def test_trainer_lists_are_empty_before_setup():
    trainer = tfloop.SimpleTrainer()
    assert trainer.step_callbacks == () and trainer.run_callbacks == ()


def test_default_answers_come_from_the_underscore_hooks_a_class_defines():
    class AfterRunOnly(tfloop.Callback):
        def _after_run(self, ctx, values):
            pass

    class Child(StepOnly):
        pass

    answers = {type(cb).__name__: (cb.uses_run_hooks(), cb.uses_step_hook())
               for cb in [Idle(), StepOnly([]), RunOnly([]), AfterRunOnly(), Child([])]}
    assert answers == {"Idle": (False, False), "StepOnly": (False, True),
                       "RunOnly": (True, False), "AfterRunOnly": (True, False),
                       "Child": (False, True)}


def test_defines_hook_tells_the_underscore_hooks_a_class_defines_below_a_base():
    class Child(StepOnly):
        pass

    class Quiet(tfloop.ProxyCallback):
        def _trigger_step(self):
            pass

    assert StepOnly.defines_hook("_trigger_step") and Child.defines_hook("_trigger_step")
    assert not StepOnly.defines_hook("_trigger") and not Idle.defines_hook("_before_run")
    assert RunOnly([]).defines_hook("_trigger", "_after_run")          # any of the names
    assert not RunOnly.defines_hook("_trigger", "_trigger_step", "_setup_graph")
    assert tfloop.ProxyCallback.defines_hook("_trigger_step")           # it forwards every hook
    assert not tfloop.ProxyCallback.defines_hook("_trigger_step", below=tfloop.ProxyCallback)
    assert Quiet.defines_hook("_trigger_step", below=tfloop.ProxyCallback)
    assert not Quiet.defines_hook("_before_run", "_after_run", below=tfloop.ProxyCallback)


def test_wrappers_answer_for_what_they_wrap():
    def uses(cb):
        return cb.uses_run_hooks(), cb.uses_step_hook()

    def always(self):
        return True

    assert uses(tfloop.ProxyCallback(Idle())) == (False, False)
    assert uses(tfloop.ProxyCallback(RunOnly([]))) == (True, False)
    assert uses(tfloop.EnableCallbackIf(Idle(), always)) == (False, False)
    assert uses(tfloop.EnableCallbackIf(RunOnly([]), always)) == (True, False)
    assert uses(tfloop.EnableCallbackIf(StepOnly([]), always)) == (False, True)
    assert uses(tfloop.PeriodicCallback(RunOnly([]), every_k_epochs=2)) == (True, False)
    assert uses(tfloop.PeriodicTrigger(Idle(), every_k_epochs=1)) == (False, False)
    assert uses(tfloop.PeriodicTrigger(StepOnly([]), every_k_epochs=1)) == (False, True)
    assert uses(tfloop.PeriodicTrigger(RunOnly([]), every_k_epochs=1)) == (True, False)
    # a trigger() scheduled at steps: the wrapper is called after (some) steps
    assert uses(tfloop.PeriodicTrigger(Idle(), every_k_steps=2)) == (False, True)
    assert uses(tfloop.PeriodicTrigger(Idle(), every_k_seconds=5)) == (False, True)
    assert uses(tfloop.PeriodicTrigger(tfloop.PeriodicTrigger(RunOnly([]), every_k_epochs=1),
                                       every_k_epochs=2)) == (True, False)

    class Quiet(tfloop.ProxyCallback):
        def _trigger_step(self):
            pass
    assert uses(Quiet(Idle())) == (False, True)


def test_wrapped_callbacks_are_dispatched_by_their_answer_in_a_real_run():
    log = []
    idle = tfloop.PeriodicTrigger(Idle(), every_k_epochs=1)
    wrapped_run = tfloop.EnableCallbackIf(RunOnly(log), lambda self: self.global_step != 1)
    trainer = train_linear([idle, wrapped_run], max_epoch=1)
    assert idle not in trainer.step_callbacks and idle not in trainer.run_callbacks
    assert wrapped_run in trainer.run_callbacks and wrapped_run not in trainer.step_callbacks
    assert [entry[:3] for entry in log] == [("RunOnly", "before_run", 0),
                                            ("RunOnly", "after_run", 1),
                                            ("RunOnly", "before_run", 2),
                                            ("RunOnly", "after_run", 3)]


def test_run_update_ops_joins_the_steps_only_when_its_collection_has_ops():
    idle_updates = tfloop.RunUpdateOps()        # LinearModel adds no update op
    trainer = train_linear([idle_updates], max_epoch=1)
    assert idle_updates not in trainer.run_callbacks
    updates = tfloop.RunUpdateOps("extra_updates")
    counted = []

    class AddUpdate(tfloop.Callback):
        def _setup_graph(self):
            self.counter = counter = tfv1.get_variable(
                "updates", initializer=0, use_resource=True, trainable=False)
            tfv1.add_to_collection("extra_updates", counter.assign_add(1).op)

        def _after_train(self):
            counted.append(int(self.trainer.sess.run(self.counter)))

    trainer = train_linear([AddUpdate(), updates], max_epoch=1)
    assert updates in trainer.run_callbacks and counted == [trainer.global_step]


def test_step_period_is_stated_by_each_callback():
    summaries = tfloop.MergeAllSummaries(period=6)
    assert Idle().step_period is None
    assert tfloop.MergeAllSummaries().step_period is None
    assert summaries.step_period == 6
    assert tfloop.PeriodicTrigger(Idle(), every_k_steps=4).step_period == 4
    assert tfloop.PeriodicTrigger(Idle(), every_k_epochs=1).step_period is None
    assert tfloop.PeriodicTrigger(summaries, every_k_epochs=1).step_period == 6
    assert tfloop.PeriodicCallback(Idle(), every_k_steps=3).step_period == 3
    assert tfloop.EnableCallbackIf(summaries, lambda self: True).step_period == 6


def test_steps_per_run_checks_any_callback_by_its_schedule():
    class EveryThird(tfloop.Callback):
        when = tfloop.Schedule(every_k_steps=3)

        def _trigger_step(self):
            pass

    with pytest.raises(ValueError, match=r"ProxyCallback\(EveryThird\) runs every 3 steps, which "
                                         r"is not a multiple of steps_per_run=2"):
        tfloop.Callbacks([Idle(), tfloop.ProxyCallback(EveryThird())]).check_steps_per_run(2)
    tfloop.Callbacks([EveryThird()]).check_steps_per_run(3)
    tfloop.Callbacks([EveryThird()]).check_steps_per_run(1)


def test_late_step_points_are_warned_about_once_by_the_group(log_warnings):
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (5, 0.01), (8, 0.001)],
                                              step_based=True)
    tfloop.Callbacks([tfloop.PeriodicCallback(setter, every_k_epochs=1)]).check_steps_per_run(4)
    assert any("step-based schedule points [5]" in message for message in log_warnings)


def test_walk_yields_the_callback_then_what_it_wraps_depth_first():
    inner, other = RecordingCallback("inner", []), Idle()
    enabled = tfloop.EnableCallbackIf(inner, lambda self: True)
    periodic = tfloop.PeriodicTrigger(enabled, every_k_epochs=1)
    group = tfloop.Callbacks([periodic, other])
    assert list(other.walk()) == [other]
    assert list(periodic.walk()) == [periodic, enabled, inner]
    assert list(group.walk()) == [group, periodic, enabled, inner, other]


def test_a_wrapped_callback_already_used_by_another_training_is_refused():
    inner = Idle()
    train_linear([tfloop.PeriodicTrigger(inner, every_k_epochs=1)], max_epoch=1)
    with pytest.raises(ValueError, match=r"Callback Idle was already used by another training"):
        train_linear([tfloop.EnableCallbackIf(inner, lambda self: True)], max_epoch=1)


def test_monitors_and_averages_with_a_step_schedule_state_it():
    assert tfloop.JSONWriter(every_k_steps=5).step_period == 5
    assert tfloop.JSONWriter().step_period is None
    assert tfloop.SimpleMovingAverage(["cost"], 4).step_period == 4


def test_set_chief_only_sets_the_flag_and_returns_the_callback_as_in_tensorpack():
    callback = tfloop.CallbackFactory(trigger=lambda self: None)
    assert callback.chief_only
    assert callback.set_chief_only(False) is callback and not callback.chief_only
    assert callback.set_chief_only().chief_only


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_no_callback_class_answers_for_itself_when_it_works():
    import tfloop.callbacks  # noqa: F401  every callback class of the library is defined
    import tfloop.monitors  # noqa: F401
    answers = ("uses_run_hooks", "uses_step_hook", "step_period")
    overriding = sorted(f"{cls.__module__}.{cls.__name__}.{name}"
                        for cls in _subclasses(tfloop.Callback) if cls.__module__.startswith(
                            "tfloop.") for name in answers if name in vars(cls))
    assert overriding == []


def test_a_schedule_is_a_checked_value_that_wrappers_and_flags_set():
    with pytest.raises(ValueError, match="every_k_steps"):
        tfloop.Schedule(every_k_steps=0)
    assert tfloop.Schedule(every_k_seconds=2.5).at_steps
    assert not tfloop.Schedule(every_k_epochs=1).at_steps
    trigger = tfloop.PeriodicTrigger(Idle(), every_k_epochs=2, before_train=True)
    assert trigger.when == tfloop.Schedule(every_k_epochs=2, before_train=True, mode="trigger")
    assert tfloop.PeriodicCallback(Idle(), every_k_steps=4).when == tfloop.Schedule(
        every_k_steps=4, mode="step_or_epoch")
    assert tfloop.JSONWriter(every_k_steps=5).when.step_hook
    assert not tfloop.JSONWriter().when.step_hook
    assert tfloop.RunOp(lambda: None, run_step=False).when.fetches is False
    setter = tfloop.ScheduledHyperParamSetter("lr", [(0, 1.0), (10, 0.1)], step_based=True)
    assert setter.when.step_points == (0, 10) and setter.when.step_hook
    ramp = tfloop.ScheduledHyperParamSetter("lr", [(0, 0.0), (10, 0.1)], interp="linear",
                                            step_based=True)
    assert ramp.when.step_points == () and ramp.when.step_hook     # every step: it interpolates
    summaries = tfloop.MergeAllSummaries(period=10)
    assert summaries.when == tfloop.Schedule(every_k_steps=10, last_step_of_epoch=True,
                                             step_hook=False)
    assert tfloop.SimpleMovingAverage(["cost"], 5).when == tfloop.Schedule(every_k_steps=5,
                                                                           mode="trigger")


def test_hooks_set_on_the_object_are_called_like_hooks_of_the_class():
    """A hook given to one callback object (``setattr(cb, "_trigger_step", fn)``) takes part in
    the steps as one its class defines."""
    seen = []
    cb = tfloop.Callback()
    cb._before_run = lambda ctx: seen.append(("before_run", cb.global_step))
    cb._after_run = lambda ctx, values: seen.append(("after_run", cb.global_step))
    cb._trigger_step = lambda: seen.append(("trigger_step", cb.global_step))
    train_linear([cb], max_epoch=1, extra_callbacks=[], monitors=[])
    assert cb.uses_run_hooks() and cb.uses_step_hook()
    assert seen == [(hook, step) for before in range(3) for hook, step in (
        ("before_run", before), ("after_run", before + 1), ("trigger_step", before + 1))]
