"""Reading checkpoints: finding the latest complete one, loading its values, reporting a restore.

A checkpoint is named by its *prefix* (``<dir>/model-1200``); TensorFlow writes ``<prefix>.index``,
``<prefix>.data-NNNNN-of-MMMMM`` and ``<prefix>.meta``, then updates the ``checkpoint`` state file.
A process killed while saving can leave a prefix whose files are missing or short: such a
checkpoint is *incomplete* and never chosen.
"""
import glob
import os
import re

import numpy as np
from tabulate import tabulate

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.utils import files, logger
from tfloop.utils.checkpoint_files import checkpoint_step, list_checkpoint_files
from tfloop.utils.coerce import tensorpack_keywords

__all__ = ["get_checkpoint_path", "checkpoint_reader", "find_latest_checkpoint", "list_checkpoints",
           "checkpoint_step",
           "is_complete_checkpoint", "load_chkpt_vars", "is_optimizer_slot", "restore_report",
           "SessionUpdate", "dump_session_params", "save_checkpoint_vars", "get_all_checkpoints",
           "load_checkpoint_vars", "save_chkpt_vars"]

_DATA_SUFFIX = re.compile(r"\.data-\d{5}-of-(\d{5})$")
_FILE_SUFFIX = re.compile(r"(\.index|\.meta|\.data-\d{5}-of-\d{5}|\.callbacks\.json)$")
_SLOT = re.compile(r"/(Adam|Adam_1|Momentum|RMSProp|RMSProp_1|Adagrad|AdagradDA|Adadelta|"
                   r"Adadelta_1|Ftrl|Ftrl_1|ProximalAdagrad|GradientDescent)$"
                   r"|^(beta1_power|beta2_power)(_\d+)?$")


def checkpoint_reader(prefix):
    """A reader of the checkpoint ``prefix`` (a local path or a URL). TensorFlow's
    ``tf.train.load_checkpoint`` would take a prefix for a directory where the filesystem answers
    that any prefix of a file name is one (``ram://``)."""
    return tfv1.train.NewCheckpointReader(prefix)


def _data_files(prefix):
    if not files.is_url(prefix):
        return sorted(glob.glob(glob.escape(prefix) + ".data-?????-of-?????"))
    base = files.basename(prefix) + ".data-"
    return sorted(files.join(files.dirname(prefix), name)
                  for name in _names_in(files.dirname(prefix))
                  if name.startswith(base) and _DATA_SUFFIX.search(name))


def _expected_data_bytes(reader):
    """Bytes the data files must hold at least: the size of every fixed-size tensor."""
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    total = 0
    for name, dtype in dtypes.items():
        if dtype in (tf.string, tf.variant, tf.resource):
            continue
        total += int(np.prod(shapes[name], dtype=np.int64)) * dtype.size
    return total


def is_complete_checkpoint(prefix):
    """Whether every file of checkpoint ``prefix`` is present and long enough to be read.

    Returns:
        (bool, str): the verdict and, when incomplete, why.
    """
    if not files.isfile(prefix + ".index"):
        return False, f"no {files.basename(prefix) + '.index'} file"
    try:
        reader = checkpoint_reader(prefix)
    except (tf.errors.OpError, ValueError) as e:
        return False, f"its index cannot be read ({getattr(e, 'message', e)})"
    data = _data_files(prefix)
    shards = {int(_DATA_SUFFIX.search(f).group(1)) for f in data}
    if not data or len(shards) != 1 or len(data) != shards.pop():
        return False, f"data files missing (found {[files.basename(f) for f in data] or 'none'})"
    size = sum(files.size(f) for f in data)
    expected = _expected_data_bytes(reader)
    if size < expected:
        return False, f"data files hold {size} bytes, fewer than the {expected} its index needs"
    return True, ""


def _names_in(directory):
    try:
        return files.listdir(directory)
    except OSError:
        return []


def list_checkpoints(directory):
    """Every checkpoint prefix in ``directory`` (complete or not), oldest first (see
    :func:`~tfloop.utils.checkpoint_files.list_checkpoint_files`).

    Prefixes come from the ``checkpoint`` state file and from the ``*.index`` files present, so a
    stale or missing state file does not hide a checkpoint.
    """
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError) as e:
        logger.warning(f"Checkpoint state file in {directory} is unreadable ({e}); looking at the "
                       "files instead.")
        state = None
    named = [] if state is None else \
        list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path]
    return [c.prefix for c in list_checkpoint_files(directory, named)]


def find_latest_checkpoint(directory, accept=None):
    """The newest complete checkpoint in ``directory``, or None.

    Args:
        accept (callable): ``accept(prefix) -> bool``: an extra condition a checkpoint must meet
            (e.g. that its callback state was written too).

    Incomplete checkpoints newer than the one chosen are named in a warning.
    """
    skipped = []
    for prefix in reversed(list_checkpoints(directory)):
        ok, why = is_complete_checkpoint(prefix)
        if ok and accept is not None and not accept(prefix):
            ok, why = False, "its companion files were not written"
        if ok:
            if skipped:
                logger.warning(f"Skipped incomplete checkpoint(s) in {directory}: "
                               f"{'; '.join(skipped)}. Using {files.basename(prefix)}.")
            return prefix
        skipped.append(f"{files.basename(prefix)} ({why})")
    if skipped:
        logger.warning(f"No complete checkpoint in {directory}: {'; '.join(skipped)}.")
    return None


@tensorpack_keywords(model_path="path")
def get_checkpoint_path(path):
    """Resolve ``path`` to the prefix of a complete checkpoint.

    Args:
        path (str): a checkpoint prefix (``train_log/run/model-1200``), one of its files
            (``model-1200.index``, ``.data-00000-of-00001``, ``.meta``), the ``checkpoint`` state
            file, or a directory (its latest complete checkpoint).

    Raises:
        FileNotFoundError: nothing usable at ``path``; the message says what was found.
        ValueError: the checkpoint at ``path`` is incomplete (e.g. written by a killed process).
    """
    path = os.fspath(path)
    path = files.resolve(path).rstrip("/") if files.is_url(path) else \
        os.path.normpath(os.path.expanduser(path))
    if files.basename(path) == "checkpoint" and files.isfile(path):
        path = files.dirname(path)
    if files.isdir(path):
        prefix = find_latest_checkpoint(path)
        if prefix is None:
            raise FileNotFoundError(
                f"No complete checkpoint in directory {path}: expected files like "
                "model-<step>.index and model-<step>.data-00000-of-00001.")
        return prefix
    prefix = _FILE_SUFFIX.sub("", path)
    if not files.exists(prefix + ".index"):
        parent = files.dirname(prefix) or "."
        near = sorted(name for name in _names_in(parent) if not name.startswith(".") and
                      name.startswith(files.basename(prefix)) and name.endswith(".index"))
        if not near and files.isdir(parent):
            near = [files.basename(p) for p in list_checkpoints(parent)]
        nearby = f" Checkpoints nearby: {', '.join(near)}." if near else ""
        raise FileNotFoundError(
            f"No checkpoint at {path}: give a checkpoint prefix (model-<step>), one of its files, "
            f"or a directory holding checkpoints.{nearby}")
    ok, why = is_complete_checkpoint(prefix)
    if not ok:
        raise ValueError(f"Checkpoint {prefix} is incomplete: {why}. Use an earlier checkpoint or "
                         "its directory (which resolves to the latest complete one).")
    return prefix


@tensorpack_keywords(model_path="path")
def load_chkpt_vars(path):
    """Every tensor of a checkpoint as a dict ``{name: numpy array}`` (iterator states left out)."""
    prefix = get_checkpoint_path(path)
    reader = checkpoint_reader(prefix)
    return {name: reader.get_tensor(name)
            for name, dtype in reader.get_variable_to_dtype_map().items()
            if dtype not in (tf.variant, tf.resource)}


def is_optimizer_slot(name):
    """Whether a variable name is an optimizer's slot or accumulator (``w/Momentum``,
    ``beta1_power``)."""
    return bool(_SLOT.search(name))


def _shape(shape):
    return "-" if shape is None else str(list(shape))


def restore_report(graph_only, checkpoint_only, mismatched=(), source=""):
    """One table of what a restore did not match; optimizer slots are summarised as counts.

    Args:
        graph_only (dict): ``{name: shape}`` in the graph but not in the checkpoint.
        checkpoint_only (dict): ``{name: shape}`` in the checkpoint but not in the graph.
        mismatched (list): ``(name, graph description, checkpoint description)`` for variables in
            both whose shape or dtype differ.
        source (str): what was restored from, for the title.

    Returns:
        str: the table with a title line, or "" when everything matched.
    """
    rows = []
    for where, names in (("graph only", graph_only), ("checkpoint only", checkpoint_only)):
        slots = sorted(n for n in names if is_optimizer_slot(n))
        for name in sorted(names):
            if name not in slots:
                rows.append([where, name, _shape(names[name]) if where == "graph only" else "",
                             _shape(names[name]) if where != "graph only" else ""])
        if slots:
            rows.append([where, f"{len(slots)} optimizer slot variable(s)", "", ""])
    for name, in_graph, in_checkpoint in mismatched:
        rows.append(["mismatch", name, in_graph, in_checkpoint])
    if not rows:
        return ""
    title = f"Variables not restored{' from ' + source if source else ''}:"
    return title + "\n" + tabulate(rows, headers=["status", "variable", "graph", "checkpoint"])


def get_all_checkpoints(dir: str, prefix: str = "model") -> list:
    """Every complete checkpoint ``<dir>/<prefix>-<step>``, as ``(checkpoint prefix, step)``
    sorted by step. Each prefix can be given to :func:`load_checkpoint_vars` or ``SaverRestore``.

    Example:
        >>> for path, step in get_all_checkpoints("train_log/run"):
        ...     print(step, load_checkpoint_vars(path)["fc/W"].mean())
    """
    return [(c.prefix, c.step) for c in list_checkpoint_files(dir)
            if c.step is not None and c.name.rsplit("-", 1)[0] == prefix
            and is_complete_checkpoint(c.prefix)[0]]


def load_checkpoint_vars(path: str) -> dict:
    """Every variable of a checkpoint (prefix, file or directory) or of a ``.npz`` file, as
    ``{variable name: numpy array}`` (names without ``:0``).

    Example:
        >>> values = load_checkpoint_vars("train_log/run/model-1200")
    """
    path = os.fspath(path)
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as data:
            return {get_op_tensor_name(k)[0]: data[k] for k in data.files}
    return load_chkpt_vars(path)


def save_checkpoint_vars(dic: dict, path: str) -> None:
    """Save ``{variable name: value}`` as a ``.npz`` file (when ``path`` ends with ``.npz``) or as
    a TensorFlow checkpoint with prefix ``path``; both load with ``SmartInit(path)``.

    Example:
        >>> save_checkpoint_vars({"fc/W": w, "fc/b": b}, "pretrained.npz")
    """
    path = os.fspath(path)
    if path.endswith(".npy"):
        raise ValueError(f"save_checkpoint_vars: {path} ends with .npy, which holds one array; "
                         f"use a .npz name or a checkpoint prefix.")
    values = {get_op_tensor_name(k)[0]: np.asarray(v) for k, v in dic.items()}
    logger.info(f"Saving {len(values)} variable(s) to {path}: {', '.join(sorted(values))}.")
    if path.endswith(".npz"):
        np.savez_compressed(path, **values)
        return
    with tf.Graph().as_default():
        variables = [tfv1.Variable(value, name=name) for name, value in values.items()]
        with tfv1.Session() as sess:
            sess.run(tfv1.variables_initializer(variables))
            tfv1.train.Saver(variables).save(sess, path, write_meta_graph=False)


save_chkpt_vars = save_checkpoint_vars  # tensorpack's older name


def dump_session_params(path: str) -> None:
    """Save the values of the model's variables (trainable and ``MODEL_VARIABLES``, global ones
    only) in the default session with :func:`save_checkpoint_vars`.

    Example:
        >>> with trainer.sess.as_default():
        ...     dump_session_params("train_log/run/model.npz")
    """
    sess = tfv1.get_default_session()
    if sess is None:
        raise RuntimeError("dump_session_params reads the default session: call it inside "
                           "`with sess.as_default():` (callbacks run inside one).")
    global_names = {v.name for v in tfv1.global_variables()}
    variables = []
    for v in tfv1.trainable_variables() + tfv1.get_collection(tfv1.GraphKeys.MODEL_VARIABLES):
        if v.name in global_names and v not in variables:
            variables.append(v)
    save_checkpoint_vars(dict(zip([v.name for v in variables], sess.run(variables))), path)


def _castable(value_dtype, var_dtype):
    source = tf.as_dtype(value_dtype)
    if source.is_floating and var_dtype.is_floating:
        return True
    return source.is_integer and var_dtype.is_integer and \
        var_dtype.min <= source.min and var_dtype.max >= source.max


class SessionUpdate:
    """Load numpy values into variables of a session (through their initializers: no new ops, so
    it works on a finalized graph).

    Args:
        sess (tf.compat.v1.Session): the session.
        vars_to_update (list[tf.Variable]): the variables that may be updated.
        ignore_mismatch (bool): skip, with a warning, a value whose size does not fit its variable
            (instead of raising).

    Example:
        >>> SessionUpdate(sess, tf.compat.v1.global_variables()).update({"fc/W:0": w})
    """

    def __init__(self, sess, vars_to_update, ignore_mismatch=False):
        self.sess = sess
        self.name_map = {v.name: v for v in vars_to_update}
        self.ignore_mismatch = bool(ignore_mismatch)

    @staticmethod
    def relaxed_value_for_var(value, var, ignore_mismatch=False):
        """``value`` made to fit ``var``: reshaped when only the shape differs (same size), cast
        between float types or up between integer types.

        Returns:
            numpy.ndarray: the value, or None when it cannot fit and ``ignore_mismatch``.
        """
        value = np.asarray(value)
        name = var.op.name
        shape = tuple(var.shape.as_list())
        if value.shape != shape:
            if int(np.prod(shape)) != value.size:
                message = (f"Cannot load an array of shape {value.shape} into variable {name!r} "
                           f"of shape {shape}.")
                if ignore_mismatch:
                    logger.warning(message)
                    return None
                raise ValueError(message + " Pass ignore_mismatch=True to skip it.")
            logger.warning(f"The value for {name!r} is reshaped from {value.shape} to {shape}.")
            value = value.reshape(shape)
        var_dtype = var.dtype.base_dtype
        if value.dtype != var_dtype.as_numpy_dtype:
            if not _castable(value.dtype, var_dtype):
                raise ValueError(f"Variable {name!r} has dtype {var_dtype.name} but the value has "
                                 f"dtype {value.dtype}, which cannot be cast safely.")
            logger.warning(f"The value for {name!r} is cast from {value.dtype} to "
                           f"{var_dtype.name}.")
            value = value.astype(var_dtype.as_numpy_dtype)
        return value

    def update(self, prms):
        """Assign the values of ``prms`` (``{variable name: value}``, names as ``v.name``, e.g.
        ``"fc/W:0"``) in one session call."""
        unknown = sorted(name for name in prms if name not in self.name_map)
        if unknown:
            raise KeyError(f"SessionUpdate: {unknown} are not among the variables to update "
                           f"(e.g. {sorted(self.name_map)[:5]}).")
        fetches, feeds = [], {}
        for name, value in prms.items():
            var = self.name_map[name]
            value = self.relaxed_value_for_var(value, var, self.ignore_mismatch)
            if value is not None:
                fetches.append(var.initializer)
                feeds[var.initializer.inputs[1]] = value
        if fetches:
            self.sess.run(fetches, feed_dict=feeds)
