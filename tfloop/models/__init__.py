"""Layers for tower functions that share variables across towers (tensorpack's names)."""
from tfloop.models.layers import BatchNorm, Conv2D, Dropout, FullyConnected, MaxPooling

__all__ = ["BatchNorm", "Conv2D", "Dropout", "FullyConnected", "MaxPooling"]
