"""tensorpack's ``models.common``: the layer registry's names (:mod:`tfloop.models.registry`)
and ``rename_tflayer_get_variable`` (:mod:`tfloop.models.tflayer`)."""
from tfloop.models.registry import VariableHolder, disable_layer_logging, layer_register
from tfloop.models.tflayer import rename_tflayer_get_variable

__all__ = ["VariableHolder", "disable_layer_logging", "layer_register",
           "rename_tflayer_get_variable"]
