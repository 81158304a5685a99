"""tfloop: a tensorpack-style training loop for TensorFlow graphs.

One ``session.run`` per training step; everything else is a callback. The public API is flat::

    from tfloop import ModelDesc, TrainConfig, SimpleTrainer, launch_train_with_config, ModelSaver

The names are loaded on first use (PEP 562), so ``import tfloop`` and the ``tfloop`` command
start without importing TensorFlow; the first public name asked for loads them all.
"""
import importlib
from typing import TYPE_CHECKING

from tfloop import tensorpack_paths
from tfloop.version import __version__  # noqa: F401  (tfloop.__version__)

tensorpack_paths.install()  # tensorpack's paths without a module of their own (tfloop.libinfo)

if TYPE_CHECKING:  # what a type checker sees; at run time __getattr__ loads the same names
    from tfloop.callbacks import *  # noqa: F403
    from tfloop.compat import *  # noqa: F403
    from tfloop.dataflow import *  # noqa: F403
    from tfloop.input import *  # noqa: F403
    from tfloop.input.dataset import DatasetInput as TFDatasetInput  # noqa: F401
    from tfloop.input.remap import *  # noqa: F403
    from tfloop.input.tensor_input import *  # noqa: F403
    from tfloop.model_desc import *  # noqa: F403
    from tfloop.models import *  # noqa: F403
    from tfloop.monitors import *  # noqa: F403
    from tfloop.predict import *  # noqa: F403
    from tfloop.resume import *  # noqa: F403
    from tfloop.tfutils import *  # noqa: F403
    from tfloop.train import *  # noqa: F403
    from tfloop.utils import *  # noqa: F403
    from tfloop.utils import logger  # noqa: F401

# The modules whose __all__ make up the flat API, in the order a star import of each would bind
# them (a later module's name wins). tfloop.input_source is tensorpack's path (a row of
# tensorpack_paths.PATHS), read here as `from tensorpack import *` reads it: the input sources
# with tensorpack's names for some (TFDatasetInput).
_API_MODULES = ("tfloop.utils", "tfloop.compat", "tfloop.callbacks", "tfloop.dataflow",
                "tfloop.input", "tfloop.input_source",
                "tfloop.model_desc", "tfloop.models", "tfloop.monitors", "tfloop.predict",
                "tfloop.resume",
                "tfloop.tfutils", "tfloop.train")
# Names bound besides those __all__s: tfloop.tf and tfloop.tfv1 stay reachable as attributes,
# but `from tfloop import *` never binds tf (a script's own `tf` keeps its meaning).
_EXTRA = {"tf": "tfloop.compat", "tfv1": "tfloop.compat", "logger": "tfloop.utils"}
_NOT_STARRED = {"tf"}
# Subpackages and modules bound by name, as tensorpack's star import binds its own.
_SUBMODULES = ("callbacks", "compat", "dataflow", "graph_builder", "input_source", "libinfo",
               "models", "predict", "resume", "tfutils", "train", "utils")
_loaded = False


def _load():
    global _loaded
    if _loaded:
        return
    namespace = globals()
    for module_name in _API_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            namespace[name] = getattr(module, name)
    for name, module_name in _EXTRA.items():
        namespace[name] = getattr(importlib.import_module(module_name), name)
    for name in _SUBMODULES:
        namespace[name] = importlib.import_module(f"tfloop.{name}")
    _loaded = True


def _public_names():
    _load()
    names = []
    for module_name in _API_MODULES:
        names.extend(getattr(importlib.import_module(module_name), "__all__", ()))
    names.extend(_EXTRA)
    names.extend(_SUBMODULES)
    return sorted(set(names) - _NOT_STARRED)


def __getattr__(name):
    if name == "__all__":
        return _public_names()
    if name.startswith("__"):
        raise AttributeError(name)
    _load()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module 'tfloop' has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(_public_names()))
