"""Session initializers: what to load into the variables after the session is created.

Checkpoints (:class:`SaverRestore`, :class:`SaverRestoreRelaxed`), dicts and ``.npz`` files
(:class:`DictRestore`), several in order (:class:`ChainInit`), and :func:`SmartInit`, which picks
one for a path, dict or list. Every restore logs one table of the variables it could not match
(see :func:`restore_report`). The protocol and the variable matching are in
:mod:`tfloop.tfutils.sessinit_base`.
"""
import contextlib
import os
import zipfile

import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.tfutils.sessinit_base import (
    AssignFromValues,
    JustCurrentSession,
    MatchingInit,
    SessionInit,
    warn_initial_values,
)
from tfloop.tfutils.varmanip import checkpoint_reader, get_checkpoint_path
from tfloop.utils import logger
from tfloop.utils.coerce import tensorpack_keywords
from tfloop.utils.fs import display_path

__all__ = ["SessionInit", "JustCurrentSession", "SaverRestore", "SaverRestoreRelaxed",
           "DictRestore", "ChainInit", "SmartInit", "get_model_loader"]


@contextlib.contextmanager
def _reading_checkpoint(path):
    """Turn TensorFlow's DataLossError (a checkpoint file changed after it was written) into an
    error naming the checkpoint's files."""
    try:
        yield
    except tf.errors.DataLossError as e:
        lines = [line.strip() for line in (e.message or "").splitlines() if line.strip()]
        detail = next((line for line in lines if "checksum" in line.lower() or
                       "corrupt" in line.lower()), lines[0] if lines else "")
        detail = detail.split(": stored ")[0]  # the checksums themselves say nothing more
        directory, base = os.path.split(path)
        files = sorted(n for n in os.listdir(directory or ".")
                       if n == base + ".index" or n.startswith(base + ".data-"))
        raise ValueError(
            f"Checkpoint {path} is corrupt ({detail}): its files {', '.join(files)} were changed "
            "after they were written (a bad disk, an interrupted copy). Use an earlier "
            f"checkpoint, e.g. another model-<step> in {directory or '.'}.") from None


class SaverRestore(MatchingInit):
    """Restore variables from a checkpoint with a ``tf.compat.v1.train.Saver``.

    Variables are matched by name; a variable whose shape or dtype differs is an error (use
    :class:`SaverRestoreRelaxed` to skip it). Graph saveables such as an input iterator's state
    (``GraphKeys.SAVEABLE_OBJECTS``) are restored too when the checkpoint has them.

    Args:
        model_path (str): a checkpoint prefix (``model-1200``), one of its files, or a directory
            (its latest complete checkpoint).
        prefix (str): the checkpoint's variable ``W`` is loaded into the graph's ``prefix/W``.
        ignore (list[str]): graph variable names not to load (e.g. ``["learning_rate"]``).

    Example:
        >>> TrainConfig(..., session_init=SaverRestore("train_log/run1", ignore=["learning_rate"]))
    """

    def __init__(self, model_path, prefix=None, ignore=()):
        if isinstance(ignore, str):
            ignore = [ignore]
        self.path = get_checkpoint_path(model_path)
        self.prefix = prefix.rstrip("/") if prefix else None
        self.ignore = list(ignore)
        self.source_name = self.path
        self.restored_saveables = []

    def _read_source(self):
        with _reading_checkpoint(self.path):
            reader = checkpoint_reader(self.path)
        shapes = reader.get_variable_to_shape_map()
        dtypes = reader.get_variable_to_dtype_map()
        saveables = {}
        for obj in tfv1.get_collection(tfv1.GraphKeys.SAVEABLE_OBJECTS):
            names = [spec.name for spec in getattr(obj, "specs", [])]
            if names and all(n in shapes for n in names):
                saveables[obj.name] = obj
        source = {k: (shapes[k], dtypes[k]) for k in shapes
                  if dtypes[k] != tf.variant and not any(k.startswith(s) for s in saveables)}
        return reader, source, saveables

    def _setup_graph(self):
        _, source, saveables = self._read_source()
        pairs = self._match(source, self.prefix, self.ignore)
        self.restored_saveables = sorted(saveables)
        var_list = dict(pairs)
        var_list.update(saveables)
        self._saver = tfv1.train.Saver(var_list=var_list, reshape=False, allow_empty=True,
                                       name="restore") if var_list else None

    def _run_init(self, sess):
        if self._saver is not None:
            with _reading_checkpoint(self.path):
                self._saver.restore(sess, self.path)
        saveables = f" and {', '.join(self.restored_saveables)}" if self.restored_saveables else ""
        logger.detail(f"Restored {len(self.restored)} variable(s){saveables} from "
                      f"{display_path(self.path)}.")


class SaverRestoreRelaxed(AssignFromValues, SaverRestore):
    """Like :class:`SaverRestore`, but variables whose shape differs are skipped and listed, and
    float values are cast to the variable's float dtype (e.g. float64 -> float32).

    Example:
        >>> session_init = SaverRestoreRelaxed("pretrained/model-5000")   # a new head is fine
    """

    relaxed = True

    def _setup_graph(self):
        _, source, _ = self._read_source()
        self._build_assigns(self._match(source, self.prefix, self.ignore))

    def _run_init(self, sess):
        with _reading_checkpoint(self.path):
            reader = checkpoint_reader(self.path)
            values = {key: reader.get_tensor(key) for key, _, _, _ in self._assigns}
        self._feed(sess, values)


class DictRestore(AssignFromValues):
    """Load variables from a dict ``{variable name: numpy value}`` (names with or without ``:0``).

    Args:
        variable_dict (dict): the values.
        ignore_mismatch (bool): skip (and list) values whose shape does not fit instead of
            raising. Values are always cast to the variable's dtype within floats or within ints.

    Example:
        >>> DictRestore({"fc/W": np.zeros([784, 10], np.float32)})
    """

    def __init__(self, variable_dict, ignore_mismatch=False):
        if not isinstance(variable_dict, dict):
            raise TypeError("DictRestore needs a dict {variable name: value}, got "
                            f"{type(variable_dict).__name__!r}.")
        self.values = {}
        for name, value in variable_dict.items():
            if not isinstance(name, str):
                raise TypeError(f"DictRestore keys must be variable names (str), got {name!r}.")
            arr = np.asarray(value)
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"DictRestore value for {name!r} is not numeric: {value!r}; give a "
                                "number or a numpy array of numbers.")
            self.values[get_op_tensor_name(name)[0]] = arr
        self.relaxed = bool(ignore_mismatch)
        self.source_name = f"a dict of {len(self.values)} value(s)"

    def _setup_graph(self):
        source = {k: (v.shape, tf.as_dtype(v.dtype)) for k, v in self.values.items()}
        self._build_assigns(self._match(source))

    def _run_init(self, sess):
        self._feed(sess, self.values)

    def _castable(self, src, dst):
        return (src.is_floating and dst.is_floating) or (src.is_integer and dst.is_integer)


class ChainInit(SessionInit):
    """Run several initializers in order; a later one overwrites what an earlier one loaded.

    Example:
        >>> ChainInit([SaverRestore("pretrained/backbone"), DictRestore({"head/W": w})])
    """

    def __init__(self, sess_inits):
        self.inits = [SmartInit(s) for s in sess_inits]

    def _setup_graph(self):
        matching = [s for s in self.inits if isinstance(s, MatchingInit)]
        for s in matching:
            s.in_chain = True
        for s in self.inits:
            s.setup_graph()
        if matching and len(matching) == len(self.inits):
            missing = set.intersection(*(set(s.missing) for s in matching))
            warn_initial_values(sorted(missing))

    def check_holds_the_model(self) -> None:
        messages = [s.foreign_message for s in self.inits if isinstance(s, MatchingInit)]
        if messages and len(messages) == len(self.inits) and all(messages):
            raise ValueError(messages[0])

    def _run_init(self, sess):
        for s in self.inits:
            s.init(sess)

    def __str__(self):
        return f"ChainInit({', '.join(str(s) for s in self.inits)})"


def _load_npz(path):
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path} is not a readable .npz file ({type(e).__name__}: {e}); a model "
                         "file maps variable names to arrays, saved with "
                         "np.savez(path, **values).") from None
    if isinstance(loaded, np.ndarray):
        raise ValueError(f"{path} holds a single array; a model file must map variable names to "
                         "arrays (save it with np.savez(path, **values)).")
    with loaded as data:
        try:
            return {k: data[k] for k in data.files}
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            raise ValueError(f"{path} is damaged ({type(e).__name__}: {e}): read it again from "
                             "its source.") from None


@tensorpack_keywords(filename="obj")
def get_model_loader(obj, *, ignore_mismatch=False):
    """A loader for a model file: :class:`DictRestore` for ``.npz``, :class:`SaverRestore` for a
    checkpoint (prefix, file or directory); anything else :func:`SmartInit` takes.

    Args:
        obj: the model file path (or what :func:`SmartInit` accepts).
        ignore_mismatch (bool): skip (and list) variables whose shape differs instead of raising.

    Example:
        >>> session_init = get_model_loader("pretrained/model.npz")
    """
    return SmartInit(obj, ignore_mismatch=ignore_mismatch)


def SmartInit(obj, ignore_mismatch=False):
    """Turn ``obj`` into a :class:`SessionInit`.

    Args:
        obj: None or ``''`` (no initialization: keep the initial values, as tensorpack's
            ``SmartInit`` does), a SessionInit (as is), a checkpoint path or
            directory, a ``.npz`` file, a dict ``{name: value}``, or a list of these (chained).
        ignore_mismatch (bool): skip variables whose shape differs instead of raising.

    Example:
        >>> TrainConfig(..., session_init=SmartInit("train_log/pretrain"))
    """
    if obj is None or (isinstance(obj, str) and obj == ""):
        return JustCurrentSession()
    if isinstance(obj, SessionInit):
        return obj
    if isinstance(obj, dict):
        return DictRestore(obj, ignore_mismatch=ignore_mismatch)
    if isinstance(obj, (list, tuple)):
        return ChainInit([SmartInit(o, ignore_mismatch) for o in obj])
    if isinstance(obj, (str, os.PathLike)):
        path = os.path.expanduser(os.fspath(obj))
        if path.endswith(".npz"):
            if not os.path.isfile(path):
                raise FileNotFoundError(f"No file {path}: give an existing .npz file of "
                                        "{variable name: array}.")
            return DictRestore(_load_npz(path), ignore_mismatch=ignore_mismatch)
        if ignore_mismatch:
            return SaverRestoreRelaxed(path)
        return SaverRestore(path)
    raise TypeError(f"Cannot initialize a session from {obj!r} ({type(obj).__name__}): give None, "
                    "a SessionInit, a checkpoint path or directory, a .npz file, a dict "
                    "{name: value}, or a list of these.")
