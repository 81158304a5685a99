"""The checkpoint savers at tensorpack's module path (``tensorpack.callbacks.saver``):
:class:`ModelSaver` (in ``model_saver``), :class:`MinSaver` and :class:`MaxSaver` (in
``best_saver``)."""
from tfloop.callbacks.best_saver import MaxSaver, MinSaver
from tfloop.callbacks.model_saver import ModelSaver

__all__ = ["ModelSaver", "MinSaver", "MaxSaver"]
