"""A run whose log directory is a URL: every file through TensorFlow's file layer, nothing on the
local disk. ``ram://`` is TensorFlow's own in-memory filesystem (a real non-local one); ``gs://``
is built into TensorFlow but unreachable here (no network), so its error must come from TensorFlow
naming the bucket; a scheme TensorFlow does not know is refused up front."""
import json
import os
import uuid

import numpy as np
import pytest
from resume_support import STEPS_PER_EPOCH, StopAt, WeightLog, make_dataset
from support import LinearModel, train_linear

import tfloop
from tfloop.cli import main as cli_main
from tfloop.compat import tf
from tfloop.resume.session_init import find_resume_checkpoint
from tfloop.utils import files, logger
from tfloop.utils.logdir_format import FINISHED, read_run_status

MAX_EPOCH = 3


@pytest.fixture
def ram_root():
    root = f"ram://tfloop-test-{uuid.uuid4().hex[:12]}"
    yield root
    if tf.io.gfile.exists(root):
        tf.io.gfile.rmtree(root)


@pytest.fixture
def empty_cwd(tmp_path, monkeypatch):
    """The working directory, which must stay empty: nothing of a URL run lands locally."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield cwd
    assert sorted(os.listdir(cwd)) == []


def _train(logdir, stop_at=None, min_saver=True):
    """A resumable run of LinearModel in ``logdir`` (set with logger.set_logger_dir): checkpoints
    every 2 steps, the best ``w_sum`` kept, every file monitor; returns the final ``w``."""
    logger.set_logger_dir(logdir, action="keep")
    weights = WeightLog()
    callbacks = [tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=2), weights]
    if min_saver:
        callbacks.append(tfloop.MinSaver("w_sum"))
    if stop_at:
        callbacks.append(StopAt(stop_at))
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.DatasetInput(make_dataset), callbacks=callbacks,
        monitors=[tfloop.JSONWriter(), tfloop.CSVWriter(), tfloop.TFEventWriter()],
        extra_callbacks=[], max_epoch=MAX_EPOCH)
    try:
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
    return weights.final


def _cli(capsys, *argv):
    code = cli_main(list(argv))
    return code, capsys.readouterr().out


@pytest.mark.slow
def test_a_run_on_ram_writes_every_file_there_and_resumes_exactly(ram_root, empty_cwd, capsys):
    whole = _train(f"{ram_root}/whole")
    logdir = f"{ram_root}/run"
    assert _train(logdir, stop_at=4) is not None
    assert find_resume_checkpoint(logdir) == f"{logdir}/model-4"
    resumed = _train(logdir)
    np.testing.assert_array_equal(resumed, whole)

    names = set(files.listdir(logdir))
    last = MAX_EPOCH * STEPS_PER_EPOCH
    for name in ["log.log", "status.json", "stats.json", "stats.csv", "checkpoint",
                 "min-w_sum.index", "min-w_sum.json", f"model-{last}.index",
                 f"model-{last}.resume.json", f"model-{last}.iterator", "graph-2.meta"]:
        assert name in names, (name, sorted(names))
    assert len([n for n in names if n.startswith("events.out.tfevents.")]) == 2
    assert not [n for n in names if n.startswith(".")]     # no temporary file left
    assert read_run_status(logdir).state == FINISHED
    records = json.loads(files.read_text(f"{logdir}/stats.json"))
    assert [r["global_step"] for r in records] == [3, 6, 9]
    assert files.read_text(f"{logdir}/stats.csv").splitlines()[0] == "epoch_num,global_step,w_sum"
    log = files.read_text(f"{logdir}/log.log")
    assert "Training stopped: test stop at 4" in log and "Resuming from" in log
    assert "Training has finished." in log
    best = json.loads(files.read_text(f"{logdir}/min-w_sum.json"))
    assert best["checkpoints"][0]["value"] == min(r["w_sum"] for r in records)

    code, out = _cli(capsys, "stats", logdir)
    assert code in (0, None) and "w_sum" in out and "finished" in out
    code, out = _cli(capsys, "info", logdir)
    assert f"log directory  {logdir}" in out and "status         finished" in out
    code, out = _cli(capsys, "ckpts", logdir)
    assert f"model-{last}" in out and "min-w_sum" in out and f"Resume point: model-{last}" in out
    code, out = _cli(capsys, "watch", logdir, "--timeout", "5")
    assert code == 0 and out.rstrip().endswith("The run finished.")


def test_a_half_written_newest_resume_state_on_a_url_falls_back_to_the_one_before(
        ram_root, empty_cwd, log_warnings):
    logdir = f"{ram_root}/run"
    _train(logdir, stop_at=4, min_saver=False)
    with files.open_file(f"{logdir}/model-4.resume.json", "w") as f:
        f.write('{"format": 1, "glob')      # a filesystem without atomic rename, killed mid-write
    assert find_resume_checkpoint(logdir) == f"{logdir}/model-2"
    assert any("model-4.resume.json cannot be read" in m and
               "resuming from the earlier checkpoint model-2" in m for m in log_warnings)


def test_a_gs_path_reaches_tensorflow_untouched(empty_cwd):
    # No network here: TensorFlow's GCS client fails at once, naming the bucket.
    url = "gs://tfloop-test-no-such-bucket/run"
    with pytest.raises(OSError, match="tfloop-test-no-such-bucket") as raised:
        train_linear([tfloop.ModelSaver(checkpoint_dir=url)])
    assert url in str(raised.value)
    with pytest.raises(PermissionError, match=f"Cannot create log directory {url}"):
        logger.set_logger_dir(url, action="keep")
    assert logger.get_logger_dir() is None


@pytest.mark.parametrize("url,plugin", [("s3://bucket/run", "tensorflow-io"),
                                        ("foo://bucket/run", "file system plugin")])
def test_a_scheme_tensorflow_does_not_know_is_refused(url, plugin, empty_cwd, capsys):
    scheme = url.split(":")[0]
    with pytest.raises(files.UnknownSchemeError, match=f"scheme '{scheme}'.*{plugin}"):
        logger.set_logger_dir(url, action="keep")
    with pytest.raises(files.UnknownSchemeError, match=f"scheme '{scheme}'"):
        tfloop.TrainConfig(model=LinearModel(), data=tfloop.DatasetInput(make_dataset),
                           logdir=url)
    with pytest.raises(files.UnknownSchemeError, match=f"scheme '{scheme}'"):
        train_linear([tfloop.ModelSaver(checkpoint_dir=url)])
    for command in ("stats", "info", "ckpts"):
        with pytest.raises(SystemExit, match=f"scheme '{scheme}'.*{plugin}"):
            cli_main([command, url])
