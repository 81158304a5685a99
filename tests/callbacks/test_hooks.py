"""TensorFlow's own SessionRunHooks work as callbacks, with their documented effect."""
import logging

import numpy as np
import pytest
from support import LinearModel, RecordingCallback, train_linear

import tfloop
from tfloop.compat import tf, tfv1


def test_stop_at_step_hook_stops_at_its_last_step():
    log = []
    trainer = train_linear([tfloop.HookToCallback(tfv1.train.StopAtStepHook(last_step=4)),
                            RecordingCallback("rec", log)], max_epoch=5)
    assert trainer.global_step == 4
    assert log[-1][1] == "after_train"


def test_nan_tensor_hook_raises_on_nan_loss():
    class Diverging(LinearModel):
        def build_graph(self, x, y):
            return super().build_graph(x, y) * np.float32("nan")

    with pytest.raises(tfv1.train.NanLossDuringTrainingError):
        train_linear([tfloop.HookToCallback(tfv1.train.NanTensorHook("cost:0"))],
                     model=Diverging(), max_epoch=1)


def test_nan_tensor_hook_can_request_a_stop_instead():
    class Diverging(LinearModel):
        def build_graph(self, x, y):
            return super().build_graph(x, y) * np.float32("nan")

    trainer = train_linear([tfloop.HookToCallback(tfv1.train.NanTensorHook(
        "cost:0", fail_on_nan_loss=False))], model=Diverging(), max_epoch=2)
    # Step 1 makes the weights NaN, so the mean squared error "cost" is NaN from step 2 on.
    assert trainer.global_step == 2


def test_logging_tensor_hook_logs_every_n_iter(caplog):
    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    handler = Collect()
    tf_logger = logging.getLogger("tensorflow")
    tf_logger.addHandler(handler)
    old_level = tf_logger.level
    tf_logger.setLevel(logging.INFO)
    try:
        train_linear([tfloop.HookToCallback(tfv1.train.LoggingTensorHook(
            {"step_cost": "cost:0"}, every_n_iter=2))], max_epoch=2)
    finally:
        tf_logger.removeHandler(handler)
        tf_logger.setLevel(old_level)
    logged = [m for m in messages if "step_cost" in m]
    assert len(logged) == 3           # iterations 0, 2, 4 of 6


def test_final_ops_hook_runs_its_ops_at_the_end():
    hooks = []

    class WithFinalOps(tfloop.HookToCallback):
        """Creates its FinalOpsHook in setup_graph, once the model's variables exist."""

        def __init__(self):
            pass

        def _setup_graph(self):
            self._hook = tfv1.train.FinalOpsHook(tfv1.trainable_variables()[0].value())
            hooks.append(self._hook)
            super()._setup_graph()

    train_linear([WithFinalOps()], max_epoch=1)
    value = hooks[0].final_ops_values
    assert value.shape == (3, 1) and np.abs(value).sum() > 0


def test_hook_to_callback_rejects_non_hooks():
    with pytest.raises(TypeError, match="SessionRunHook"):
        tfloop.HookToCallback(object())


def test_callback_to_hook_in_a_monitored_session():
    seen = []

    class Fetch(tfloop.Callback):
        def _before_run(self, ctx):
            return [self.value]

        def _after_run(self, ctx, values):
            seen.append(values.results[0])

    graph = tf.Graph()
    with graph.as_default():
        counter = tfv1.get_variable("n", initializer=0, use_resource=True)
        step = tfv1.assign_add(counter, 1)
        cb = Fetch()
        cb.value = counter.read_value()
        with tfv1.train.MonitoredSession(hooks=[tfloop.CallbackToHook(cb)]) as sess:
            for _ in range(3):
                sess.run(step)
    assert len(seen) == 3


def test_hook_factory_builds_the_hook_inside_the_trainers_graph():
    built_in = []

    def make_hook():
        graph = tfv1.get_default_graph()
        built_in.append(graph)
        return tfv1.train.NanTensorHook(graph.get_tensor_by_name("cost:0"), fail_on_nan_loss=False)

    class Diverging(LinearModel):
        def build_graph(self, x, y):
            return super().build_graph(x, y) * np.float32("nan")

    trainer = train_linear([tfloop.HookToCallback(make_hook)], model=Diverging(), max_epoch=2)
    assert built_in == [trainer.graph]
    assert trainer.global_step == 2        # the hook saw the NaN cost and stopped training


def test_hook_factory_records_every_call_of_its_hook():
    calls = []

    class Recording(tfv1.train.SessionRunHook):
        def begin(self):
            self.cost = tfv1.get_default_graph().get_tensor_by_name("cost:0")
            calls.append("begin")

        def after_create_session(self, session, coord):
            calls.append("after_create_session")

        def before_run(self, run_context):
            calls.append("before_run")
            return tfv1.train.SessionRunArgs(self.cost)

        def after_run(self, run_context, run_values):
            calls.append(("after_run", round(float(run_values.results), 4)))

        def end(self, session):
            calls.append("end")

    log = []
    train_linear([tfloop.HookToCallback(Recording), RecordingCallback("rec", log, ["cost:0"])],
                 max_epoch=1)
    costs = [round(entry[5][0], 4) for entry in log if entry[1] == "after_run"]
    assert calls == (["begin", "after_create_session"] +
                     [c for cost in costs for c in ("before_run", ("after_run", cost))] + ["end"])
    assert len(costs) == 3


def test_hook_holding_a_tensor_of_another_graph_gets_the_factory_form():
    with tf.Graph().as_default():
        stale = tf.constant(1.0, name="loss")
    hook = tfv1.train.LoggingTensorHook({"loss": stale}, every_n_iter=1)
    with pytest.raises(ValueError, match=r"LoggingTensorHook holds 'loss:0' \(in \._tensors"
                                         r"\['loss'\]\), which was built in another graph.*"
                                         r"HookToCallback\(lambda: LoggingTensorHook\(\.\.\.\)\)"):
        train_linear([tfloop.HookToCallback(hook)], max_epoch=1)


def test_hook_fetching_an_eager_tensor_is_refused_at_its_first_run():
    eager = tf.constant(2.0)     # built before training, out of sight of the hook's attributes

    class FetchesEager(tfv1.train.SessionRunHook):
        def before_run(self, run_context):
            return tfv1.train.SessionRunArgs([eager])

    with pytest.raises(ValueError, match=r"FetchesEager fetches .*which was built eagerly, not in "
                                         r"the trainer's graph"):
        train_linear([tfloop.HookToCallback(FetchesEager())], max_epoch=1)


def test_hook_factory_must_return_a_hook():
    with pytest.raises(TypeError, match=r"The function given to HookToCallback returned 3, not a "
                                        r"tf.compat.v1.train.SessionRunHook"):
        train_linear([tfloop.HookToCallback(lambda: 3)], max_epoch=1)


def _saved_steps(directory):
    state = tfv1.train.get_checkpoint_state(str(directory))
    return [int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths]


def _monitored_linear_training(hooks, steps):
    """LinearModel's graph trained ``steps`` times by a MonitoredSession with ``hooks`` (the
    reference); returns the final ``w``."""
    x, y = np.ones((4, 3), np.float32), np.ones((4,), np.float32)
    with tf.Graph().as_default():
        tfv1.train.get_or_create_global_step()
        cost = LinearModel().build_graph(tf.constant(x), tf.constant(y))
        train_op = LinearModel().optimizer().minimize(
            cost, global_step=tfv1.train.get_global_step())
        w = tfv1.get_default_graph().get_tensor_by_name("w:0")
        with tfv1.train.MonitoredSession(hooks=hooks(), session_creator=None) as sess:
            for _ in range(steps):
                sess.run(train_op)
            return sess.run(w)


class FinalWeights(tfloop.Callback):
    def _after_train(self):
        self.w = self.trainer.sess.run(self.get_tensors_maybe_in_tower(["w"])[0])


def test_checkpoint_saver_hook_as_documented_saves_as_in_a_monitored_session(tmp_path):
    def hooks(name):
        return lambda: [tfv1.train.CheckpointSaverHook(str(tmp_path / name), save_steps=2)]

    _monitored_linear_training(hooks("reference"), steps=6)
    final = FinalWeights()
    trainer = train_linear([tfloop.HookToCallback(hooks("tfloop")()[0]), final], max_epoch=2)
    assert trainer.global_step == 6
    assert _saved_steps(tmp_path / "tfloop") == _saved_steps(tmp_path / "reference") \
        == [0, 2, 4, 6]
    saved = tf.train.load_checkpoint(str(tmp_path / "tfloop" / "model.ckpt-6"))
    np.testing.assert_array_equal(saved.get_tensor("w"), final.w)
    assert saved.get_tensor("global_step") == 6


def test_a_saver_already_in_the_collection_is_the_one_the_hook_uses(tmp_path):
    def hook():
        saver = tfv1.train.Saver(max_to_keep=1)
        tfv1.add_to_collection(tfv1.GraphKeys.SAVERS, saver)
        return tfv1.train.CheckpointSaverHook(str(tmp_path), save_steps=2)

    train_linear([tfloop.HookToCallback(hook)], max_epoch=2)
    assert _saved_steps(tmp_path) == [6]                     # max_to_keep=1: this saver's


def test_callback_to_hook_runs_setup_graph_so_tensor_printer_works(log_lines):
    printed = []

    def hooks():
        return [tfloop.CallbackToHook(tfloop.TensorPrinter(["cost"]))]

    class Costs(tfv1.train.SessionRunHook):
        def before_run(self, run_context):
            return tfv1.train.SessionRunArgs(
                tfv1.get_default_graph().get_tensor_by_name("cost:0"))

        def after_run(self, run_context, run_values):
            printed.append(f"cost: {run_values.results}")

    _monitored_linear_training(lambda: hooks() + [Costs()], steps=3)
    assert [line for line in log_lines if line.startswith("cost: ")] == printed
    assert len(printed) == 4                       # 3 training steps and the run reading w


def test_callback_to_hook_gives_before_train_trigger_step_and_after_train_the_session():
    log = []

    class Record(tfloop.Callback):
        def _setup_graph(self):
            log.append(("setup_graph", self.trainer.sess))

        def _before_train(self):
            log.append(("before_train", self.global_step))

        def _after_run(self, ctx, values):
            log.append(("after_run", self.global_step))

        def _trigger_step(self):
            log.append(("trigger_step", self.global_step))

        def _after_train(self):
            log.append(("after_train", self.global_step))

    _monitored_linear_training(lambda: [tfloop.CallbackToHook(Record())], steps=2)
    steps = [("after_run", 1), ("trigger_step", 1), ("after_run", 2), ("trigger_step", 2),
             ("after_run", 2), ("trigger_step", 2)]                # the last run reads w
    assert log == [("setup_graph", None), ("before_train", 0)] + steps + [("after_train", 2)]


def test_callback_to_hook_names_what_a_callback_misses_outside_tfloop():
    class NeedsEpoch(tfloop.Callback):
        def _before_train(self):
            print(self.epoch_num)

    with pytest.raises(AttributeError, match=r"'epoch_num'.*CallbackToHook.*sees only "
                                             r"self.trainer.sess, .graph and .global_step"):
        _monitored_linear_training(lambda: [tfloop.CallbackToHook(NeedsEpoch())], steps=1)


def test_callback_to_hook_follows_the_step_schedule_of_what_it_runs():
    log = []

    class Record(tfloop.Callback):
        def _before_run(self, ctx):
            log.append(("before_run", self.global_step))

        def _after_run(self, ctx, values):
            log.append(("after_run", self.global_step))

        def _trigger_step(self):
            log.append(("trigger_step", self.global_step))

    _monitored_linear_training(lambda: [tfloop.CallbackToHook(
        tfloop.PeriodicCallback(Record(), every_k_steps=2))], steps=4)
    # As TensorFlow's own hooks do, a run is taken for the step after the global step read
    # before it: the runs of steps 2 and 4 (the last run, reading w, would be step 5).
    assert log == [("before_run", 1), ("after_run", 2), ("trigger_step", 2),
                   ("before_run", 3), ("after_run", 4), ("trigger_step", 4)]
    with pytest.raises(AttributeError, match=r"'epoch_num'.*CallbackToHook"):
        _monitored_linear_training(lambda: [tfloop.CallbackToHook(
            tfloop.PeriodicCallback(Record(), every_k_epochs=2))], steps=1)
    # the last step of each epoch (MergeAllSummaries' fetches) needs epochs too: said, not
    # silently never due
    class AtEpochEnds(Record):
        when = tfloop.Schedule(last_step_of_epoch=True)

    with pytest.raises(AttributeError, match=r"'epoch_num'.*CallbackToHook"):
        _monitored_linear_training(lambda: [tfloop.CallbackToHook(AtEpochEnds())], steps=1)
