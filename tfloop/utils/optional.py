"""Import an optional dependency, or fail with the pip command that installs it."""
import importlib

from tfloop.utils.extras import install_command

__all__ = ["require"]


def require(module, extra, user):
    """The imported ``module``, or an ImportError naming the tfloop extra that provides it.

    Args:
        module (str): the module to import, e.g. ``"h5py"``.
        extra (str): the setup.py extra that installs it, e.g. ``"hdf5"``.
        user (str): what needs it, for the message, e.g. ``"HDF5Serializer"``.

    Example:
        >>> h5py = require("h5py", "hdf5", "HDF5Serializer")
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = module.split(".")[0]
        raise ImportError(f"{user} needs the optional package {package!r}, which is not installed "
                          f"({e}): run `{install_command(extra)}`.") from None
