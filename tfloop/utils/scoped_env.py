"""Process environment variables set for as long as some scope needs them, then restored.

Some settings of TensorFlow are read from the environment only (its mixed-precision graph
rewriter's lists, see :mod:`tfloop.tfutils.precision`). :func:`scoped_environ` sets such
variables for the time a ``with`` block runs, and gives the process its own values back when no
block needs them any more. Blocks may overlap, in one thread or several: each variable keeps the
value of the latest block still running, and gets its value from before the first block once
the last one ends (unset if it was unset).
"""
import contextlib
import os
import threading
from collections.abc import Iterator, Mapping

__all__ = ["scoped_environ", "value_before"]

_lock = threading.Lock()
# For each variable set by a running block: its value before the first block, and the blocks'
# (block, value) in the order they started.
_before: dict[str, str | None] = {}
_blocks: dict[str, list[tuple[object, str]]] = {}


@contextlib.contextmanager
def scoped_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set the environment variables ``values`` while the ``with`` block runs.

    Example:
        >>> with scoped_environ({"TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_EMULATE_FP16": "0"}):
        ...     sess.run(step)          # TensorFlow's rewriter reads the variable here
    """
    if not values:
        yield
        return
    block = object()
    with _lock:
        for name, value in values.items():
            if name not in _blocks:
                _before[name] = os.environ.get(name)
                _blocks[name] = []
            _blocks[name].append((block, value))
            os.environ[name] = value
    try:
        yield
    finally:
        with _lock:
            for name in values:
                _end_block(name, block)


def _end_block(name: str, block: object) -> None:
    others = [entry for entry in _blocks[name] if entry[0] is not block]
    if others:
        _blocks[name] = others
        os.environ[name] = others[-1][1]
        return
    del _blocks[name]
    before = _before.pop(name)
    if before is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = before


def value_before(name: str) -> str | None:
    """The value ``name`` has outside every running block: what the process set itself."""
    with _lock:
        return _before[name] if name in _blocks else os.environ.get(name)
