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
