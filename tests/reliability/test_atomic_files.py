"""Files that are whole or absent (issue 23 export, issue 26 item 8): a SavedModel export killed
mid-write leaves no version directory, a bad export target fails before the graph is built, and
export_compact's .pb and MinSaver's JSON never show a partial file."""
import errno
import json
import os
import signal
import textwrap

import numpy as np
import pytest
from forked_python import start_python, wait_for_line
from support import LinearModel, scaled_timeout, train_linear

import tfloop
from tfloop.callbacks import best_saver
from tfloop.tfutils import export as export_module


def exporter():
    return tfloop.ModelExporter(tfloop.PredictConfig(
        model=LinearModel(), session_init={"w": np.ones([3, 1], np.float32)}, input_names=["x"],
        output_names=["pred"]))


def is_saved_model(directory):
    """A whole SavedModel: its graph, its variables' index, and no hidden (partial) entry."""
    names = os.listdir(directory)
    return {"saved_model.pb", "variables"} <= set(names) and \
        not any(name.startswith(".") for name in names) and \
        os.path.exists(os.path.join(directory, "variables", "variables.index"))


class ScriptedStat(tfloop.Callback):
    """Puts ``values[i]`` as ``val`` at the i-th epoch's trigger."""

    def __init__(self, values):
        self.values = list(values)

    def _trigger(self):
        self.trainer.monitors.put_scalar("val", self.values.pop(0))


# Exports a SavedModel, but stops for good once its variables are written: the parent kills it.
KILLED_EXPORT = textwrap.dedent(r"""
    import sys, time
    import numpy as np
    import tfloop
    from tfloop.compat import tfv1
    from support import LinearModel

    def save_and_hang(self, *args, **kwargs):
        print("variables written", flush=True)
        time.sleep(600)

    tfv1.saved_model.Builder.save = save_and_hang
    config = tfloop.PredictConfig(model=LinearModel(), session_init={"w": np.ones([3, 1])},
                                  input_names=["x"], output_names=["pred"])
    tfloop.ModelExporter(config).export_serving(sys.argv[1])
""")


@pytest.mark.slow
def test_a_killed_export_leaves_no_version_directory_and_a_rerun_succeeds(tmp_path):
    """The export runs in a process forked from one that imported TensorFlow (forked_python),
    killed with SIGKILL once its variables are written."""
    target = tmp_path / "serving" / "1"
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_path, err_path = str(tmp_path / "stdout"), str(tmp_path / "stderr")
    proc = start_python(["-c", f"import sys; sys.path.insert(0, {tests_dir!r})\n" + KILLED_EXPORT,
                         str(target)], tmp_path, dict(os.environ), out_path, err_path)
    try:
        wait_for_line(proc, out_path, err_path, "variables written", scaled_timeout(60))
    finally:
        proc.kill()
        proc.join(scaled_timeout(30))
    assert proc.exitcode == -signal.SIGKILL
    assert not target.exists()      # TF Serving sees no version; only a hidden partial remains
    assert [p.name.startswith(".1.partial-") for p in (tmp_path / "serving").iterdir()] == [True]
    exporter().export_serving(str(target))
    assert os.listdir(tmp_path / "serving") == ["1"]     # the partial of the killed export gone
    assert is_saved_model(target)


@pytest.mark.slow
def test_export_serving_into_an_empty_directory_and_no_partial_left(tmp_path):
    (tmp_path / "1").mkdir()
    exporter().export_serving(str(tmp_path / "1"))
    assert sorted(os.listdir(tmp_path)) == ["1"]
    assert is_saved_model(tmp_path / "1")


@pytest.mark.parametrize("method", ["export_serving", "export_compact"])
def test_an_unwritable_target_fails_before_the_graph_is_built(tmp_path, monkeypatch, method):
    (tmp_path / "file").write_text("not a directory")
    built = []
    monkeypatch.setattr(export_module.ModelExporter, "_build", lambda self: built.append(1))
    target = tmp_path / "file" / ("1" if method == "export_serving" else "model.pb")
    with pytest.raises(NotADirectoryError, match=rf"{method}: cannot write in {tmp_path}/file "):
        getattr(exporter(), method)(str(target))
    assert built == []


def test_a_failed_compact_export_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "model.pb"
    exporter().export_compact(str(path))
    before = path.read_bytes()

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="(?i)no space left"):
        exporter().export_compact(str(path))
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.pb"]


def test_a_failed_min_saver_json_write_leaves_no_temporary_file(logdir, monkeypatch):
    real_dump = json.dump
    calls = []

    def dump(record, f, **kwargs):
        calls.append(record)
        if len(calls) == 2:
            f.write("{")
            raise OSError(errno.ENOSPC, "No space left on device")
        real_dump(record, f, **kwargs)
    monkeypatch.setattr(best_saver.json, "dump", dump)
    train_linear([tfloop.ModelSaver(), ScriptedStat([0.5, 0.2]), tfloop.MinSaver("val")],
                 max_epoch=2)
    assert len(calls) == 2
    assert sorted(n for n in os.listdir(logdir) if "min-val.json" in n) == ["min-val.json"]
    with open(os.path.join(logdir, "min-val.json")) as f:
        assert json.load(f)["checkpoints"][0]["value"] == 0.5
