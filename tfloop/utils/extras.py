"""Importing the package of an optional integration, with an error that names the extra."""
import importlib
from types import ModuleType

__all__ = ["import_extra"]


def import_extra(module: str, extra: str, user: str) -> ModuleType:
    """Import ``module``, the package behind tfloop's ``extra``; ``user`` names what needs it.

    Raises:
        ImportError: the package is missing; the message names ``pip install tfloop[extra]``.

    Example:
        >>> mlflow = import_extra("mlflow", "mlflow", "MLflowMonitor")
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{user} needs the {module.split('.')[0]} package, which is not "
                          f"installed ({e}): install it with `pip install tfloop[{extra}]` (or "
                          f"`pip install {extra}`).") from None
