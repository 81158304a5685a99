"""A whole ``keras.Model`` as tfloop's model: :class:`KerasModelDesc`.

The Keras model is called inside every tower like any Keras layer (see
:mod:`tfloop.tfutils.keras_scope`): its weights become graph variables that start from the model's
current weights, train with a ``tf.compat.v1`` optimizer, and are saved by ``ModelSaver`` under
names that do not depend on Keras' automatic numbering. After training,
:meth:`KerasModelDesc.restore_keras_weights` copies a checkpoint back into the Keras model, ready
for ``model.predict`` or ``model.save``.
"""
from collections.abc import Callable, Sequence

import keras
import numpy as np
from tensorflow.python.eager import context as eager_context

from tfloop.compat import tf, tfv1
from tfloop.model_desc import ModelDesc
from tfloop.tfutils.keras_scope import KerasTowerScope
from tfloop.tfutils.tower import TowerContext
from tfloop.tfutils.varmanip import get_checkpoint_path

__all__ = ["KerasModelDesc"]

LossSpec = str | Callable | Sequence[str | Callable]
OptimizerSpec = tfv1.train.Optimizer | Callable[[], tfv1.train.Optimizer]
_SPARSE_LOSSES = ("sparse_categorical_crossentropy",)
_SEED_STATE = "seed_generator_state"  # a dropout layer's random state: not a weight


def _check_model(model):
    if not isinstance(model, keras.Model):
        raise TypeError(f"KerasModelDesc needs a keras.Model (functional, Sequential or "
                        f"subclassed), got {model!r}.")
    if not model.built:
        raise ValueError(f"The Keras model {model.name!r} is not built: give it an input shape "
                         f"(keras.Input(...) or model.build(shape)) before KerasModelDesc.")
    return model


def _resolve_loss(loss):
    if isinstance(loss, str):
        try:
            return keras.losses.get(loss)
        except ValueError:
            raise ValueError(f"Unknown Keras loss name {loss!r}: pass a name such as "
                             f"'sparse_categorical_crossentropy' or 'mse', or a function "
                             f"loss(y_true, y_pred).") from None
    if not callable(loss):
        raise TypeError(f"loss must be a Keras loss name or a function loss(y_true, y_pred), got "
                        f"{loss!r}.")
    return loss


def _is_sparse(loss):
    name = loss if isinstance(loss, str) else getattr(loss, "__name__", None) or \
        getattr(loss, "name", None)
    return name in _SPARSE_LOSSES


def _check_optimizer(optimizer):
    if isinstance(optimizer, keras.optimizers.Optimizer):
        raise TypeError(
            f"KerasModelDesc got the Keras optimizer {optimizer!r}, which does not work in "
            f"tf.compat.v1 graphs: pass a tf.compat.v1.train.Optimizer (e.g. "
            f"tf.compat.v1.train.AdamOptimizer(1e-3)) or a function that returns one.")
    if not isinstance(optimizer, tfv1.train.Optimizer) and not callable(optimizer):
        raise TypeError(f"optimizer must be a tf.compat.v1.train.Optimizer or a function that "
                        f"returns one, got {optimizer!r}.")
    return optimizer


def _target_spec(output, loss, index, count):
    name = "target" if count == 1 else f"target{index}"
    shape = tf.TensorShape(output.shape)
    if _is_sparse(loss):
        return tf.TensorSpec(shape[:-1], tf.int32, name)
    return tf.TensorSpec(shape, tf.as_dtype(output.dtype), name)


class KerasModelDesc(ModelDesc):
    """Train an existing (built) ``keras.Model`` with tfloop's trainers and callbacks.

    The tower function calls the model on the input tensors, names its outputs ``output`` (or
    ``output0``, ``output1``, … for several), each metric by its key, and returns the cost ``cost``:
    the mean loss over the batch (summed over outputs) plus the model's own losses
    (``model.losses``: regularizers, ``add_loss``). The weights start from the model's current
    values.

    Args:
        model (keras.Model): a built functional, Sequential or subclassed model.
        loss: a Keras loss name (``"sparse_categorical_crossentropy"``, ``"mse"``, …), a function
            ``loss(y_true, y_pred)`` (per example or already reduced), or a list of these, one per
            model output.
        optimizer: a ``tf.compat.v1.train.Optimizer``, or a function returning one (called in the
            training graph, e.g. to create a ``learning_rate`` variable for a schedule). Keras
            optimizers do not work in ``tf.compat.v1`` graphs.
        inputs (list[tf.TensorSpec]): the data's components: the model's inputs, then one target per
            model output. By default the model's inputs (``model.inputs``, named ``input`` or
            ``input0``, ``input1``, …) and targets shaped like the outputs (named ``target`` or
            ``target0``, …; for a sparse categorical loss: integer labels without the class axis).
        metrics (dict): name → a Keras metric function name (``"sparse_categorical_accuracy"``) or
            ``fn(y_true, y_pred)``; the batch mean is the tensor ``name``, e.g. for ``ScalarStats``.
            Metrics use the first output.

    Example:
        >>> model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(10, "softmax")])
        >>> desc = KerasModelDesc(model, "sparse_categorical_crossentropy",
        ...                       lambda: tf.compat.v1.train.AdamOptimizer(1e-3),
        ...                       metrics={"accuracy": "sparse_categorical_accuracy"})
        >>> launch_train_with_config(TrainConfig(model=desc, data=data, max_epoch=3),
        ...                          SimpleTrainer())
        >>> desc.restore_keras_weights(logger.get_logger_dir()).save("model.keras")
    """

    def __init__(self, model: keras.Model, loss: LossSpec, optimizer: OptimizerSpec,
                 inputs: Sequence[tf.TensorSpec] | None = None,
                 metrics: dict[str, str | Callable] | None = None) -> None:
        self.model = _check_model(model)
        outputs = self._model_outputs()
        losses = list(loss) if isinstance(loss, (list, tuple)) else [loss] * len(outputs)
        if len(losses) != len(outputs):
            raise ValueError(f"loss is a list of {len(losses)} but the model has {len(outputs)} "
                             f"outputs: give one loss per output.")
        self._loss_specs = losses
        self._losses = [_resolve_loss(item) for item in losses]
        self._optimizer_arg = _check_optimizer(optimizer)
        self._metrics = {}
        for name, fn in (metrics or {}).items():
            self._metrics[name] = self._resolve_metric(name, fn)
        self._input_specs = self._make_inputs(inputs, outputs)

    def _model_outputs(self):
        outputs = getattr(self.model, "outputs", None)
        return list(outputs) if outputs else [None]

    @staticmethod
    def _resolve_metric(name, fn):
        if isinstance(fn, str):
            candidate = getattr(keras.metrics, fn, None)
            if candidate is None or isinstance(candidate, type):
                raise ValueError(f"metrics[{name!r}] = {fn!r} is not a Keras metric function: use "
                                 f"a name such as 'sparse_categorical_accuracy' or a function "
                                 f"fn(y_true, y_pred).")
            return candidate
        if not callable(fn):
            raise TypeError(f"metrics[{name!r}] must be a Keras metric function name or "
                            f"fn(y_true, y_pred), got {fn!r}.")
        return fn

    def _make_inputs(self, inputs, outputs):
        if inputs is not None:
            specs = list(inputs)
            bad = [s for s in specs if not isinstance(s, tf.TensorSpec)]
            if bad:
                raise TypeError(f"inputs must be a list of tf.TensorSpec (the model's inputs, then "
                                f"its targets), got {bad[0]!r}.")
            return specs
        model_inputs = getattr(self.model, "inputs", None)
        if not model_inputs or outputs == [None]:
            raise ValueError(f"The Keras model {self.model.name!r} does not declare its inputs and "
                             f"outputs (a subclassed model): pass inputs=[tf.TensorSpec(...), ...] "
                             f"with the model's inputs, then its targets.")
        specs = [tf.TensorSpec(tf.TensorShape(t.shape), tf.as_dtype(t.dtype),
                               f"input{i}" if len(model_inputs) > 1 else "input")
                 for i, t in enumerate(model_inputs)]
        specs += [_target_spec(out, loss, i, len(outputs))
                  for i, (out, loss) in enumerate(zip(outputs, self._loss_specs))]
        return specs

    @property
    def _num_model_inputs(self):
        return len(self._input_specs) - len(self._losses)

    def inputs(self):
        return list(self._input_specs)

    def build_graph(self, *tensors):
        n = self._num_model_inputs
        if n < 1:
            raise ValueError(f"inputs has {len(tensors)} components but the model has "
                             f"{len(self._losses)} outputs: give the model's inputs, then one "
                             f"target per output.")
        features, targets = list(tensors[:n]), list(tensors[n:])
        outputs = self.model(features[0] if n == 1 else features)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        names = ["output"] if len(outputs) == 1 else [f"output{i}" for i in range(len(outputs))]
        outputs = [tf.identity(out, name=name) for out, name in zip(outputs, names)]
        for name, fn in self._metrics.items():
            tf.reduce_mean(tf.cast(fn(targets[0], outputs[0]), tf.float32), name=name)
        total = tf.add_n([tf.reduce_mean(loss(target, out))
                          for loss, target, out in zip(self._losses, targets, outputs)])
        extra = self.model.losses
        if extra:
            total = total + tf.add_n([tf.cast(x, total.dtype) for x in extra])
        return tf.identity(total, name="cost")

    def optimizer(self):
        if isinstance(self._optimizer_arg, tfv1.train.Optimizer):
            return self._optimizer_arg
        return self._optimizer_arg()

    def graph_variable_names(self) -> dict[str, str]:
        """The graph (and checkpoint) name of each of the model's variables that a tower uses,
        as ``{keras_variable.path: name}``."""
        pairs = self._variable_names()
        return {v.path: name for v, name in pairs}

    def _variable_names(self):
        with tf.Graph().as_default():
            placeholders = [tfv1.placeholder(s.dtype, s.shape) for s in self._input_specs]
            with TowerContext("", is_training=True):
                self.build_graph(*placeholders)
                scope = KerasTowerScope.current()
                pairs = [(v, scope.graph_variable(v)) for v in self.model.variables]
        return [(v, graph_var.op.name) for v, graph_var in pairs if graph_var is not None]

    def restore_keras_weights(self, checkpoint: str | dict) -> keras.Model:
        """Copy the model's weights from a tfloop checkpoint into the Keras model.

        Args:
            checkpoint: a checkpoint prefix, one of its files, or a log directory (its latest
                checkpoint); or a dict ``{name: value}`` such as ``dump_session_params`` writes.

        Returns:
            keras.Model: the model, with the checkpoint's weights (ready for ``predict``/``save``).
        """
        pairs = self._variable_names()
        if isinstance(checkpoint, dict):
            values = dict(checkpoint)
            source = "the given dict"
        else:
            source = get_checkpoint_path(checkpoint)
            reader = tf.train.load_checkpoint(source)
            values = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
        missing = [name for v, name in pairs if name not in values and v.name != _SEED_STATE]
        if missing:
            raise ValueError(f"{source} has no value for the model's variable(s) {missing}: it was "
                             f"not written by training this model.")
        with eager_context.eager_mode():  # Keras' variables are eager, even under a graph
            for variable, name in pairs:
                if name not in values:
                    continue
                if variable._value is None:
                    variable._deferred_initialize()
                variable.assign(np.asarray(values[name]).reshape(tuple(variable.shape)))
        return self.model
