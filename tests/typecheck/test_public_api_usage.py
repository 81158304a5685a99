"""The code the type check reads (public_api_usage.py) trains, resumes, predicts and exports."""
import importlib.util
import os

import numpy as np
import pytest

_SPEC = importlib.util.spec_from_file_location(
    "public_api_usage", os.path.join(os.path.dirname(__file__), "public_api_usage.py"))
usage = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(usage)

pytestmark = pytest.mark.slow


def test_the_type_checked_usage_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.RandomState(0)
    x = rng.rand(16, 8).astype("float32")
    y = x[:, :3].argmax(1).astype("int32")

    record = usage.train(x, y)
    assert [name for name, _ in record.seen].count("cost") == 2   # one per epoch
    assert os.path.isfile("train_log/typing/min-cost.index")
    record_cost, run_callbacks = usage.train_with_trainer(x, y)
    assert [step for step, _ in record_cost.costs] == list(range(1, 9))
    assert all(np.isfinite(cost) for _, cost in record_cost.costs)
    assert record_cost.epochs == [1, 2]
    assert run_callbacks == ["MaintainStepCounter", "RecordCost"]
    assert usage.train_one_pass_per_epoch(x, y) == ([None, 4], 4)
    prob, w = usage.predict_after_training(x, y)
    logits = x[:4] @ w
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(prob, expected, rtol=1e-5)
    usage.train_on_dataflow(x, y)
    assert usage.resume(x, y) == 3            # the checkpoint of epoch 2 is where it continues
    prob = usage.predict_and_export(x)
    assert prob.shape == (4, 3)
    np.testing.assert_allclose(prob.sum(1), 1.0, rtol=1e-5)
    assert os.path.isfile("export/model.pb")
    assert os.path.isfile("export/typing/1/saved_model.pb")
