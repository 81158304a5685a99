"""``tfloop export``: a log directory's best or latest checkpoint, from the model's import path."""
import json
import os
import sys

import numpy as np
import pytest
from support import make_regression_data

import tfloop
from tfloop.cli import main
from tfloop.cli.export import import_model_module, load_model
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


@pytest.mark.slow
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


def test_compact_export_with_the_models_inputs_some_unused(run_dir, tmp_path):
    # The model's inputs are x and y; pred does not read y.
    assert main(["export", run_dir, "--output", str(tmp_path / "m.pb"), "--format", "compact",
                 "--model", "support:LinearModel", "--output-names", "pred"]) == 0
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString((tmp_path / "m.pb").read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    x, y = make_regression_data(4, seed=2)
    with tf.compat.v1.Session(graph=graph) as sess:
        pred = sess.run("pred:0", {"x:0": x, "y:0": y})
    np.testing.assert_allclose(pred, expected(run_dir, "model-3", x), rtol=1e-6)


@pytest.mark.parametrize("extra, match", [
    (["--model", "support:Nope"], "support has no 'Nope'"),
    (["--model", "no_such_module:Model"], "cannot import no_such_module"),
    (["--model", "support:LinearModel", "--stat", "acc"], "No best checkpoint for the stat 'acc'"),
    (["--model", "support:LinearModel", "--model-args", "[1]"], "must be a JSON object"),
    (["--model", "support:LinearModel", "--output-names", "prd"], "no tensor named 'prd'"),
    (["--model", "support:LinearModel", "--input-names", "y"],
     "tfloop export: export_serving: the output 'pred' depends on the input 'x', which is not "
     "among input_names"),
    (["--model", "support:LinearModel", "--format", "compact", "--model-version", "1"],
     "--model-version applies to --format serving"),
    (["--model", "support:LinearModel", "--model-version", "v2"],
     "--model-version must be a version number"),
    (["--model", "support:LinearModel", "--select-tf-ops"],
     "--select-tf-ops applies to --format tflite only"),
])
def test_bad_arguments_exit_with_the_reason(run_dir, tmp_path, extra, match):
    args = ["export", run_dir, "--output", str(tmp_path / "out"), "--output-names", "pred"]
    with pytest.raises(SystemExit, match=match):
        main(args + extra)


def signature_inputs(directory):
    loaded = tf.saved_model.load(str(directory))
    return sorted(loaded.signatures["serving_default"].structured_input_signature[1])


@pytest.mark.slow
def test_versions_of_what_serving_sends(run_dir, tmp_path, capsys):
    # The model's inputs are x and y; pred does not read y: the signature takes x alone.
    args = ["export", run_dir, "--model", "support:LinearModel", "--output-names", "pred",
            "--output", str(tmp_path / "lin"), "--model-version", "next"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"as a SavedModel to {tmp_path / 'lin' / '1'}." in out
    assert ("Left out of the signature: the input(s) y, which no output depends on "
            "(--input-names keeps them).") in out
    assert signature_inputs(tmp_path / "lin" / "1") == ["x"]
    x, _ = make_regression_data(4, seed=2)
    loaded = tf.saved_model.load(str(tmp_path / "lin" / "1"))
    np.testing.assert_allclose(loaded.serve(x)["pred"].numpy(), expected(run_dir, "model-3", x),
                               rtol=1e-6)
    assert main(args) == 0
    capsys.readouterr()
    assert main(args[:-1] + ["5", "--input-names", "x", "y"]) == 0
    assert "Left out" not in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "lin")) == ["1", "2", "5"]
    assert signature_inputs(tmp_path / "lin" / "5") == ["x", "y"]


@pytest.mark.slow
def test_a_tflite_model(run_dir, tmp_path, capsys):
    assert main(["export", run_dir, "--model", "support:LinearModel", "--output-names", "pred",
                 "--format", "tflite", "--output", str(tmp_path / "lin.tflite")]) == 0
    assert f"as a TFLite model to {tmp_path / 'lin.tflite'}." in capsys.readouterr().out
    x, _ = make_regression_data(4, seed=2)
    runner = tf.lite.Interpreter(model_path=str(tmp_path / "lin.tflite")).get_signature_runner(
        "serving_default")
    np.testing.assert_allclose(runner(x=x)["pred"], expected(run_dir, "model-3", x), rtol=1e-5)


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


def test_an_unknown_output_name_gets_the_graphs_outputs(run_dir, tmp_path):
    args = ["export", run_dir, "--output", str(tmp_path / "out"), "--model",
            "support:PredictLinearModel", "--output-names", "probabilities"]
    with pytest.raises(SystemExit, match=r"no tensor named 'probabilities' in the predict graph. "
                                         r"No close match; the model's results in the graph: "
                                         r"pred, err\.$"):
        main(args)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def clean_imports(monkeypatch):
    """sys.path and the imported modules as they were before the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.mark.parametrize("model", ["examples.mnist_convnet:Model",
                                   "examples/mnist_convnet.py:Model"])
def test_the_model_module_is_found_as_python_dash_m_finds_it(model, monkeypatch, clean_imports):
    monkeypatch.chdir(ROOT)     # the example imports its neighbour: from digits import ...
    module = import_model_module(model.rpartition(":")[0])
    assert module.__file__ == os.path.join(ROOT, "examples", "mnist_convnet.py")
    assert isinstance(load_model(model, {}), tfloop.ModelDesc)


def test_a_module_that_imports_its_neighbours(run_dir, tmp_path, monkeypatch, clean_imports):
    package = tmp_path / "project" / "models"
    package.mkdir(parents=True)
    (package / "settings.py").write_text("LR = 0.1\n")
    (package / "linear.py").write_text(
        "from settings import LR\nfrom support import LinearModel\n\n\n"
        "def make():\n    return LinearModel(LR)\n")
    monkeypatch.chdir(tmp_path / "project")
    assert main(["export", run_dir, "--output", str(tmp_path / "out"), "--model",
                 "models.linear:make", "--output-names", "pred", "--input-names", "x"]) == 0
    x, _ = make_regression_data(4, seed=2)
    np.testing.assert_allclose(exported_pred(str(tmp_path / "out"), x),
                               expected(run_dir, "model-3", x), rtol=1e-6)
    with pytest.raises(SystemExit, match="cannot import models.nope: no such module from"):
        main(["export", run_dir, "--output", str(tmp_path / "o2"), "--model", "models.nope:M",
              "--output-names", "pred"])


ARGPARSE_AT_IMPORT = """
import argparse
from support import LinearModel

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--data"{required})
args = parser.parse_args()


def make():
    return LinearModel(args.lr)
"""


def test_a_module_that_parses_the_command_line_at_import(run_dir, tmp_path, monkeypatch,
                                                          clean_imports):
    (tmp_path / "argv_model.py").write_text(ARGPARSE_AT_IMPORT.format(required=""))
    (tmp_path / "argv_required.py").write_text(ARGPARSE_AT_IMPORT.format(required=", required=1"))
    monkeypatch.chdir(tmp_path)
    args = ["export", run_dir, "--output", str(tmp_path / "out"), "--output-names", "pred",
            "--input-names", "x"]
    monkeypatch.setattr(sys, "argv", ["tfloop", *args])
    assert main(args + ["--model", "argv_model:make"]) == 0
    assert sys.argv == ["tfloop", *args]
    x, _ = make_regression_data(4, seed=2)
    np.testing.assert_allclose(exported_pred(str(tmp_path / "out"), x),
                               expected(run_dir, "model-3", x), rtol=1e-6)
    with pytest.raises(SystemExit, match=r"--model 'argv_required:make': importing "
                                         r"argv_required exited \(status 2\): it runs code at "
                                         r"import that exits, .*'if __name__ == \"__main__\":'"):
        main(args + ["--model", "argv_required:make", "--output", str(tmp_path / "o2")])
