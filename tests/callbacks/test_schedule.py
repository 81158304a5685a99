"""Schedule, the value, and ScheduleState, the one place that says whether it is due: pure
decisions, step by step; and no other module of tfloop doing period arithmetic."""
import ast
import os
import re

import pytest

import tfloop
from tfloop.callbacks.schedule import Schedule, ScheduleState

PACKAGE_DIR = os.path.dirname(tfloop.__file__)


def due_steps(schedule, last, steps_per_run=1, steps_per_epoch=7, epoch_of=None):
    """The global steps at which a session call of ``steps_per_run`` steps is due (its hooks
    for ``"hooks"``/``"step_or_epoch"``, its trigger for ``"trigger"``)."""
    state = ScheduleState(schedule)
    state.start()
    due = []
    for after in range(steps_per_run, last + 1, steps_per_run):
        epoch = (after - 1) // steps_per_epoch + 1
        state.begin_step(after - steps_per_run, after, epoch, after % steps_per_epoch == 0)
        if state.trigger_due if schedule.mode == "trigger" else state.hooks_due:
            due.append(after)
    return due


def test_every_k_steps_is_the_step_that_makes_global_step_a_multiple_of_k():
    assert due_steps(Schedule(every_k_steps=10), 35) == [10, 20, 30]
    assert due_steps(Schedule(every_k_steps=10, mode="trigger"), 35) == [10, 20, 30]
    assert due_steps(Schedule(every_k_steps=10), 35, steps_per_run=5) == [10, 20, 30]


def test_a_call_that_passes_a_multiple_is_due_whatever_step_the_run_started_at():
    state = ScheduleState(Schedule(every_k_steps=10))
    state.begin_step(before=7, after=12, epoch=1, last_of_epoch=False)   # a resumed odd phase
    assert state.hooks_due
    state.begin_step(before=12, after=17, epoch=1, last_of_epoch=False)
    assert not state.hooks_due


def test_step_points_and_the_last_step_of_each_epoch():
    assert due_steps(Schedule(step_points=(0, 10, 25)), 35) == [10, 25]
    assert due_steps(Schedule(step_points=(12,)), 35, steps_per_run=5) == [15]
    assert due_steps(Schedule(last_step_of_epoch=True), 35) == [7, 14, 21, 28, 35]
    assert due_steps(Schedule(every_k_steps=10, last_step_of_epoch=True), 35) == [
        7, 10, 14, 20, 21, 28, 30, 35]
    assert due_steps(Schedule(), 3) == [1, 2, 3]          # names no step: every step


def test_every_k_seconds_is_decided_when_the_step_starts_and_firing_restarts_the_count():
    now = [0.0]
    state = ScheduleState(Schedule(every_k_seconds=4, every_k_steps=5, mode="trigger",
                                   clock=lambda: now[0]))
    state.start()
    fired = []
    for step in range(1, 13):
        state.begin_step(step - 1, step, 1, False)
        if state.trigger_due:
            fired.append((step, now[0]))
        now[0] += 1.5
    # Step 4 starts 4.5 s in; step 5 reaches a multiple of 5 (the count restarts at 6 s);
    # step 8 starts 4.5 s after that; step 10 reaches a multiple.
    assert fired == [(4, 4.5), (5, 6.0), (8, 10.5), (10, 13.5)]


def test_epoch_hooks_per_mode():
    hooks = ScheduleState(Schedule(every_k_epochs=2))
    either = ScheduleState(Schedule(every_k_steps=10, every_k_epochs=3, mode="step_or_epoch"))
    trigger = ScheduleState(Schedule(every_k_epochs=2, mode="trigger"))
    assert [e for e in range(1, 6) if hooks.epoch_hooks_due(e, 0)] == [2, 4]
    assert [e for e in range(1, 6) if either.epoch_hooks_due(e, 7 * e)] == [3]
    assert either.epoch_hooks_due(1, 0) and either.epoch_hooks_due(2, 20)
    assert all(trigger.epoch_hooks_due(e, 0) for e in range(1, 4))
    assert [e for e in range(1, 6) if trigger.trigger_at_epoch(e)] == [2, 4]
    assert not any(hooks.trigger_at_epoch(e) for e in range(1, 6))


def test_step_or_epoch_lets_every_step_of_its_epochs_through():
    schedule = Schedule(every_k_steps=10, every_k_epochs=2, mode="step_or_epoch")
    assert due_steps(schedule, 21) == [8, 9, 10, 11, 12, 13, 14, 20]


def test_steps_per_run_fit_and_late_points():
    assert Schedule(every_k_steps=10).fits_steps_per_run(5)
    assert not Schedule(every_k_steps=10).fits_steps_per_run(4)
    assert Schedule().fits_steps_per_run(3)
    assert Schedule(step_points=(15, 12, 0)).late_points(5) == [12]
    assert Schedule(step_points=(15, 12, 0)).step_points == (0, 12, 15)


@pytest.mark.parametrize("kwargs,message", [
    ({"mode": "sometimes"}, "Schedule: mode must be one of hooks, trigger, step_or_epoch; got "
                            "'sometimes'."),
    ({"before_train": True}, "Schedule(before_train=True) times a trigger() before training; "
                             "it needs mode='trigger', got mode='hooks'."),
    ({"step_points": (10, -1)}, "Schedule: step_points must be a tuple of global steps (ints >= "
                                "0), e.g. (1000, 5000); got (10, -1)."),
    ({"every_k_steps": 0}, "every_k_steps must be a positive number, got 0."),
])
def test_a_schedule_refuses_what_cannot_be_followed(kwargs, message):
    with pytest.raises(ValueError) as raised:
        Schedule(**kwargs)
    assert str(raised.value) == message


def test_the_clock_is_not_part_of_the_value():
    assert Schedule(every_k_seconds=5, clock=lambda: 0.0) == Schedule(every_k_seconds=5)


# ---- the period arithmetic has one home ----------------------------------------------------------
SCHEDULING_MODULE = os.path.join("callbacks", "schedule.py")
# Names a period is made of: a step count, a period, a window, step points, steps per run.
PERIOD_NAME = re.compile(r"global_step|every_k|^_?period$|_window$|step_points|steps_per_run")
# The loop's own position (epoch bounds, a resumed step's place in its epoch), not a schedule.
LOOP_POSITION = {(os.path.join("train", "loop.py"), f)
                 for f in ("check_bounds", "_check_steps_per_epoch", "epochs", "position_of_step")}


def _names(node):
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            yield child.id
        elif isinstance(child, ast.Attribute):
            yield child.attr


def period_arithmetic(path, rel):
    """``(function, line, names)`` of each modulo or floor division of a period's names, and
    each ordering of a value with an ``every_k`` period (e.g. seconds elapsed), in a file."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else function
            hits = []
            if isinstance(child, ast.BinOp) and isinstance(child.op, (ast.Mod, ast.FloorDiv)):
                hits = [n for n in _names(child) if PERIOD_NAME.search(n)]
            elif isinstance(child, ast.Compare) and any(
                    isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in child.ops):
                hits = [n for n in _names(child) if "every_k" in n]
            if hits and (rel, name) not in LOOP_POSITION:
                found.append((rel, name, child.lineno, hits))
            visit(child, name)

    visit(ast.parse(open(path, encoding="utf-8").read(), path), None)
    return found


def test_no_module_but_the_scheduling_one_computes_a_period():
    found = []
    for root, _, files in os.walk(PACKAGE_DIR):
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, PACKAGE_DIR)
            if name.endswith(".py") and rel != SCHEDULING_MODULE:
                found += period_arithmetic(path, rel)
    assert found == [], "period arithmetic outside tfloop/callbacks/schedule.py (state the " \
                        "period as a Schedule; the dispatcher applies it): " + repr(found)


def test_the_period_check_finds_a_modulo_of_the_step_and_an_elapsed_time(tmp_path):
    path = tmp_path / "fake.py"
    path.write_text("class Cb:\n"
                    "    def _trigger_step(self):\n"
                    "        if self.global_step % self._period == 0:\n"
                    "            pass\n"
                    "        if self.clock() - self.last >= self.every_k_seconds:\n"
                    "            pass\n")
    assert period_arithmetic(str(path), "fake.py") == [
        ("fake.py", "_trigger_step", 3, ["global_step", "_period"]),
        ("fake.py", "_trigger_step", 5, ["every_k_seconds"])]
    assert period_arithmetic(os.path.join(PACKAGE_DIR, SCHEDULING_MODULE), SCHEDULING_MODULE)
