"""Data parallel on N logical CPU devices: the same model as one device on the combined batch."""
import functools

import numpy as np
import pytest
from distributed_support import (
    BATCH,
    MLP,
    MODEL_VARIABLES,
    STEPS,
    CaptureVariables,
    make_data,
    train_script,
)
from support import LinearModel, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils.precision import Precision
from tfloop.train.devices import resolve_devices
from tfloop.train.multigpu import (
    SyncMultiGPUTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
)

RTOL, ATOL = 1e-5, 1e-6


@functools.cache
def reference(optimizer="momentum"):
    """One device, the whole combined batch each step."""
    return train_script(tfloop.SimpleTrainer(), optimizer=optimizer, save=False).values


def assert_matches_reference(values, optimizer="momentum"):
    ref = reference(optimizer)
    for name in MODEL_VARIABLES:
        np.testing.assert_allclose(values[name], ref[name], rtol=RTOL, atol=ATOL, err_msg=name)
    assert values["global_step"] == STEPS == ref["global_step"]


def assert_copies_identical(values, towers):
    """Every tower's copy (variables and optimizer slots) equals tower 0's, bit for bit."""
    copies = [name for name in values if name.startswith("tower")]
    assert len(copies) >= (towers - 1) * len(MODEL_VARIABLES)
    for name in copies:
        source = name.split("/", 1)[1]
        assert np.array_equal(values[name], values[source]), name


@pytest.mark.parametrize("towers", [1, 2, pytest.param(4, marks=pytest.mark.slow)])
@pytest.mark.parametrize("mode", ["add_n", "collective"])
def test_replicated_matches_one_device_on_combined_batch(towers, mode):
    trainer = SyncMultiGPUTrainerReplicated(towers, mode=mode)
    capture = train_script(trainer, towers_per_step=towers, save=False)
    assert_matches_reference(capture.values)
    assert_copies_identical(capture.values, towers)
    assert sorted(n for n in capture.values if n.startswith("tower")) == sorted(
        f"tower{i}/{v}{slot}" for i in range(1, towers) for v in MODEL_VARIABLES
        for slot in ("", "/Momentum"))
    assert trainer.global_step == STEPS


@pytest.mark.slow
def test_replicated_with_adam_advances_optimizer_state_once_per_step():
    capture = train_script(SyncMultiGPUTrainerReplicated(2), towers_per_step=2, optimizer="adam",
                           save=False)
    assert_matches_reference(capture.values, "adam")
    assert_copies_identical(capture.values, 2)
    np.testing.assert_allclose(capture.values["beta1_power"], 0.9 ** (STEPS + 1), rtol=1e-6)
    assert not [n for n in capture.values if n.startswith("tower") and "power" in n]


@pytest.mark.slow
def test_sum_instead_of_average_equals_a_larger_learning_rate():
    capture = train_script(SyncMultiGPUTrainerReplicated(2, average=False), towers_per_step=2,
                           optimizer="sgd:0.1", save=False)
    ref = train_script(tfloop.SimpleTrainer(), optimizer="sgd:0.2", save=False).values
    for name in MODEL_VARIABLES:
        np.testing.assert_allclose(capture.values[name], ref[name], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("towers,ps_device", [(2, None), (4, "gpu")])
def test_parameter_server_matches_one_device_on_combined_batch(towers, ps_device):
    trainer = SyncMultiGPUTrainerParameterServer(towers, ps_device=ps_device)
    capture = train_script(trainer, towers_per_step=towers, save=False)
    assert_matches_reference(capture.values)
    assert not [n for n in capture.values if n.startswith("tower")]
    devices = {v.op.name: v.device for v in trainer.graph.get_collection(
        tfv1.GraphKeys.GLOBAL_VARIABLES)}
    if ps_device is None:
        assert devices["fc1/W"] == devices["fc2/W"] == "/device:CPU:0"
    else:
        assert len({devices[n] for n in MODEL_VARIABLES}) == len(MODEL_VARIABLES)


def test_sync_multigpu_trainer_is_a_parameter_server_on_the_cpu():
    trainer = SyncMultiGPUTrainer(2)
    assert isinstance(trainer, SyncMultiGPUTrainerParameterServer)
    assert trainer.ps_devices == ["/device:CPU:0"]
    assert trainer.devices == ["/device:CPU:0", "/device:CPU:1"]


def _built_trainer(trainer, data=None):
    x, y = make_data()
    data = data or tfloop.DatasetInput(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH // trainer.num_towers))
    model = MLP()
    with trainer.graph.as_default():
        signature = model.get_input_signature()
    trainer.setup_graph(signature, data, model.build_graph, model.get_optimizer)
    trainer.setup_callbacks([], [])
    return trainer


def test_copies_start_from_tower0_values_after_initialization():
    trainer = _built_trainer(SyncMultiGPUTrainerReplicated(2))
    fresh = tfloop.NewSessionCreator(config=trainer.default_session_config()).create_session(
        trainer.graph)
    assert fresh.run(trainer.replica_difference) > 0.01     # random initial values differ
    fresh.close()
    trainer.initialize()
    assert trainer.sess.run(trainer.replica_difference) == 0.0
    assert trainer.check_replicas() == 0.0
    trainer.sess.close()


@pytest.mark.slow
def test_checkpoint_has_one_copy_and_loads_into_simple_trainer(tmp_path):
    tfloop.logger.set_logger_dir(str(tmp_path / "replicated"), action="keep")
    trained = train_script(SyncMultiGPUTrainerReplicated(2), towers_per_step=2,
                           optimizer="adam").values
    replicated_ckpt = tf.train.latest_checkpoint(str(tmp_path / "replicated"))
    tfloop.logger.set_logger_dir(str(tmp_path / "simple"), action="keep")
    train_script(tfloop.SimpleTrainer(), optimizer="adam")
    simple_ckpt = tf.train.latest_checkpoint(str(tmp_path / "simple"))
    tfloop.logger.unset_logger_dir()
    names = sorted(name for name, _ in tf.train.list_variables(replicated_ckpt))
    assert names == sorted(name for name, _ in tf.train.list_variables(simple_ckpt))
    assert "fc1/W/Adam" in names and not [n for n in names if "tower" in n]

    restore = tfloop.SaverRestore(replicated_ckpt)
    simple = train_script(tfloop.SimpleTrainer(), optimizer="adam", session_init=restore,
                          save=False, steps=1)
    assert restore.restored == sorted(names)
    for name in names:
        np.testing.assert_array_equal(simple.before[name], trained[name])

    # Into a replicated trainer: the restore comes first, then every copy takes its values.
    again = train_script(SyncMultiGPUTrainerReplicated(2), towers_per_step=2, optimizer="adam",
                         session_init=tfloop.SaverRestore(replicated_ckpt), save=False, steps=1)
    for name in ("fc1/W", "fc1/W/Adam", "fc2/W/Adam_1"):
        np.testing.assert_array_equal(again.before["tower1/" + name], trained[name])


class RecordTowerInputs(tfloop.Callback):
    """Fetch each training tower's ``x`` with every step."""

    def __init__(self):
        self.steps = []

    def _setup_graph(self):
        self._inputs = [tower.inputs[0] for tower in self.trainer.towers.training()]

    def _before_run(self, ctx):
        return self._inputs

    def _after_run(self, ctx, values):
        self.steps.append([np.asarray(v) for v in values.results])


@pytest.mark.parametrize("source", ["feed", "dataset"])
def test_each_tower_trains_on_its_own_batch(source):
    x, y = make_regression_data(16)
    data = tfloop.FeedInput(batches(x, y, 2)) if source == "feed" else \
        tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(2))
    record = RecordTowerInputs()
    train_linear(callbacks=[record], data=data, steps_per_epoch=4, max_epoch=1,
                 trainer=SyncMultiGPUTrainerReplicated(2))
    for step, seen in enumerate(record.steps):
        seen = sorted(seen, key=lambda a: a[0, 0]) if source == "dataset" else seen
        expected = sorted([x[4 * step:4 * step + 2], x[4 * step + 2:4 * step + 4]],
                          key=lambda a: a[0, 0]) if source == "dataset" else \
            [x[4 * step:4 * step + 2], x[4 * step + 2:4 * step + 4]]
        for got, want in zip(seen, expected):
            np.testing.assert_array_equal(got, want)


def test_inference_runner_uses_tower0_variables():
    x, y = make_data(1)
    capture = CaptureVariables()
    runner = tfloop.InferenceRunner([(x, y)], [tfloop.ScalarStats("cost")])
    trainer = SyncMultiGPUTrainerReplicated(2)
    train_script(trainer, towers_per_step=2, callbacks=[runner], capture=capture, save=False)
    values = capture.values
    pred = np.tanh(x @ values["fc1/W"] + values["fc1/b"]) @ values["fc2/W"]
    expected = np.mean(np.square(pred[:, 0] - y))
    assert trainer.monitors.get_latest("validation_cost") == pytest.approx(expected, rel=1e-5)


class TwoVariablesInTowerOne(tfloop.ModelDesc):
    def inputs(self):
        return LinearModel().inputs()

    def build_graph(self, x, y):
        w = tfv1.get_variable("w", [3, 1])
        if tfloop.get_current_tower_context().index == 1:
            w = w + tfv1.get_variable("extra", [3, 1])
        return tf.reduce_mean(tf.square(tf.squeeze(tf.matmul(x, w), 1) - y), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.1)


def test_towers_building_different_variables_is_an_error():
    with pytest.raises(ValueError, match=r"Tower 1 did not create its own copy.*tower1/extra"):
        train_linear(model=TwoVariablesInTowerOne(), trainer=SyncMultiGPUTrainerReplicated(2))


def test_session_without_the_devices_names_device_count():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match=r"/device:CPU:1 is not in the session.*device_count"):
        train_linear(trainer=SyncMultiGPUTrainerReplicated(2), data=tfloop.FeedInput(
            batches(x, y, 2)), session_creator=tfloop.NewSessionCreator(
                config=tfv1.ConfigProto()))


def test_session_config_is_merged_with_the_devices_the_towers_need():
    x, y = make_regression_data(12)
    trainer = train_linear(trainer=SyncMultiGPUTrainerReplicated(2), data=tfloop.FeedInput(
        batches(x, y, 2)), session_config=tfv1.ConfigProto(intra_op_parallelism_threads=1),
        max_epoch=1)
    assert trainer.loop.global_step == 6


@pytest.mark.parametrize("gpus,error,match", [
    (0, ValueError, "gpus must be >= 1, got 0"),
    (True, TypeError, "gpus must be an int"),
    ([], ValueError, "empty list"),
    ([-1], ValueError, "GPU -1 does not exist: this machine has 0 GPU"),
    (["/cpu:0", "/device:CPU:0"], ValueError, "more than once"),
    (["cpu0"], ValueError, "Bad device string 'cpu0'"),
    (["/job:worker"], ValueError, "names no device type"),
    ([1.5], TypeError, "GPU indices or device strings, got 1.5"),
])
def test_bad_gpus_argument(gpus, error, match):
    with pytest.raises(error, match=match):
        resolve_devices(gpus)


def test_devices_from_an_int_on_a_machine_without_gpus():
    assert resolve_devices(3) == ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"]
    assert resolve_devices(["/cpu:1", "/gpu:0"]) == ["/device:CPU:1", "/device:GPU:0"]


def test_gpu_indices_on_a_machine_without_gpus_are_cpu_devices(log_lines):
    # tensorpack's soft placement ran towers of gpus=[0, 1] on the CPU of such a machine.
    assert resolve_devices([0, 1]) == ["/device:CPU:0", "/device:CPU:1"]
    assert [line for line in log_lines if "no GPU" in line] == [
        "gpus=[0, 1]: this machine has no GPU, so the towers run on logical CPU devices "
        "(/cpu:0, /cpu:1), as tensorpack's soft placement ran them on the CPU."]


@pytest.mark.parametrize("mode", ["nccl", "NCCL", "gpu", "cpu", "hierarchical", "add_n"])
def test_tensorpack_modes_map_to_an_all_reduce_of_the_cpu_towers(mode, log_lines):
    # tensorpack's modes, and 'nccl' on CPU towers: what TensorFlow 2 offers there, said once.
    trainer = SyncMultiGPUTrainerReplicated(2, mode=mode)
    assert trainer.mode == "add_n"
    notes = [line for line in log_lines if "the all-reduce TensorFlow 2 offers" in line]
    assert len(notes) == (mode != "add_n")
    assert train_linear(trainer=trainer, max_epoch=1).loop.global_step == 3


def test_bad_modes_and_ps_devices():
    with pytest.raises(ValueError, match="unknown mode 'ring'.*add_n, collective, nccl, "
                                         "tensorpack's gpu, cpu, hierarchical, or None"):
        SyncMultiGPUTrainerReplicated(2, mode="ring")
    with pytest.raises(ValueError, match="ps_device must be 'cpu', 'gpu' or a device string"):
        SyncMultiGPUTrainerParameterServer(2, ps_device=0)
    assert SyncMultiGPUTrainerReplicated(2).mode == "add_n"
    assert SyncMultiGPUTrainerParameterServer(2, ps_device="/cpu:1").ps_devices == ["/device:CPU:1"]


@pytest.mark.slow
def test_the_run_options_are_applied_once_to_the_session_of_a_multi_device_trainer(monkeypatch):
    applied = []
    apply = Precision.apply
    monkeypatch.setattr(Precision, "apply",
                        lambda self, config: applied.append(config) or apply(self, config))
    trainer = SyncMultiGPUTrainerReplicated(2)
    trainer.set_options(tfloop.RunOptions(xla=True))
    _built_trainer(trainer).initialize()
    assert len(applied) == 1
    assert applied[0].device_count["CPU"] == 2        # the trainer's config, towers' devices in
    assert trainer.sess.run(trainer.replica_difference) == 0.0
    trainer.sess.close()
