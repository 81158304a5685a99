"""A callback raising in any hook, with any kind of exception, then auto-resume: the resumed run
ends at the right global step with the weights and stats.json of an uninterrupted run.

Every hook x Exception / SystemExit / KeyboardInterrupt. The failing callback raises once (at
global step 4, in epoch 2 of 3-step epochs, or in the one-off hooks); the second run has no such
callback and resumes from what the first left in the log directory.
"""
import json
import os

import pytest
from resume_support import STEPS_PER_EPOCH, read_stats, train

import tfloop
from tfloop.resume.session_init import find_resume_checkpoint
from tfloop.resume.state import read_resume_state
from tfloop.tfutils.varmanip import checkpoint_step

MAX_EPOCH = 4
TOTAL_STEPS = MAX_EPOCH * STEPS_PER_EPOCH
HOOKS = ["_before_train", "_before_epoch", "_before_run", "_after_run", "_trigger_step",
         "_after_epoch", "_trigger_epoch", "_after_train"]
ERRORS = {"Exception": RuntimeError, "SystemExit": SystemExit,
          "KeyboardInterrupt": KeyboardInterrupt}


class RaiseOnce(tfloop.Callback):
    """Raises ``error`` in ``hook`` once training reaches global step 4 (epoch 2 for epoch hooks;
    at once in before_train and after_train)."""

    def __init__(self, hook, error):
        self.hook, self.error, self.raised_at = hook, error, None
        setattr(self, hook, self._maybe_raise)

    def _maybe_raise(self, *args):
        due = {"_before_train": True, "_after_train": True,
               "_before_epoch": self.epoch_num == 2, "_after_epoch": self.epoch_num == 2,
               "_trigger_epoch": self.epoch_num == 2}.get(self.hook, self.global_step >= 4)
        if due and self.raised_at is None:
            self.raised_at = self.global_step
            raise self.error(f"{type(self).__name__} raised in {self.hook} "
                             f"at global step {self.global_step}")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("reference") / "log")
    _, weights, _ = train(logdir, max_epoch=MAX_EPOCH)
    return {"final": weights.final, "stats": read_stats(logdir)}


def check_log_dir(logdir):
    """Every checkpoint's resume state agrees with its step; stats.json's epochs and steps agree."""
    for name in sorted(os.listdir(logdir)):
        if name.endswith(".resume.json"):
            prefix = os.path.join(logdir, name[:-len(".resume.json")])
            state = read_resume_state(prefix)
            assert state["global_step"] == checkpoint_step(prefix)
            assert (state["epoch"] - 1) * STEPS_PER_EPOCH + state["local_step"] == \
                state["global_step"], (name, state["epoch"], state["local_step"])
    if os.path.exists(os.path.join(logdir, "stats.json")):
        with open(os.path.join(logdir, "stats.json")) as f:
            records = json.load(f)
        assert [(r["epoch_num"], r["global_step"]) for r in records] == \
            [(e, e * STEPS_PER_EPOCH) for e in range(1, len(records) + 1)]


def hooks_and_kinds():
    """Every hook x every kind; the fast suite has each hook with Exception and each other kind in
    ``_trigger_step``, the rest are marked slow."""
    for hook in HOOKS:
        for kind in sorted(ERRORS):
            fast = kind == "Exception" or hook == "_trigger_step"
            yield pytest.param(hook, kind, marks=() if fast else pytest.mark.slow,
                               id=f"{hook}-{kind}")


@pytest.mark.parametrize("hook, kind", list(hooks_and_kinds()))
def test_a_raising_hook_then_auto_resume_ends_at_the_right_step(tmp_path, reference, hook, kind):
    logdir = str(tmp_path / "log")
    raiser = RaiseOnce(hook, ERRORS[kind])
    with pytest.raises(ERRORS[kind], match=f"RaiseOnce raised in {hook}"):
        train(logdir, max_epoch=MAX_EPOCH, extra=[raiser])
    assert raiser.raised_at is not None
    check_log_dir(logdir)
    prefix = find_resume_checkpoint(logdir)
    if prefix is not None and checkpoint_step(prefix) == TOTAL_STEPS:
        config, _, counter = train(logdir, max_epoch=MAX_EPOCH)
        assert config.finished_epoch == MAX_EPOCH and counter.steps == 0
        final = tfloop.load_chkpt_vars(prefix)["w"]
    else:
        _, weights, counter = train(logdir, max_epoch=MAX_EPOCH)
        assert counter.steps == TOTAL_STEPS
        final = weights.final
    check_log_dir(logdir)
    assert checkpoint_step(find_resume_checkpoint(logdir)) == TOTAL_STEPS
    assert final.tobytes() == reference["final"].tobytes()
    assert read_stats(logdir) == reference["stats"]
