"""The callbacks and monitors every training run gets unless told otherwise."""
from tfloop.callbacks.graph import RunUpdateOps

__all__ = ["default_callbacks", "default_monitors"]


def default_callbacks():
    """Callbacks added to the user's list (replace them with ``extra_callbacks=``)."""
    return [RunUpdateOps()]


def default_monitors():
    """Monitor backends used when ``monitors=`` is not given."""
    return []
