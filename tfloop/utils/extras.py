"""Importing the package of an optional integration, with an error that names the extra."""
import importlib
from types import ModuleType

from tfloop.version import DISTRIBUTION

__all__ = ["import_extra", "install_command"]


def install_command(extra: str, upgrade: bool = False) -> str:
    """The pip command that installs tfloop with its ``extra`` (quoted for any shell).

    Example:
        >>> install_command("hdf5")
        "pip install 'tfloop-train[hdf5]'"
    """
    return f"pip install {'-U ' if upgrade else ''}'{DISTRIBUTION}[{extra}]'"


def import_extra(module: str, extra: str, user: str) -> ModuleType:
    """Import ``module``, the package behind tfloop's ``extra``; ``user`` names what needs it.

    Raises:
        ImportError: the package is missing; the message names ``install_command(extra)``.

    Example:
        >>> mlflow = import_extra("mlflow", "mlflow", "MLflowMonitor")
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{user} needs the {module.split('.')[0]} package, which is not "
                          f"installed ({e}): install it with `{install_command(extra)}` (or "
                          f"`pip install {extra}`).") from None
