"""The public API used the way README.md and docs/ use it: the input of the type check in .ci/run.

``mypy --config-file mypy.ini`` checks these calls against the annotated signatures of tfloop's
public surface, so a wrong argument type (``max_epoch="10"``, a callback given as a monitor, a
trainer class instead of a trainer, a tensor name where a list of names goes) fails the check.
tests/typecheck/test_public_api_usage.py runs the same functions, so the code checked is code that
works.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from tfloop import (
    AutoResumeTrainConfig,
    Callback,
    DataFlow,
    DatasetInput,
    InputSource,
    JSONWriter,
    MinSaver,
    ModelDesc,
    ModelExporter,
    ModelSaver,
    MonitorBase,
    OfflinePredictor,
    PeriodicTrigger,
    PredictConfig,
    ServingModule,
    SimpleTrainer,
    TrainConfig,
    launch_train_with_config,
    logger,
)
from tfloop.callbacks.trainer_view import TrainerView
from tfloop.train import (
    AsyncMultiGPUTrainer,
    DistributedTrainerParameterServer,
    DistributedTrainerReplicated,
    NoOpTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
    TowerTrainer,
    Trainer,
)


class Model(ModelDesc):
    def inputs(self) -> list[tf.TensorSpec]:
        return [tf.TensorSpec([None, 8], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "y")]

    def build_graph(self, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        w = tf.compat.v1.get_variable("w", [8, 3])
        logits = tf.matmul(x, w)
        tf.nn.softmax(logits, name="prob")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits), name="cost")

    def optimizer(self) -> tf.compat.v1.train.Optimizer:
        return tf.compat.v1.train.AdamOptimizer(0.05)


class Batches(DataFlow):
    """Four batches of ``x``, ``y``."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __iter__(self) -> Iterator[list[np.ndarray]]:
        for i in range(0, 16, 4):
            yield [self.x[i:i + 4], self.y[i:i + 4]]

    def __len__(self) -> int:
        return 4


class RecordScalars(MonitorBase):
    def __init__(self) -> None:
        self.seen: list[tuple[str, float]] = []

    def process_scalar(self, name: str, value: float) -> None:
        self.seen.append((name, value))


def train(x: np.ndarray, y: np.ndarray) -> RecordScalars:
    logger.set_logger_dir("train_log/typing", action="delete")
    data: InputSource = DatasetInput(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4))
    record = RecordScalars()
    config = TrainConfig(model=Model(), data=data, max_epoch=2,
                         callbacks=[PeriodicTrigger(ModelSaver(), every_k_epochs=2),
                                    MinSaver("cost")],
                         monitors=[record, JSONWriter()])
    launch_train_with_config(config, SimpleTrainer())
    return record


class RecordCost(Callback):
    """The cost fetched along with each step (docs/callbacks.md, "Writing one"), and the epochs."""

    def __init__(self) -> None:
        self.costs: list[tuple[int, float]] = []
        self.epochs: list[int] = []

    def _setup_graph(self) -> None:
        self.cost = self.get_tensors_maybe_in_tower(["cost"])[0]

    def _before_run(self, ctx: Any) -> list[tf.Tensor]:
        return [self.cost]

    def _after_run(self, ctx: Any, values: Any) -> None:
        self.costs.append((self.global_step, float(values.results[0])))

    def _trigger(self) -> None:
        self.epochs.append(self.epoch_num)


def train_with_trainer(x: np.ndarray, y: np.ndarray) -> tuple[RecordCost, list[str]]:
    """A trainer driven by hand, as the Trainer docstring shows; returns the recording callback
    and the callbacks that went with each step's session run."""
    logger.set_logger_dir("train_log/trainer", action="delete")
    model, record = Model(), RecordCost()
    trainer = SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(),
                        DatasetInput(tf.data.Dataset.from_tensor_slices((x, y)).batch(4)),
                        model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(callbacks=[record], extra_callbacks=[], monitors=[],
                                steps_per_epoch=4, max_epoch=2)
    assert record.uses_run_hooks() and not record.uses_step_hook()
    assert record.step_period is None and list(record.walk()) == [record]
    return record, [str(cb) for cb in trainer.run_callbacks]


class PassLengths(Callback):
    """At the last step of each epoch, the length the trainer expected for it (None in the first
    pass over data of unknown length; docs/data.md, "Epochs")."""

    def __init__(self) -> None:
        self.expected: list[int | None] = []

    def _trigger_step(self) -> None:
        if self.trainer.is_last_step:
            self.expected.append(self.trainer.expected_steps_per_epoch)


def train_one_pass_per_epoch(x: np.ndarray, y: np.ndarray) -> tuple[list[int | None], int]:
    """A filtered dataset has no known length: each epoch is one pass over it."""
    lengths, trainer = PassLengths(), SimpleTrainer()
    data = tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: b >= 0).batch(4)
    launch_train_with_config(TrainConfig(model=Model(), data=data, callbacks=[lengths],
                                         max_epoch=2, monitors=[]), trainer)
    assert trainer.epochs_are_passes
    return lengths.expected, trainer.steps_per_epoch


def predict_after_training(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Train without a checkpoint, then predict with the final weights (docs/predict.md)."""
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(model=Model(), data=Batches(x, y), max_epoch=1,
                                         monitors=[]), trainer)
    weights: dict[str, np.ndarray] | None = trainer.final_weights
    assert weights is not None and trainer.training_ended
    prob, = trainer.get_predictor(["x"], ["prob"])(x[:4])
    return prob, weights["w"]


def train_on_dataflow(x: np.ndarray, y: np.ndarray) -> None:
    logger.set_logger_dir("train_log/dataflow", action="delete")
    launch_train_with_config(TrainConfig(model=Model(), dataflow=Batches(x, y), max_epoch=1),
                             SimpleTrainer())


def resume(x: np.ndarray, y: np.ndarray) -> int:
    """Continue the run of :func:`train` (4 steps per epoch) from its last checkpoint."""
    logger.set_logger_dir("train_log/typing", action="keep")
    config = AutoResumeTrainConfig(always_resume=True, model=Model(), data=Batches(x, y),
                                   max_epoch=3, callbacks=[ModelSaver()])
    launch_train_with_config(config, SimpleTrainer())
    return config.starting_epoch


def predict_and_export(x: np.ndarray) -> np.ndarray:
    config = PredictConfig(model=Model(), session_init="train_log/typing",
                           input_names=["x"], output_names=["prob"])
    prob: np.ndarray = OfflinePredictor(config)(x[:4])[0]
    exporter = ModelExporter(config)
    exporter.export_compact("export/model.pb")
    exporter.export_serving("export/typing/1", signature_name="serving_default")
    version_dir: str = exporter.export_serving_version("export/typing_versions")
    served = ServingModule(version_dir)(x[:4])
    np.testing.assert_allclose(served.numpy(), prob, atol=1e-6)
    return prob


def trainers_as_callbacks_see_them() -> list[TrainerView]:
    """Every trainer class is a :class:`TrainerView`: mypy checks each assignment."""
    views: list[TrainerView] = [SimpleTrainer(), Trainer(), TowerTrainer(), NoOpTrainer(),
                                SyncMultiGPUTrainerReplicated(1),
                                SyncMultiGPUTrainerParameterServer(1), AsyncMultiGPUTrainer(1)]
    cluster_trainers: list[type[TrainerView]] = [DistributedTrainerReplicated,
                                                 DistributedTrainerParameterServer]
    assert all(isinstance(cls, type) for cls in cluster_trainers)
    savers: list[ModelSaver] = views[0].callbacks_of(ModelSaver)    # typed by the kind asked
    assert savers == []
    return views
