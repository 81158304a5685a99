"""InjectShell's tools (get, set, stats, stop), used from a shell opened in a real training."""
import os
import sys
import types

import numpy as np
import pytest
from support import LRModel, LRRecorder, train_linear

import tfloop
import tfloop.callbacks.debug as debug_module
from tfloop.callbacks.shell_tools import CHEAT_SHEET


@pytest.fixture
def shell(monkeypatch, logdir):
    """``run(actions, **train_kwargs)``: train LRModel (3 steps an epoch) with an InjectShell
    whose IPython shell opens after epoch 1 and calls each action with the shell's namespace;
    returns ``(trainer, lrs per step, headers, what the actions returned)``."""
    monkeypatch.setattr(debug_module, "stdin_is_terminal", lambda: True)
    module, seen = types.ModuleType("IPython"), {"headers": [], "results": []}

    def embed(header=""):
        scope = sys._getframe(1).f_locals
        seen["headers"].append(header)
        seen["results"] += [action(scope) for action in seen.pop("actions", [])]

    module.embed = embed
    monkeypatch.setitem(sys.modules, "IPython", module)

    def run(actions, callbacks=(), max_epoch=2):
        seen["actions"] = list(actions)
        open(os.path.join(logdir, "INJECT_SHELL.tmp"), "w").close()
        recorder = LRRecorder()
        trainer = train_linear([tfloop.InjectShell(), recorder, *callbacks], model=LRModel(),
                               max_epoch=max_epoch, monitors=[tfloop.ScalarPrinter()])
        return trainer, recorder.lrs, seen["headers"], seen["results"]
    return run


def test_the_cheat_sheet_has_four_lines_and_opens_the_shell(shell, log_lines):
    _, _, headers, _ = shell([])
    assert any(line.endswith("at global step 3: opening an IPython shell; exit it to resume "
                             "training.") for line in log_lines)
    assert len(CHEAT_SHEET.splitlines()) == 4
    assert headers == [f"tfloop InjectShell at global step 3; exit to resume.\n{CHEAT_SHEET}"]


def test_get_returns_values_of_variables_and_tensors_never_handles(shell):
    trainer, _, _, (w, w0, lr, step) = shell([
        lambda ns: ns["get"]("w"), lambda ns: ns["get"]("w:0"),
        lambda ns: ns["get"]("learning_rate"), lambda ns: ns["get"]("global_step")])
    assert isinstance(w, np.ndarray) and w.shape == (3, 1) and w.dtype == np.float32
    assert w.tobytes() == w0.tobytes() and np.abs(w).sum() > 0     # trained for 3 steps
    assert lr == pytest.approx(0.1) and step == 3


def test_set_a_variable_and_the_learning_rate_takes_effect_at_the_next_step(shell):
    trainer, lrs, _, _ = shell([lambda ns: ns["set"]("learning_rate", 0.5),
                                lambda ns: ns["set"]("w", [[1.0], [2.0], [3.0]]),
                                lambda ns: ns["get"]("w")])
    assert lrs == pytest.approx([0.1] * 3 + [0.5] * 3)
    assert trainer.global_step == 6


def test_set_a_scheduled_hyper_parameter_holds_until_the_schedule_moves(shell):
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (2, 0.01)])
    _, lrs, _, _ = shell([lambda ns: ns["set"]("learning_rate", 0.5)], callbacks=[setter],
                         max_epoch=3)
    assert lrs == pytest.approx([0.1] * 3 + [0.5] * 3 + [0.01] * 3)


class PutLoss(tfloop.Callback):
    def _after_epoch(self):
        self.trainer.monitors.put_scalar("loss", 0.25 * self.epoch_num)


def test_stats_and_stop(shell):
    trainer, _, _, (stats, _) = shell([lambda ns: ns["stats"](), lambda ns: ns["stop"]()],
                                      callbacks=[PutLoss()], max_epoch=3)
    assert stats == {"loss": 0.25}
    assert trainer.global_step == 3


@pytest.mark.parametrize("action, error, message", [
    (lambda ns: ns["get"]("pred"), ValueError,
     r"get\('pred'\): pred:0 is computed from the training input \(the Placeholder op 'x'\).*"
     r"callbacks=\[TensorPrinter\(\['pred:0'\]\)\]"),
    (lambda ns: ns["get"]("learning_rat"), tfloop.UnknownNameError,
     r"No variable or tensor named 'learning_rat' .* Close matches: learning_rate"),
    (lambda ns: ns["set"]("w", [1.0, 2.0]), ValueError,
     r"set\('w', \[1.0, 2.0\]\): w needs a float32 of shape \[3, 1\]"),
    (lambda ns: ns["set"]("global_step", 0), ValueError, "the global step .* cannot be set"),
    (lambda ns: ns["set"]("nope", 1), tfloop.UnknownNameError, "No variable named 'nope'"),
])
def test_mistakes_get_a_clear_error_and_training_goes_on(shell, action, error, message):
    def catch(ns):
        with pytest.raises(error, match=message):
            action(ns)
        return True
    trainer, _, _, results = shell([catch])
    assert results == [True] and trainer.global_step == 6
