"""tensorpack's ``graph_builder.distributed`` (its parameter-server and replicated builders,
with no public name). tfloop's distributed trainers build their graphs themselves:
:mod:`tfloop.train.distributed`."""
__all__ = []
