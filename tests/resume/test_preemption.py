"""Faults: real signals and kill -9 on real training processes, NaN losses, failing callbacks, and
checkpoint directories that cannot be written. The log directory always resumes cleanly."""
import json
import logging
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import resume_support
from resume_support import read_stats, train
from support import LinearModel, RecordingCallback, batches, make_regression_data, scaled_timeout

import tfloop
from tfloop.resume.session_init import find_resume_checkpoint
from tfloop.resume.state import read_resume_state
from tfloop.tfutils.varmanip import checkpoint_step, is_complete_checkpoint
from tfloop.utils import logger

MAX_EPOCH = 6
TOTAL_STEPS = MAX_EPOCH * resume_support.STEPS_PER_EPOCH
WORKER = os.path.abspath(resume_support.__file__)
WAIT_S = scaled_timeout(40)     # for a training process to reach a point, or to exit


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run like the workers' (6 epochs of 3 steps)."""
    logdir = str(tmp_path_factory.mktemp("reference") / "log")
    _, weights, _ = train(logdir, max_epoch=MAX_EPOCH, save_every=1, max_to_keep=3)
    return {"final": weights.final, "stats": read_stats(logdir)}


@pytest.fixture(scope="module")
def processes():
    """Training processes forked from one server that imported TensorFlow once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tensorflow", "tfloop", "resume_support"])
    return ctx


def _wait_for(path, process, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        if not process.is_alive():
            return False
        time.sleep(0.02)
    raise AssertionError(f"{path} did not appear within {timeout} s")


def _saved_steps(outdir):
    with open(os.path.join(outdir, "output.txt")) as f:
        return [int(s) for s in re.findall(r"Model saved to .*/model-(\d+)\.", f.read())]


def _check_log_dir(logdir):
    """What must hold after any kill: stats.json is valid, the resume checkpoint is complete."""
    stats = os.path.join(logdir, "stats.json")
    if os.path.exists(stats):
        with open(stats) as f:
            records = json.load(f)
        assert [r["epoch_num"] for r in records] == list(range(1, len(records) + 1))
    prefix = find_resume_checkpoint(logdir)
    if prefix is not None:
        assert is_complete_checkpoint(prefix) == (True, "")
        assert read_resume_state(prefix)["global_step"] == checkpoint_step(prefix)
    return prefix


@pytest.mark.slow
def test_kill_9_anywhere_resumes_cleanly_and_exactly(tmp_path, processes, reference):
    logdir = str(tmp_path / "log")
    rng = random.Random(0)
    points = ["meta", "step:2", "state_file:4", "iterator:6", "resume_json:7", "stats:3",
              "epoch:4", "restore", "slow:0.1", "slow:0.1", "step:17"]
    kills = []
    for i, spec in enumerate(points):
        outdir = str(tmp_path / f"run{i}")
        os.makedirs(outdir)
        process = processes.Process(target=resume_support.worker, args=(
            ["worker", logdir, outdir, spec],))
        process.start()
        if _wait_for(os.path.join(outdir, "blocked"), process):
            if spec.startswith("slow"):
                time.sleep(rng.uniform(0.05, 0.25))
            process.kill()
            kills.append(spec)
        process.join()
        assert process.exitcode == (-signal.SIGKILL if kills[-1:] == [spec] else 0), spec
        prefix = _check_log_dir(logdir)
        saved = _saved_steps(outdir)
        if saved:
            # At most one checkpoint interval (one step here) is lost.
            assert prefix is not None and checkpoint_step(prefix) >= max(saved) - 1, (spec, prefix)
    assert len(kills) >= 10, kills
    if checkpoint_step(find_resume_checkpoint(logdir)) < TOTAL_STEPS:
        train(logdir, max_epoch=MAX_EPOCH, save_every=1, max_to_keep=3)
    final = tfloop.load_chkpt_vars(os.path.join(logdir, f"model-{TOTAL_STEPS}"))["w"]
    assert final.tobytes() == reference["final"].tobytes()
    assert read_stats(logdir) == reference["stats"]


@pytest.mark.slow
def test_sigterm_saves_at_the_step_runs_after_train_and_exits_143(tmp_path, reference):
    logdir, outdir = str(tmp_path / "log"), str(tmp_path / "out")
    os.makedirs(outdir)
    env = dict(os.environ, RESUME_TEST_SAVE_EVERY="100", TF_CPP_MIN_LOG_LEVEL="2")
    with open(os.path.join(outdir, "output.txt"), "w") as out:
        process = subprocess.Popen([sys.executable, WORKER, logdir, outdir, "signal:4"],
                                   stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(os.path.join(outdir, "blocked")):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT_S) == 143
    with open(os.path.join(outdir, "output.txt")) as f:
        output = f.read()
    assert "SIGTERM received at global step 4: finishing the current step" in output
    assert "Stopped on SIGTERM at global step 4." in output
    assert os.path.exists(os.path.join(outdir, "after_train"))
    checkpoints = sorted(n for n in os.listdir(logdir) if n.endswith(".index"))
    assert checkpoints == ["model-4.index"]
    assert _check_log_dir(logdir) == os.path.join(logdir, "model-4")
    state = read_resume_state(os.path.join(logdir, "model-4"))
    assert (state["epoch"], state["local_step"]) == (2, 1)
    assert read_stats(logdir) == reference["stats"][:1]
    _, weights, _ = train(logdir, max_epoch=MAX_EPOCH, save_every=100)
    assert weights.final.tobytes() == reference["final"].tobytes()
    assert read_stats(logdir) == reference["stats"]


@pytest.mark.slow
def test_sigint_stops_cleanly_with_keyboard_interrupt(tmp_path, processes):
    logdir, outdir = str(tmp_path / "log"), str(tmp_path / "out")
    os.makedirs(outdir)
    process = processes.Process(target=resume_support.worker,
                                args=(["worker", logdir, outdir, "signal:3"],))
    process.start()
    assert _wait_for(os.path.join(outdir, "blocked"), process)
    os.kill(process.pid, signal.SIGINT)
    process.join()
    with open(os.path.join(outdir, "output.txt")) as f:
        output = f.read()
    assert process.exitcode == 1 and output.rstrip().endswith("KeyboardInterrupt")
    assert "Stopped on SIGINT at global step 3." in output
    assert os.path.exists(os.path.join(outdir, "after_train"))
    assert _check_log_dir(logdir) == os.path.join(logdir, "model-3")


class _SignalSelf(tfloop.Callback):
    def __init__(self, step, signum=signal.SIGTERM, times=1):
        self.step, self.signum, self.times = step, signum, times

    def _trigger_step(self):
        if self.global_step == self.step:
            for _ in range(self.times):
                os.kill(os.getpid(), self.signum)


def test_sigterm_without_model_saver_saves_into_the_log_dir(tmp_path):
    logger.set_logger_dir(str(tmp_path / "log"), action="keep")
    x, y = make_regression_data(12)
    log = []
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), monitors=[],
        callbacks=[_SignalSelf(4), RecordingCallback("rec", log)], extra_callbacks=[], max_epoch=5)
    with pytest.raises(SystemExit) as info:
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    assert info.value.code == 143
    assert log[-1] == ("rec", "after_train", 2, 4, 0, None)
    prefix = str(tmp_path / "log" / "model-4")
    assert find_resume_checkpoint(str(tmp_path / "log")) == prefix
    state = read_resume_state(prefix)
    assert (state["epoch"], state["local_step"]) == (2, 1)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_second_signal_stops_at_once(tmp_path, caplog):
    log = []
    with caplog.at_level(logging.WARNING, logger="tfloop"), pytest.raises(SystemExit) as info:
        train(str(tmp_path / "log"), extra=[_SignalSelf(2, times=2), RecordingCallback("rec", log)])
    assert info.value.code == 143
    assert "SIGTERM received again: stopping at once." in caplog.text
    # The step's remaining trigger_step work is skipped, after_train still runs.
    hooks = [entry[1:4] for entry in log if entry[1] in ("trigger_step", "after_train")]
    assert hooks[-2:] == [("trigger_step", 1, 1), ("after_train", 1, 2)]


HANGING_AFTER_TRAIN = """
import os, signal, sys, time
sys.path.insert(0, {tests!r})
import tfloop
import tfloop.resume.preemption as preemption
from support import train_linear

preemption.SECOND_SIGTERM_GRACE = 0.5


class HangAfterTrain(tfloop.Callback):
    def __init__(self, name):
        self.name = name

    def _trigger_step(self):
        if self.global_step == 2 and self.name == "a":
            os.kill(os.getpid(), signal.SIGTERM)

    def _after_train(self):
        print("after_train of", self.name, flush=True)
        if self.name == "a":
            os.kill(os.getpid(), signal.SIGTERM)   # the second one: stops a at once
        time.sleep(3600)


train_linear([HangAfterTrain("a"), HangAfterTrain("b")], max_epoch=2)
"""


@pytest.mark.slow
def test_a_second_sigterm_ends_the_process_even_if_an_after_train_hangs(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(HANGING_AFTER_TRAIN.format(tests=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=scaled_timeout(60))
    assert done.returncode == 143, done.stdout[-2000:] + done.stderr[-2000:]
    assert "after_train of a" in done.stdout and "after_train of b" in done.stdout


def test_nan_loss_stops_naming_step_and_tensor_and_keeps_the_last_good_checkpoint(tmp_path):
    logdir = str(tmp_path / "log")
    logger.set_logger_dir(logdir, action="keep")
    x, y = make_regression_data(12)
    data = batches(x, y, 4) * 2
    data[4] = (data[4][0], np.full(4, np.nan, np.float32))
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(data), monitors=[tfloop.JSONWriter()],
        steps_per_epoch=3,
        callbacks=[tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=1),
                   tfloop.TerminateOnNaN()], extra_callbacks=[], max_epoch=3)
    with pytest.raises(tfloop.NaNLossError, match=r"Training stopped at global step 5 \(epoch 2\): "
                                                  r"the loss cost:0 is NaN\."):
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    prefix = find_resume_checkpoint(logdir)
    assert prefix == os.path.join(logdir, "model-4")
    assert not os.path.exists(os.path.join(logdir, "model-5.index"))
    values = tfloop.load_chkpt_vars(prefix)
    assert np.isfinite(values["w"]).all()
    assert read_stats(logdir) == [{"epoch_num": 1, "global_step": 3}]


@pytest.mark.parametrize("hook", ["_before_train", "_before_epoch", "_trigger_step",
                                  "_after_epoch", "_trigger_epoch", "_after_train"])
def test_exception_in_a_hook_names_it_and_everything_else_finishes(tmp_path, hook):
    class Broken(tfloop.Callback):
        def fail(self):
            if self.global_step >= 4 or hook in ("_before_train", "_after_train"):
                raise RuntimeError("broken")

    setattr(Broken, hook, Broken.fail)
    log = []
    with pytest.raises(RuntimeError, match="broken") as info:
        train(str(tmp_path / "log"), extra=[Broken(), RecordingCallback("rec", log)])
    assert "(raised in callback Broken.{})".format(hook.lstrip("_")) in info.value.__notes__
    assert log[-1][:2] == ("rec", "after_train")
    stats = read_stats(str(tmp_path / "log")) if os.path.exists(
        str(tmp_path / "log" / "stats.json")) else []
    finished = {"_before_train": 0, "_before_epoch": 2, "_trigger_step": 1, "_after_epoch": 1,
                "_trigger_epoch": 2, "_after_train": 4}[hook]
    assert [r["epoch_num"] for r in stats] == list(range(1, finished + 1))
    _check_log_dir(str(tmp_path / "log"))


class _BreakDir(tfloop.Callback):
    """From global step 2 on (once ``saver`` wrote that step), ``path`` is a file where a directory
    must be; put back at the end."""

    def __init__(self, path, saver):
        self.path, self.saver = path, saver

    def _trigger_step(self):
        if self.global_step == 2:
            assert self.saver.checkpoint_at(2) is not None
            os.rename(self.path, self.path + ".moved")
            open(self.path, "w").close()

    def _after_train(self):
        os.remove(self.path)
        os.rename(self.path + ".moved", self.path)


@pytest.mark.parametrize("background", [True, False], ids=["background", "sync"])
@pytest.mark.parametrize("on_error", ["log", "raise"])
def test_unwritable_checkpoint_dir_is_never_silent(tmp_path, caplog, on_error, background):
    ckpt = str(tmp_path / "ckpt")
    logger.set_logger_dir(str(tmp_path / "log"), action="keep")
    x, y = make_regression_data(12)
    log = []
    saver = tfloop.ModelSaver(checkpoint_dir=ckpt, on_error=on_error, background=background)
    config = tfloop.TrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=2,
        callbacks=[tfloop.PeriodicTrigger(saver, every_k_steps=1), tfloop.ResumeStateSaver(),
                   _BreakDir(ckpt, saver), RecordingCallback("rec", log)],
        monitors=[tfloop.JSONWriter()], extra_callbacks=[])
    with caplog.at_level(logging.ERROR, logger="tfloop"):
        if on_error == "raise":
            with pytest.raises(OSError, match=r"ModelSaver could not save checkpoint "
                                              r".*/ckpt/model-3 \(global step 3\): "):
                tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
        else:
            tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    # A failed background write raises at the next save (step 4), a failed sync save at once.
    stopped = ((2, 4) if background else (1, 3)) if on_error == "raise" else (2, 6)
    assert log[-1][:4] == ("rec", "after_train") + stopped
    errors = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"ResumeStateSaver could not write the resume state of {ckpt}/model-2"
                            ) for m in errors), errors
    if on_error == "log":
        assert any(m.startswith(f"ModelSaver could not save checkpoint {ckpt}/model-3 "
                                "(global step 3)") for m in errors), errors
    # model-2 has no resume state: a resumed run starts from model-1.
    assert find_resume_checkpoint(ckpt) == os.path.join(ckpt, "model-1")


def test_resume_state_that_cannot_be_written_is_logged(tmp_path, caplog):
    logdir = str(tmp_path / "log")
    os.makedirs(os.path.join(logdir, "model-2.resume.json"))
    with caplog.at_level(logging.ERROR, logger="tfloop"):
        _, _, counter = train(logdir, max_epoch=1)
    assert counter.steps == 3
    assert f"ResumeStateSaver could not write the resume state of {logdir}/model-2" \
        in caplog.text
    assert find_resume_checkpoint(logdir) == os.path.join(logdir, "model-3")
