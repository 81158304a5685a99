"""AutoResumeTrainConfig continues a run exactly: same weights bit for bit, same stats.json."""
import json
import logging
import os

import numpy as np
import pytest
from resume_support import (
    STEPS_PER_EPOCH,
    StopAt,
    WeightLog,
    make_dataset,
    read_stats,
    train,
    train_resumable,
)
from support import LinearModel, batches, make_regression_data

import tfloop
from tfloop.compat import tf
from tfloop.resume.session_init import find_resume_checkpoint
from tfloop.utils import logger


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run of 4 epochs (12 steps)."""
    logdir = str(tmp_path_factory.mktemp("reference") / "log")
    _, weights, counter = train(logdir)
    return {"final": weights.final, "after_step": dict(weights.after_step),
            "stats": read_stats(logdir), "steps": counter.steps}


@pytest.mark.slow
@pytest.mark.parametrize("stop_at", [3, 5])
def test_interrupted_and_resumed_run_is_bit_exact(tmp_path, reference, stop_at):
    logdir = str(tmp_path / "log")
    _, first, counter = train(logdir, extra=[StopAt(stop_at)])
    assert counter.steps == stop_at
    state = json.load(open(os.path.join(logdir, f"model-{stop_at}.resume.json")))
    epoch, local = divmod(stop_at - 1, STEPS_PER_EPOCH)
    assert (state["global_step"], state["epoch"], state["local_step"]) == \
        (stop_at, epoch + 1, local + 1)
    assert state["callbacks"] == {"StepCounter#0": {"steps": stop_at},
                                  "JSONWriter#0": {"records": epoch}}
    assert state["iterator"]["file"] == f"model-{stop_at}.iterator"

    config, second, counter = train(logdir)
    assert config.resume_from == os.path.join(logdir, f"model-{stop_at}")
    assert (config.starting_epoch, config.starting_local_step) == (epoch + 1, local + 1)
    assert counter.at_start == stop_at and counter.steps == reference["steps"] == 12
    # Every step saw exactly the weights of the uninterrupted run, and the result is identical.
    assert [s for s, _ in first.after_step] == list(range(1, stop_at + 1))
    assert [s for s, _ in second.after_step] == list(range(stop_at + 1, 13))
    assert dict(first.after_step + second.after_step) == reference["after_step"]
    assert second.final.tobytes() == reference["final"].tobytes()
    assert read_stats(logdir) == reference["stats"]


def test_resume_with_steps_saved_every_epoch_only(tmp_path, reference):
    logdir = str(tmp_path / "log")
    train(logdir, save_every=STEPS_PER_EPOCH, extra=[StopAt(7)])
    # The stop at step 7 saves model-7 at the end of training; remove it to resume from model-6.
    for name in os.listdir(logdir):
        if name.startswith("model-7."):
            os.remove(os.path.join(logdir, name))
    config, weights, _ = train(logdir, save_every=STEPS_PER_EPOCH)
    assert (config.starting_epoch, config.starting_local_step) == (3, 0)
    assert weights.final.tobytes() == reference["final"].tobytes()
    assert read_stats(logdir) == reference["stats"]


def test_first_run_in_an_empty_log_dir_does_not_resume(tmp_path):
    config, _, counter = train(str(tmp_path / "log"), max_epoch=1)
    assert config.resume_from is None and counter.at_start == 0


@pytest.mark.slow
def test_rerunning_a_finished_run_is_a_logged_no_op_and_a_larger_max_epoch_extends_it(
        tmp_path, log_lines):
    logdir = str(tmp_path / "log")
    train(logdir, max_epoch=1)
    for _ in range(2):
        log_lines.clear()
        config, weights, counter = train(logdir, max_epoch=1)
        assert config.finished_epoch == 1 and config.resume_from.endswith("model-3")
        assert counter.steps == 0 and weights.after_step == []
        assert [line for line in log_lines if "already finished" in line] == [
            f"{logdir}: already finished at epoch 1 of 1; raise max_epoch to train further."]
        assert not any(") finished, time:" in line for line in log_lines)   # no epoch ran
    config, weights, counter = train(logdir, max_epoch=2)
    assert config.finished_epoch is None and config.starting_epoch == 2 and counter.steps == 6
    assert [step for step, _ in weights.after_step] == [4, 5, 6]
    log_lines.clear()
    config, _, counter = train(logdir, max_epoch=1)
    assert config.finished_epoch == 2 and counter.steps == 0
    assert f"{logdir}: already finished at epoch 2, past max_epoch=1; raise max_epoch to train " \
        "further." in log_lines


def test_newest_checkpoint_without_its_resume_state_is_skipped(tmp_path, reference, caplog):
    logdir = str(tmp_path / "log")
    train(logdir, extra=[StopAt(5)])
    os.remove(os.path.join(logdir, "model-5.resume.json"))
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        assert find_resume_checkpoint(logdir) == os.path.join(logdir, "model-4")
    assert "model-5 (its companion files were not written)" in caplog.text
    _, weights, _ = train(logdir)
    assert weights.final.tobytes() == reference["final"].tobytes()


def _plain_run(logdir, max_epoch, data, resume, stop_at=None):
    logger.set_logger_dir(logdir, action="keep")
    cls = tfloop.AutoResumeTrainConfig if resume else tfloop.TrainConfig
    callbacks = [tfloop.ModelSaver()] + ([StopAt(stop_at)] if stop_at else [])
    config = cls(model=LinearModel(), data=data, callbacks=callbacks, monitors=[],
                 extra_callbacks=[], max_epoch=max_epoch)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    logger.unset_logger_dir()
    return config, trainer


@pytest.mark.slow
@pytest.mark.parametrize("content", ['{"format": 1, "epo', '{"format": 99}'],
                         ids=["truncated", "other_format"])
def test_a_corrupt_newest_resume_state_falls_back_to_the_previous_checkpoint(
        tmp_path, reference, caplog, content):
    logdir = str(tmp_path / "log")
    train(logdir, extra=[StopAt(5)])
    newest = os.path.join(logdir, "model-5.resume.json")
    with open(newest, "w") as f:
        f.write(content)
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        config, weights, counter = train(logdir)
    assert config.resume_from == os.path.join(logdir, "model-4")
    assert f"Resume state {newest} " in caplog.text
    assert "; resuming from the earlier checkpoint model-4 and its resume state instead." in \
        caplog.text
    # Exact from model-4: the same weights as a run never interrupted, the callbacks' state too.
    assert weights.final.tobytes() == reference["final"].tobytes()
    assert counter.steps == reference["steps"]


@pytest.mark.slow
def test_a_corrupt_resume_state_without_an_earlier_one_resumes_from_the_checkpoint_alone(
        tmp_path, caplog):
    logdir = str(tmp_path / "log")
    train_resumable(logdir, tfloop.DatasetInput(make_dataset), stop_at=2)
    path = os.path.join(logdir, "model-2.resume.json")
    with open(path, "w") as f:
        f.write('{"format": 1, "epo')
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        config, after_step = train_resumable(logdir, tfloop.DatasetInput(make_dataset))
    assert config.resume_from == os.path.join(logdir, "model-2")
    assert (config.starting_epoch, config.starting_local_step) == (1, 2)
    assert f"Resume state {path} cannot be read: Unterminated string starting at: line 1 column " \
        "15 (char 14); resuming from model-2 alone: the input restarts from its beginning and " \
        "the callbacks start afresh." in caplog.text
    assert sorted(after_step) == list(range(3, 3 * STEPS_PER_EPOCH + 1))


def test_checkpoint_without_resume_state_resumes_from_its_global_step(tmp_path, caplog):
    logdir = str(tmp_path / "log")
    x, y = make_regression_data(12)
    _plain_run(logdir, 3, tfloop.FeedInput(batches(x, y, 4)), resume=False, stop_at=4)
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        config, trainer = _plain_run(logdir, 3, tfloop.FeedInput(batches(x, y, 4)), resume=True)
    assert (config.starting_epoch, config.starting_local_step) == (2, 1)
    assert trainer.global_step == 9
    assert "model-4 has no resume state: continuing at global step 4 (epoch 2, step 1), but the " \
           "input restarts from its beginning and the callbacks start afresh." in caplog.text


def _stateful_dataset():
    x, y = make_regression_data(12)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(4).map(
        lambda a, b: (a + tf.random.uniform([], 0.0, 0.0), b))


@pytest.mark.slow
def test_unsaveable_pipeline_says_so_and_resumes_at_the_step(tmp_path, caplog):
    logdir = str(tmp_path / "log")
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        train(logdir, extra=[StopAt(5)], make_data=_stateful_dataset)
    warnings = [r.getMessage() for r in caplog.records if "cannot be saved" in r.getMessage()]
    assert warnings == ["ResumeStateSaver: the input pipeline cannot be saved (RandomUniform is "
                        "stateful), so a resumed run restarts the input from its beginning: "
                        "resuming is exact only for a stateless pipeline."]
    state = json.load(open(os.path.join(logdir, "model-5.resume.json")))
    assert state["iterator"] is None
    config, _, counter = train(logdir, make_data=_stateful_dataset)
    assert (config.starting_epoch, config.starting_local_step) == (2, 2)
    assert counter.steps == 12


def test_changed_steps_per_epoch_falls_back_to_the_global_step(tmp_path, caplog):
    logdir = str(tmp_path / "log")
    train(logdir, extra=[StopAt(5)])
    logger.set_logger_dir(logdir, action="keep")
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        config = tfloop.AutoResumeTrainConfig(model=LinearModel(),
                                              data=tfloop.DatasetInput(make_dataset),
                                              steps_per_epoch=2, max_epoch=5)
    assert (config.starting_epoch, config.starting_local_step) == (3, 1)
    assert "was written with steps_per_epoch=3, this run has 2" in caplog.text


def test_resume_replaces_session_init_and_starting_epoch(tmp_path, caplog):
    logdir = str(tmp_path / "log")
    train(logdir, max_epoch=1)
    logger.set_logger_dir(logdir, action="keep")
    with caplog.at_level(logging.INFO, logger="tfloop"):
        config = tfloop.AutoResumeTrainConfig(
            model=LinearModel(), data=tfloop.DatasetInput(make_dataset),
            session_init=tfloop.JustCurrentSession(), starting_epoch=1, max_epoch=3)
    assert isinstance(config.session_init, tfloop.resume.ResumeInit)
    assert config.starting_epoch == 2
    assert "starting_epoch=1 is replaced by the checkpoint" in caplog.text


def test_always_resume_false_resumes_without_a_terminal(tmp_path):
    logdir = str(tmp_path / "log")
    train(logdir, max_epoch=1)
    logger.set_logger_dir(logdir, action="keep")
    config = tfloop.AutoResumeTrainConfig(always_resume=False, model=LinearModel(),
                                          data=tfloop.DatasetInput(make_dataset), max_epoch=3)
    assert config.resume_from == os.path.join(logdir, "model-3")


def test_callback_state_that_does_not_load_names_the_callback(tmp_path):
    logdir = str(tmp_path / "log")
    train(logdir, extra=[StopAt(5)])
    path = os.path.join(logdir, "model-5.resume.json")
    state = json.load(open(path))
    state["callbacks"]["StepCounter#0"] = {"wrong": 1}
    json.dump(state, open(path, "w"))
    with pytest.raises(ValueError, match=r"Callback StepCounter#0 \(StepCounter\) cannot load its "
                                         r"state from .*model-5.resume.json: KeyError: 'steps'\. "
                                         r"Delete that file"):
        train(logdir)


def test_numpy_state_is_reported_not_saved(tmp_path, caplog):
    class NumpyState(tfloop.Callback):
        def _state_dict(self):
            return {"value": np.float32(1.0)}

    with caplog.at_level(logging.ERROR, logger="tfloop"):
        train(str(tmp_path / "log"), max_epoch=1, extra=[NumpyState()])
    assert "The state of callback NumpyState#0 (NumpyState) cannot be saved as JSON" in caplog.text


def test_old_resume_states_go_with_their_checkpoints(tmp_path):
    logdir = str(tmp_path / "log")
    config, _, _ = train(logdir, max_epoch=2, max_to_keep=2)
    assert config.state_saver.written == [os.path.join(logdir, f"model-{s}")
                                          for s in (2, 4, 6)]
    names = sorted(n for n in os.listdir(logdir) if n.startswith("model-"))
    assert names == ["model-4.data-00000-of-00001", "model-4.index", "model-4.iterator",
                     "model-4.resume.json", "model-6.data-00000-of-00001", "model-6.index",
                     "model-6.iterator", "model-6.resume.json"]


@pytest.mark.slow
def test_library_callbacks_continue_from_their_saved_state(tmp_path):
    """EarlyStopping's wait and best, MinSaver's kept checkpoints come back on resume."""
    logdir = str(tmp_path / "log")
    seen = {}

    class Probe(tfloop.Callback):
        def _before_train(self):
            seen.update(wait=early.wait, best=early.best, top=list(best.top))

    def callbacks():
        return [tfloop.MinSaver("w_sum"), tfloop.EarlyStopping("w_sum", mode="max", patience=5),
                Probe()]

    best, early, probe = callbacks()
    train(logdir, max_epoch=3, extra=[best, early, probe, StopAt(7)])
    saved = json.load(open(os.path.join(logdir, "model-7.resume.json")))["callbacks"]
    assert saved["EarlyStopping#0"]["wait"] == early.wait == 1
    assert saved["MinSaver#0"]["top"] == [list(t) for t in best.top]
    expected = dict(wait=early.wait, best=early.best, top=list(best.top))
    assert [step for step, _ in expected["top"]] == [6]
    best, early, probe = callbacks()
    train(logdir, max_epoch=3, extra=[best, early, probe])
    assert seen == expected


def test_event_files_continue_at_the_resumed_step(tmp_path):
    logdir = str(tmp_path / "log")

    def run(extra):
        logger.set_logger_dir(logdir, action="keep")
        config = tfloop.AutoResumeTrainConfig(
            model=LinearModel(), data=tfloop.DatasetInput(make_dataset), max_epoch=2,
            callbacks=[tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=2),
                       WeightLog()] + extra,
            monitors=[tfloop.TFEventWriter()], extra_callbacks=[])
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
        logger.unset_logger_dir()

    run([StopAt(2)])
    run([StopAt(5)])
    files = sorted((os.path.getmtime(os.path.join(logdir, n)), os.path.join(logdir, n))
                   for n in os.listdir(logdir) if n.startswith("events.out"))
    second = list(tf.compat.v1.train.summary_iterator(files[-1][1]))
    starts = [e.step for e in second if e.HasField("session_log")]
    assert starts == [2]
    steps = sorted({e.step for e in second if e.HasField("summary")})
    assert steps == [3]


def test_a_non_chief_worker_resumes_at_the_same_step(tmp_path, reference):
    class Worker(tfloop.SimpleTrainer):
        is_chief = False

    logdir = str(tmp_path / "log")
    train(logdir, extra=[StopAt(5)])
    config, weights, counter = train(logdir, trainer=Worker())
    assert (config.starting_epoch, config.starting_local_step) == (2, 2)
    assert counter.at_start == 5
    assert weights.final.tobytes() == reference["final"].tobytes()
    assert not os.path.exists(os.path.join(logdir, "model-12.index"))


class _RaiseBeforeEpoch(tfloop.Callback):
    """Raises ``error`` in ``before_epoch`` of ``epoch`` (listed before ResumeStateSaver)."""

    def __init__(self, epoch, error):
        self.epoch, self.error = epoch, error

    def _before_epoch(self):
        if self.epoch_num == self.epoch:
            raise self.error


@pytest.mark.slow
@pytest.mark.parametrize("error", [RuntimeError("broken"), KeyboardInterrupt(),
                                   tfloop.StopTraining("stop")])
def test_a_run_ended_in_before_epoch_resumes_at_that_epoch(tmp_path, reference, error):
    logdir = str(tmp_path / "log")
    try:
        train(logdir, save_every=STEPS_PER_EPOCH, extra=[_RaiseBeforeEpoch(3, error)])
    except (RuntimeError, KeyboardInterrupt):
        pass
    state = json.load(open(os.path.join(logdir, "model-6.resume.json")))
    assert (state["global_step"], state["epoch"], state["local_step"]) == (6, 3, 0)
    config, weights, counter = train(logdir, save_every=STEPS_PER_EPOCH)
    assert (config.starting_epoch, config.starting_local_step) == (3, 0)
    assert counter.steps == 12
    assert weights.final.tobytes() == reference["final"].tobytes()
    assert read_stats(logdir) == reference["stats"]
