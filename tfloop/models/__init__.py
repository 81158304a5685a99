"""Layers for tower functions that share variables across towers (tensorpack's names)."""
from tfloop.models.batch_norm import BatchNorm, BatchRenorm
from tfloop.models.conv2d import Conv2D, Conv2DTranspose, Deconv2D
from tfloop.models.fc import FullyConnected
from tfloop.models.keras_graph import KerasTowerScope
from tfloop.models.keras_model import KerasModelDesc
from tfloop.models.layer_norm import InstanceNorm, LayerNorm
from tfloop.models.linearwrap import LinearWrap
from tfloop.models.nonlin import BNReLU, Maxout, PReLU
from tfloop.models.pool import AvgPooling, FixedUnPooling, GlobalAvgPooling, MaxPooling
from tfloop.models.registry import VariableHolder, disable_layer_logging, layer_register
from tfloop.models.regularize import (
                                    Dropout,
                                    l1_regularizer,
                                    l2_regularizer,
                                    regularize_cost,
                                    regularize_cost_from_collection,
)
from tfloop.models.shapes import ConcatWith
from tfloop.models.tflayer import rename_tflayer_get_variable
from tfloop.tfutils.argscope import (
                                    argscope,
                                    enable_argscope_for_function,
                                    enable_argscope_for_module,
                                    get_arg_scope,
)

__all__ = ["argscope", "get_arg_scope", "enable_argscope_for_function",
           "enable_argscope_for_module", "layer_register", "VariableHolder",
           "disable_layer_logging", "rename_tflayer_get_variable", "Conv2D", "Conv2DTranspose",
           "Deconv2D", "FullyConnected", "MaxPooling", "AvgPooling", "GlobalAvgPooling",
           "FixedUnPooling", "BatchNorm", "BatchRenorm", "LayerNorm", "InstanceNorm", "BNReLU",
           "PReLU", "Maxout", "ConcatWith", "LinearWrap", "Dropout", "regularize_cost",
           "regularize_cost_from_collection", "l1_regularizer", "l2_regularizer", "KerasTowerScope",
           "KerasModelDesc"]
