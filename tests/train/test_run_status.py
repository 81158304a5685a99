"""How a training's end becomes the state written into status.json: the pure decision."""
import pytest

from tfloop.train.run_status import training_outcome


def _clean(exc):
    exc._tfloop_clean_stop = True
    return exc


@pytest.mark.parametrize("exc, stop_reason, expected", [
    (None, None, ("finished", None)),
    (None, "EarlyStopping: no improvement", ("stopped", "EarlyStopping: no improvement")),
    (KeyboardInterrupt(), None, ("stopped", "Ctrl-C (SIGINT) at global step 7")),
    (SystemExit(143), "a callback requested a stop", ("stopped", "SIGTERM at global step 7")),
    (SystemExit(1), None, ("failed", "SystemExit: 1")),
    (SystemExit(200), None, ("failed", "SystemExit: 200")),
    (ValueError("the loss is NaN"), None, ("failed", "ValueError: the loss is NaN")),
    # sys.exit(), sys.exit(0): exit status 0 is a clean stop (how Ray Tune ends a trial).
    (SystemExit(0), None, ("stopped", "SystemExit(0) at global step 7")),
    (SystemExit(), None, ("stopped", "SystemExit(None) at global step 7")),
    (SystemExit(False), None, ("stopped", "SystemExit(False) at global step 7")),
    (SystemExit(0), "SystemExit(0) at global step 5, a clean exit (status 0)",
     ("stopped", "SystemExit(0) at global step 5, a clean exit (status 0)")),
    (SystemExit("bye"), None, ("failed", "SystemExit: bye")),
    # Raised again after a clean end, for the caller (Optuna's TrialPruned, Ray Tune's stop).
    (_clean(SystemExit(0)), None, ("finished", None)),
    (_clean(SystemExit(0)), "Ray Tune stopped trial t after epoch 1",
     ("stopped", "Ray Tune stopped trial t after epoch 1")),
])
def test_training_outcome(exc, stop_reason, expected):
    assert training_outcome(exc, stop_reason, 7) == expected
