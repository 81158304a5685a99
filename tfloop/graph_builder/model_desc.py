"""tensorpack's ``graph_builder.model_desc``: ``ModelDesc`` and ``ModelDescBase`` are importable
here (:mod:`tfloop.model_desc`), and tensorpack 0.9's ``InputDesc``; like tensorpack 0.11's, the
module exports nothing by ``*``."""
from tfloop.model_desc import InputDesc, ModelDesc, ModelDescBase  # noqa: F401  (importable here)

__all__ = []
