"""The soak run: many kill -9s of real training processes, two runs on one log directory, and a
long run whose memory, open files and threads must stay flat. Marked ``slow`` and ``soak``
(``pytest -m soak`` runs only these); figures in docs/resume.md.
"""
import json
import multiprocessing
import os
import random
import resource
import signal
import threading
import time

import pytest
import resume_support
from resume_support import STEPS_PER_EPOCH, read_stats, train
from support import LinearModel, make_regression_data, scaled_timeout

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.resume.session_init import find_resume_checkpoint
from tfloop.resume.state import RESUME_SUFFIX, read_resume_state
from tfloop.tfutils.varmanip import checkpoint_step, is_complete_checkpoint
from tfloop.utils import logger
from tfloop.utils.dirlock import LogDirInUseError

pytestmark = [pytest.mark.slow, pytest.mark.soak]

KILLS = 20
MAX_EPOCH = 100
TOTAL_STEPS = MAX_EPOCH * STEPS_PER_EPOCH


@pytest.fixture(scope="module")
def processes():
    """Training processes forked from one server that imported TensorFlow once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tensorflow", "tfloop", "resume_support"])
    return ctx


def _start(processes, logdir, outdir, spec, max_epoch=MAX_EPOCH):
    os.makedirs(outdir)
    process = processes.Process(target=resume_support.worker, args=(
        ["worker", logdir, outdir, spec, str(max_epoch)],))
    process.start()
    marker = os.path.join(outdir, "blocked")
    deadline = time.monotonic() + scaled_timeout(40)
    while not os.path.exists(marker):
        if not process.is_alive():
            return process, False
        assert time.monotonic() < deadline, f"{outdir} never started training"
        time.sleep(0.01)
    return process, True


def check_every_file(logdir):
    """After a kill: every file a reader would use is complete and consistent."""
    names = os.listdir(logdir)
    if "stats.json" in names:
        records = read_stats(logdir)
        assert [(r["epoch_num"], r["global_step"]) for r in records] == \
            [(e, e * STEPS_PER_EPOCH) for e in range(1, len(records) + 1)]
    if "checkpoint" in names:
        assert tfv1.train.get_checkpoint_state(logdir) is not None
    for name in names:
        if name.endswith(RESUME_SUFFIX) and not name.startswith("."):
            prefix = os.path.join(logdir, name[:-len(RESUME_SUFFIX)])
            state = read_resume_state(prefix)     # valid JSON, format, iterator file complete
            assert state["global_step"] == checkpoint_step(prefix)
            # The checkpoint itself may be gone (max_to_keep deleted it; the orphan is removed at
            # the next save); when its index is there, it is complete.
            if os.path.exists(prefix + ".index"):
                assert is_complete_checkpoint(prefix) == (True, "")
    prefix = find_resume_checkpoint(logdir)
    if prefix is not None:
        assert tfloop.load_chkpt_vars(prefix)["w"].shape == (3, 1)
    return prefix


def test_twenty_random_kill_9s_then_an_exact_finish(tmp_path, processes):
    reference_dir = str(tmp_path / "reference")
    _, reference, _ = train(reference_dir, max_epoch=MAX_EPOCH, save_every=1, max_to_keep=3)
    logdir = str(tmp_path / "log")
    rng = random.Random(15)
    kills, steps_at_kill = 0, []
    for i in range(KILLS * 3):
        process, started = _start(processes, logdir, str(tmp_path / f"run{i}"),
                                  "slow:0.01")
        if started and process.is_alive():
            time.sleep(rng.uniform(0.0, 0.4))   # anywhere: a step, a checkpoint write, a record
            process.kill()
        process.join()
        if process.exitcode == -signal.SIGKILL:
            kills += 1
            prefix = check_every_file(logdir)
            steps_at_kill.append(checkpoint_step(prefix) if prefix else 0)
        else:
            assert process.exitcode == 0
        if kills == KILLS or process.exitcode == 0:
            break
    assert kills == KILLS, f"the run finished after {kills} kills"
    assert steps_at_kill == sorted(steps_at_kill)      # never back to an older checkpoint
    if checkpoint_step(find_resume_checkpoint(logdir)) < TOTAL_STEPS:
        train(logdir, max_epoch=MAX_EPOCH, save_every=1, max_to_keep=3)
    check_every_file(logdir)
    final = tfloop.load_chkpt_vars(os.path.join(logdir, f"model-{TOTAL_STEPS}"))["w"]
    assert final.tobytes() == reference.final.tobytes()
    assert read_stats(logdir) == read_stats(reference_dir)


def _unrotated_files(logdir):
    """The log dir's files that its own run never removes: not its checkpoints and their resume
    states, which ``max_to_keep`` rotates while the run goes on."""
    return {n for n in os.listdir(logdir) if not n.startswith((".", "model-"))}


@pytest.mark.parametrize("action", ["delete", "backup", "keep"])
def test_a_second_run_never_touches_a_live_runs_log_dir(tmp_path, processes, action):
    logdir = str(tmp_path / "log")
    process, started = _start(processes, logdir, str(tmp_path / "first"), "slow:0.05")
    try:
        assert started
        time.sleep(0.5)
        before = _unrotated_files(logdir)
        with pytest.raises(LogDirInUseError, match=f"in use by process {process.pid} "):
            train(logdir, max_epoch=MAX_EPOCH) if action == "keep" else \
                logger.set_logger_dir(logdir, action=action)
        assert sorted(os.listdir(str(tmp_path))) == ["first", "log"]
        assert before <= _unrotated_files(logdir)
        assert any(n.startswith("model-") and n.endswith(".index") for n in os.listdir(logdir))
    finally:
        process.kill()
        process.join()
    # The owner died: its lock is free, and the second run resumes where it stopped (however
    # far the first got before it was killed: max_epoch is past any point it can have reached).
    config, _, _ = train(logdir, max_epoch=MAX_EPOCH // 4)
    assert config.resume_from is not None or checkpoint_step(find_resume_checkpoint(logdir)) == 6


class _Usage(tfloop.Callback):
    """Memory (RSS), open file descriptors and threads at the end of every epoch, once the
    epoch's checkpoint is written (its background write holds a file and a thread meanwhile)."""

    def __init__(self, saver):
        self.saver = saver
        self.samples = []

    def _trigger_epoch(self):
        self.saver.checkpoint_at(self.global_step)
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * resource.getpagesize()
        self.samples.append((self.epoch_num, rss, len(os.listdir("/proc/self/fd")),
                             threading.active_count()))


def test_twenty_thousand_steps_with_default_callbacks_stay_flat(tmp_path):
    logger.set_logger_dir(str(tmp_path / "log"), action="keep")
    x, y = make_regression_data(64)
    saver = tfloop.ModelSaver(max_to_keep=2)
    usage = _Usage(saver)
    config = tfloop.TrainConfig(
        model=LinearModel(), data=lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4),
        callbacks=[saver, usage], steps_per_epoch=1000, max_epoch=20)
    start = time.perf_counter()
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    elapsed = time.perf_counter() - start
    assert trainer.global_step == 20000
    warm = usage.samples[4]       # after 5 epochs: caches, first files and threads exist
    last = usage.samples[-1]
    growth_mb = (max(s[1] for s in usage.samples[4:]) - warm[1]) / 2 ** 20
    print(f"soak: 20000 steps in {elapsed:.1f} s; RSS {warm[1] / 2 ** 20:.1f} MB at epoch 5, "
          f"growth {growth_mb:.2f} MB after; "
          f"fds {warm[2]} -> {last[2]}; threads {warm[3]} -> {last[3]}")
    assert growth_mb < 16
    assert {s[2] for s in usage.samples[4:]} == {warm[2]}
    assert {s[3] for s in usage.samples[4:]} == {warm[3]}
    with open(os.path.join(str(tmp_path / "log"), "stats.json")) as f:
        assert [r["global_step"] for r in json.load(f)] == list(range(1000, 20001, 1000))
