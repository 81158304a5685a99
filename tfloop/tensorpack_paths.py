"""tensorpack's module paths that have no module of their own in tfloop, in one table.

A tensorpack script moves to tfloop by changing ``tensorpack`` to ``tfloop`` in its imports, so
tfloop answers at every public path of tensorpack 0.11. Most paths are tfloop's own modules. The
others name a place where tfloop lays a concept out differently: ``tensorpack.callbacks.saver``
held ``ModelSaver``, ``MinSaver`` and ``MaxSaver``, which tfloop keeps in ``model_saver.py`` and
``best_saver.py``. Those paths are the rows of :data:`PATHS`: what each holds, taken from the
modules that define it. ``import tfloop`` puts :class:`TensorpackPathFinder` on
``sys.meta_path``, which makes a row's module the first time it is imported (and no sooner: it
imports nothing until then). The module binds the real objects, so ``isinstance`` and pickling
see one class (its ``__module__`` is the defining module), and ``__all__`` gives
``from path import *`` tensorpack's names. A real package that has such paths below it
(``tfloop.callbacks``) gives them as attributes on first use, as tensorpack's packages do.

tfloop's own code imports the defining modules, never these paths; type checkers see the
defining modules only (``tests/test_tensorpack_paths.py`` checks both, and that no other module
of tfloop is only imports).

Example:
    >>> from tfloop.callbacks.saver import ModelSaver      # made from PATHS on first import
    >>> ModelSaver.__module__
    'tfloop.callbacks.model_saver'
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = ["PATHS", "EVERY_NAME", "TensorpackPath", "TensorpackPathFinder", "install"]

EVERY_NAME = "*"  # in a row's names: every name of the module's __all__, as ``import *`` binds


class TensorpackPath(NamedTuple):
    """What one of tensorpack's paths holds.

    Args:
        what (str): the path's content in a few words (the module's docstring says it).
        names (dict[str, list[str]]): {defining module: the names it gives the path}, in the
            order of ``__all__``; ``[EVERY_NAME]`` gives every name of the module's ``__all__``.
        aliases (dict[str, str]): {tensorpack's name: the name above it stands for}.
        star (bool): whether ``from path import *`` binds the names; False where tensorpack's
            module has an empty ``__all__`` and the names are importable by name only.

    Example:
        >>> TensorpackPath("the version", {"tfloop.version": ["__version__"]})
    """

    what: str
    names: Mapping[str, Sequence[str]]
    aliases: Mapping[str, str] = {}
    star: bool = True


def _empty(what: str) -> TensorpackPath:
    """A path whose tensorpack module has no public name (tfloop keeps it importable)."""
    return TensorpackPath(what, {})


# tfloop's path for each tensorpack module that tfloop has no module for.
PATHS: dict[str, TensorpackPath] = {
    "tfloop.libinfo": TensorpackPath(
        "tfloop's version (``__version__``; ``__git_version__``, which tensorpack's callbacks "
        "log, is the same)", {"tfloop.version": ["__version__"]},
        aliases={"__git_version__": "__version__"}),
    "tfloop.callbacks.inference_runner": TensorpackPath(
        "the inference runners: one tower, and a tower per device", {
            "tfloop.callbacks.inference_loop": ["InferenceRunnerBase", "InferenceRunner"],
            "tfloop.callbacks.inference_parallel": ["DataParallelInferenceRunner"]}),
    "tfloop.callbacks.misc": TensorpackPath(
        "the time left, the debugging shell and the stats sender", {
            "tfloop.callbacks.throughput": ["EstimatedTimeLeft"],
            "tfloop.callbacks.debug": ["InjectShell"],
            "tfloop.callbacks.sendstat": ["SendStat"]}),
    "tfloop.callbacks.monitor": TensorpackPath(
        "the monitor backends, which tfloop keeps in ``tfloop.monitors``", {
            "tfloop.monitors": ["CometMLMonitor", "JSONWriter", "MonitorBase", "Monitors",
                                "ScalarPrinter", "SendMonitorData", "TFEventWriter"]}),
    "tfloop.callbacks.param": TensorpackPath(
        "the hyper-parameters and the callbacks that set them", {
            "tfloop.callbacks.param_base": ["HyperParam", "GraphVarParam", "ObjAttrParam",
                                            "HyperParamSetter"],
            "tfloop.callbacks.param_human": ["HumanHyperParamSetter"],
            "tfloop.callbacks.param_schedule": ["HyperParamSetterWithFunc",
                                                "ScheduledHyperParamSetter"],
            "tfloop.callbacks.param_stat": ["StatMonitorParamSetter"]}),
    "tfloop.callbacks.saver": TensorpackPath(
        "the checkpoint savers", {
            "tfloop.callbacks.model_saver": ["ModelSaver"],
            "tfloop.callbacks.best_saver": ["MinSaver", "MaxSaver"]}),
    "tfloop.callbacks.stats": _empty(
        "no public name: tensorpack moved its content to ``callbacks.misc`` and "
        "``callbacks.graph``"),
    "tfloop.graph_builder.distributed": _empty(
        "no public name: tfloop's distributed trainers build their graphs themselves "
        "(``tfloop.train.distributed``)"),
    "tfloop.graph_builder.model_desc": TensorpackPath(
        "``ModelDesc``, ``ModelDescBase`` and tensorpack 0.9's ``InputDesc``, importable by "
        "name; ``*`` binds nothing",
        {"tfloop.model_desc": ["ModelDesc", "ModelDescBase", "InputDesc"]}, star=False),
    "tfloop.input_source": TensorpackPath(
        "the input sources (those of ``tfloop.input``) and tensorpack's names for some", {
            "tfloop.input": [EVERY_NAME],
            "tfloop.input.tensor_input": ["TensorInput"],
            "tfloop.input.remap": ["PlaceholderInput", "FeedfreeInput", "remap_input_source"]},
        aliases={"TFDatasetInput": "DatasetInput"}),
    "tfloop.input_source.input_source": TensorpackPath(
        "the input sources (those of ``tfloop.input``) and tensorpack's names for some", {
            "tfloop.input": [EVERY_NAME],
            "tfloop.input.tensor_input": ["TensorInput"],
            "tfloop.input.remap": ["PlaceholderInput", "FeedfreeInput"]},
        aliases={"TFDatasetInput": "DatasetInput"}),
    "tfloop.input_source.input_source_base": TensorpackPath(
        "the input source base class and ``remap_input_source``", {
            "tfloop.input.base": ["InputSource"],
            "tfloop.input.remap": ["remap_input_source"]}),
    "tfloop.models.common": TensorpackPath(
        "the layer registry", {
            "tfloop.models.registry": ["VariableHolder", "disable_layer_logging",
                                       "layer_register"],
            "tfloop.models.tflayer": ["rename_tflayer_get_variable"]}),
    "tfloop.predict.base": TensorpackPath(
        "the predictor classes", {
            "tfloop.tfutils.predictor": ["PredictorBase", "OnlinePredictor"],
            "tfloop.predict.offline": ["OfflinePredictor"]}),
    "tfloop.predict.dataset": TensorpackPath(
        "the dataset predictors: in this process and in worker processes", {
            "tfloop.predict.dataset_base": ["DatasetPredictorBase", "SimpleDatasetPredictor",
                                            "MultiTowerDatasetPredictor"],
            "tfloop.predict.multiprocess": ["MultiProcessDatasetPredictor"]}),
    "tfloop.train.model_desc": TensorpackPath(
        "``ModelDesc`` and ``ModelDescBase``",
        {"tfloop.model_desc": ["ModelDesc", "ModelDescBase"]}),
    "tfloop.train.trainers": TensorpackPath(
        "every trainer class", {
            "tfloop.train.tower": ["NoOpTrainer", "SimpleTrainer"],
            "tfloop.train.single_cost": ["QueueInputTrainer"],
            "tfloop.train.multigpu": ["SyncMultiGPUTrainer", "SyncMultiGPUTrainerReplicated",
                                      "SyncMultiGPUTrainerParameterServer"],
            "tfloop.train.async_multigpu": ["AsyncMultiGPUTrainer"],
            "tfloop.train.distributed": ["DistributedTrainerParameterServer",
                                         "DistributedTrainerReplicated"],
            "tfloop.train.horovod": ["HorovodTrainer", "BytePSTrainer"]}),
    "tfloop.train.utility": _empty(
        "no public name: tensorpack's internal helpers (the module no longer imports in "
        "tensorpack 0.11 itself)"),
    "tfloop.utils.compatible_serialize": TensorpackPath(
        "tensorpack's older name for ``tfloop.utils.serialize``",
        {"tfloop.utils.serialize": ["dumps", "loads"]}),
}


def _children_of_packages() -> dict[str, list[str]]:
    """{package: the last names of its paths in :data:`PATHS`}."""
    children: dict[str, list[str]] = {}
    for path in sorted(PATHS):
        package, _, name = path.rpartition(".")
        children.setdefault(package, []).append(name)
    return children


_CHILDREN = _children_of_packages()


def _serve_children(module: types.ModuleType, children: list[str]) -> None:
    """Give ``module`` (a package) its paths of :data:`PATHS` as attributes, imported on first
    use (PEP 562), keeping a ``__getattr__`` the package defines itself."""
    package = module.__name__
    own = module.__dict__.get("__getattr__")

    def __getattr__(name: str) -> Any:
        if name in children:
            return importlib.import_module(f"{package}.{name}")
        if own is not None:
            return own(name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]


def _bind(module: types.ModuleType, path: TensorpackPath) -> None:
    """Bind the names of ``path`` in ``module``, from the modules that define them."""
    names = []
    for source, wanted in path.names.items():
        real = importlib.import_module(source)
        for name in (real.__all__ if list(wanted) == [EVERY_NAME] else wanted):
            setattr(module, name, getattr(real, name))
            names.append(name)
    for alias, name in path.aliases.items():
        setattr(module, alias, getattr(module, name))
        names.append(alias)
    module.__all__ = names if path.star else []  # type: ignore[attr-defined]


class _PathLoader(importlib.abc.Loader):
    """Makes the module of one of :data:`PATHS`."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        path = PATHS[module.__name__]
        tensorpack = "tensorpack" + module.__name__[len("tfloop"):]
        module.__doc__ = (f"tensorpack's ``{tensorpack}`` at tfloop's path: {path.what} "
                          "(from tfloop/tensorpack_paths.py).")
        _bind(module, path)
        if module.__name__ in _CHILDREN:
            _serve_children(module, _CHILDREN[module.__name__])


class _PackageLoader(importlib.abc.Loader):
    """A real package's own loader, which also gives the package its paths of :data:`PATHS` as
    attributes; everything else (source, resources, file name) is the real loader's."""

    def __init__(self, loader: importlib.abc.Loader, children: list[str]) -> None:
        self._loader = loader
        self._children = children

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        _serve_children(module, self._children)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class TensorpackPathFinder(importlib.abc.MetaPathFinder):
    """The import hook for :data:`PATHS`: makes a path's module when it is imported, and finds a
    real package holding such paths through the other finders, giving it a loader that adds them
    as attributes.

    Example:
        >>> install()                       # what ``import tfloop`` does
        >>> import tfloop.callbacks.saver   # found here
    """

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        children = _CHILDREN.get(fullname)
        if fullname in PATHS:  # a package of PATHS (input_source) has only PATHS below it
            return importlib.machinery.ModuleSpec(fullname, _PathLoader(), origin=__file__,
                                                  is_package=bool(children))
        if not children:
            return None
        real = self._real_spec(fullname, path, target)
        if real is not None and real.loader is not None:
            real.loader = _PackageLoader(real.loader, children)
        return real

    def _real_spec(self, fullname: str, path: Sequence[str] | None,
                   target: types.ModuleType | None) -> importlib.machinery.ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    return spec
        return None


def install() -> None:
    """Put the :class:`TensorpackPathFinder` first on ``sys.meta_path`` (once).

    Example:
        >>> install()
    """
    if not any(isinstance(finder, TensorpackPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, TensorpackPathFinder())
