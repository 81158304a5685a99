"""ServingModule: an exported SavedModel as a ``tf.Module``, the model type MLflow's
``tensorflow`` flavour logs.

``mlflow.tensorflow.log_model`` takes a Keras model or a ``tf.Module``; the object
``tf.saved_model.load`` returns is neither (MLflow answers ``Unknown model type:
AutoTrackable``). Logged as a ``tf.Module``, the model is saved again by ``tf.saved_model.save``
and ``mlflow.pyfunc.load_model(...).predict(array)`` calls it with one tensor: the module is
callable with the signature's inputs, positionally, and returns its output (a dict of them when
there are several).
"""
import os
from typing import Any

from tfloop.compat import tf

__all__ = ["ServingModule"]


def _ordered_input_specs(loaded, signature):
    """The signature's inputs as ``[(key, TensorSpec)]``, in the export's order (that of its
    ``serve`` endpoint, when it has one; else by key)."""
    by_key = dict(signature.structured_input_signature[1])
    serve = getattr(loaded, "serve", None)
    if serve is not None and hasattr(serve, "input_signature") and serve.input_signature:
        names = [spec.name for spec in serve.input_signature]
        if sorted(names) == sorted(by_key):
            return [(name, by_key[name]) for name in names]
    return sorted(by_key.items())


class ServingModule(tf.Module):
    """A ``tf.Module`` around an exported SavedModel, calling its serving signature: what
    ``mlflow.tensorflow.log_model`` accepts (it refuses the object ``tf.saved_model.load``
    returns).

    Called with the signature's inputs, positionally, in the export's order (one input: the
    array ``mlflow.pyfunc`` passes), it returns the output tensor, or a dict of them by key when
    the signature has several. Inputs must have the signature's dtypes.

    Args:
        saved_model: an export's directory (``ModelExporter.export_serving``, ``tfloop export``)
            or the object ``tf.saved_model.load`` returned for it.
        signature_name (str): the signature to call.

    Attributes:
        input_keys (tuple[str]): the signature's input keys, in call order.
        input_specs (tuple[tf.TensorSpec]): the inputs' specs, in that order.
        output_keys (tuple[str]): its output keys, sorted.
        output_specs (tuple[tf.TensorSpec]): the outputs' specs, in that order.

    Example:
        >>> module = ServingModule("export/mnist/1")
        >>> mlflow.tensorflow.log_model(module, name="model", registered_model_name="mnist")
        >>> mlflow.pyfunc.load_model("models:/mnist/1").predict(images)   # the probabilities
    """

    def __init__(self, saved_model: Any, signature_name: str = "serving_default") -> None:
        super().__init__(name="tfloop_serving_module")
        if isinstance(saved_model, (str, os.PathLike)):
            saved_model = tf.saved_model.load(os.fspath(saved_model))
        signatures = getattr(saved_model, "signatures", None)
        if signatures is None:
            raise TypeError(f"ServingModule needs a SavedModel directory or what "
                            f"tf.saved_model.load returned, got {saved_model!r}.")
        if signature_name not in signatures:
            raise ValueError(f"ServingModule: the SavedModel has no signature {signature_name!r}; "
                             f"it has {', '.join(sorted(signatures)) or 'none'}.")
        self.model = saved_model
        self._signature = signatures[signature_name]
        specs = _ordered_input_specs(saved_model, self._signature)
        self.input_keys = tuple(key for key, _ in specs)
        self.input_specs = tuple(tf.TensorSpec(spec.shape, spec.dtype, name=key)
                                 for key, spec in specs)
        outputs = self._signature.structured_outputs
        self.output_keys = tuple(sorted(outputs))
        self.output_specs = tuple(outputs[key] for key in self.output_keys)
        self.__call__.get_concrete_function(*self.input_specs)

    @tf.function(autograph=False)
    def __call__(self, *inputs):
        outputs = self._signature(**dict(zip(self.input_keys, inputs)))
        if len(outputs) == 1:
            return next(iter(outputs.values()))
        return outputs
