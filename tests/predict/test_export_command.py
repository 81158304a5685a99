"""``tfloop export``: a log directory's best or latest checkpoint, from the model's import path."""
import json
import os

import numpy as np
import pytest
from support import make_regression_data

import tfloop
from tfloop.cli import main
from tfloop.compat import tf


@pytest.fixture
def run_dir(logdir):
    """A log dir with checkpoints at steps 3 and 6, and a best checkpoint kept at step 3."""
    from support import train_linear
    train_linear(callbacks=[tfloop.ModelSaver()], max_epoch=2)
    best = tfloop.get_checkpoint_path(os.path.join(logdir, "model-3"))
    for suffix in (".index", ".data-00000-of-00001"):
        with open(best + suffix, "rb") as src, open(os.path.join(logdir, "min-cost" + suffix),
                                                    "wb") as dst:
            dst.write(src.read())
    with open(os.path.join(logdir, "min-cost.json"), "w") as f:
        json.dump({"stat": "cost", "mode": "min", "checkpoints": [
            {"rank": 1, "checkpoint": "min-cost", "global_step": 3, "value": 0.5}]}, f)
    return logdir


def exported_pred(directory, x):
    fn = tf.saved_model.load(directory).signatures["serving_default"]
    return fn(x=tf.constant(x))["pred"].numpy()


def expected(logdir, checkpoint, x):
    return (x @ tfloop.load_chkpt_vars(os.path.join(logdir, checkpoint))["w"])[:, 0]


def test_exports_the_best_checkpoint_by_default_and_the_latest_on_request(run_dir, tmp_path,
                                                                         capsys):
    x, _ = make_regression_data(4, seed=2)
    common = ["--model", "support:LinearModel", "--model-args", '{"lr": 0.1}',
              "--output-names", "pred", "--input-names", "x"]
    assert main(["export", run_dir, "--output", str(tmp_path / "best")] + common) == 0
    assert "the best checkpoint by cost (min: 0.5 at global step 3)" in capsys.readouterr().out
    np.testing.assert_allclose(exported_pred(str(tmp_path / "best"), x),
                               expected(run_dir, "model-3", x), rtol=1e-6)
    assert main(["export", run_dir, "--output", str(tmp_path / "latest"),
                 "--checkpoint", "latest"] + common) == 0
    np.testing.assert_allclose(exported_pred(str(tmp_path / "latest"), x),
                               expected(run_dir, "model-6", x), rtol=1e-6)
    assert not np.allclose(expected(run_dir, "model-3", x), expected(run_dir, "model-6", x))
    main(["export", run_dir, "--output", str(tmp_path / "m.pb"), "--format", "compact"] + common)
    assert (tmp_path / "m.pb").stat().st_size > 0


@pytest.mark.parametrize("extra, match", [
    (["--model", "support:Nope"], "support has no 'Nope'"),
    (["--model", "no_such_module:Model"], "cannot import no_such_module"),
    (["--model", "support:LinearModel", "--stat", "acc"], "No best checkpoint for the stat 'acc'"),
    (["--model", "support:LinearModel", "--model-args", "[1]"], "must be a JSON object"),
    (["--model", "support:LinearModel", "--output-names", "prd"], "no tensor named 'prd'"),
])
def test_bad_arguments_exit_with_the_reason(run_dir, tmp_path, extra, match):
    args = ["export", run_dir, "--output", str(tmp_path / "out"), "--output-names", "pred"]
    with pytest.raises(SystemExit, match=match):
        main(args + extra)


def test_not_empty_output_and_no_best(tmp_path, logdir):
    from support import train_linear
    train_linear(callbacks=[tfloop.ModelSaver()], max_epoch=1)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "f").write_text("")
    args = ["export", logdir, "--model", "support:LinearModel", "--output-names", "pred"]
    with pytest.raises(SystemExit, match="busy exists and is not an empty directory"):
        main(args + ["--output", str(busy)])
    with pytest.raises(SystemExit, match="No best checkpoint in"):
        main(args + ["--output", str(tmp_path / "o"), "--checkpoint", "best"])
