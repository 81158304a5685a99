"""tensorpack's ``graph_builder.model_desc``: ``ModelDesc`` and ``ModelDescBase`` are importable
here (:mod:`tfloop.model_desc`); like tensorpack's, the module exports nothing by ``*``."""
from tfloop.model_desc import ModelDesc, ModelDescBase  # noqa: F401  (importable here)

__all__ = []
