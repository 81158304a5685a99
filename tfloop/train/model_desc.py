"""tensorpack's ``train.model_desc``: ``ModelDesc`` and ``ModelDescBase``
(:mod:`tfloop.model_desc`)."""
from tfloop.model_desc import ModelDesc, ModelDescBase

__all__ = ["ModelDesc", "ModelDescBase"]
