"""ModelExporter: a trained model as a frozen GraphDef or a SavedModel, with no tfloop needed to
load it."""
import errno
import os
import tempfile
import uuid
from typing import Any

import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.tfutils.export_files import disk_full_said, sibling_directory
from tfloop.tfutils.predict_tower import (
    build_predict_tower,
    check_session_init_complete,
    lookup_tensors,
    make_input_placeholders,
)
from tfloop.utils import files, logger
from tfloop.utils.fs import atomic_write

__all__ = ["ModelExporter"]

_INPUT_OPS = frozenset(["Placeholder", "PlaceholderWithDefault", "PlaceholderV2"])


def _signature_key(tensor):
    op_name, _ = get_op_tensor_name(tensor.name)
    index = tensor.value_index
    return op_name if index == 0 else f"{op_name}_{index}"


def _fold_constants(graph_def, keep, outputs):
    """Replace every single-output, stateless subgraph that depends on no input by a constant,
    then keep only what ``outputs`` need (and the ``keep`` nodes)."""
    graph = tf.Graph()
    with graph.as_default():
        tfv1.import_graph_def(graph_def, name="")
    foldable = set()
    for op in graph.get_operations():
        if op.type in _INPUT_OPS or op.op_def.is_stateful or len(op.outputs) != 1 or \
                op.outputs[0].dtype in (tf.resource, tf.variant, tf.string):
            continue
        if all(t.op.name in foldable for t in op.inputs) and \
                all(c.name in foldable for c in op.control_inputs):
            foldable.add(op.name)
    needed = set(outputs)
    for op in graph.get_operations():
        if op.name not in foldable:
            needed.update(t.op.name for t in op.inputs if t.op.name in foldable)
    to_fold = sorted(n for n in needed if n in foldable and
                     graph.get_operation_by_name(n).type != "Const")
    values = {}
    if to_fold:
        with tfv1.Session(graph=graph) as sess:
            values = dict(zip(to_fold, sess.run([graph.get_tensor_by_name(n + ":0")
                                                 for n in to_fold])))
    folded = tfv1.GraphDef()
    folded.versions.CopyFrom(graph_def.versions)
    folded.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        if node.name in values:
            value = np.asarray(values[node.name])
            const = folded.node.add(name=node.name, op="Const")
            const.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
            const.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
        else:
            folded.node.add().CopyFrom(node)
    return _prune(folded, list(outputs) + list(keep))


def _prune(graph_def, roots):
    nodes = {node.name: node for node in graph_def.node}
    reachable, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in reachable:
            continue
        reachable.add(name)
        for dep in nodes[name].input:
            stack.append(dep.lstrip("^").split(":")[0])
    pruned = tfv1.GraphDef()
    pruned.versions.CopyFrom(graph_def.versions)
    pruned.library.CopyFrom(graph_def.library)
    pruned.node.extend(node for node in graph_def.node if node.name in reachable)
    return pruned


class ModelExporter:
    """Export a model for inference, from a :class:`PredictConfig` (the model and its weights).

    The graph is built like an ``OfflinePredictor``'s; both exports give the same outputs as that
    predictor on the same input.

    Args:
        config (PredictConfig): the model, the input/output names, and ``session_init``.

    Example:
        >>> exporter = ModelExporter(PredictConfig(model=MyModel(), session_init="train_log/run",
        ...                                        input_names=["x"], output_names=["prob"]))
        >>> exporter.export_compact("model.pb")           # tf.compat.v1.import_graph_def
        >>> exporter.export_serving("export/1")           # tf.saved_model.load, TF Serving
    """

    def __init__(self, config: Any) -> None:
        for attr in ("tower_func", "input_signature", "input_names", "output_names",
                     "session_init", "session_creator"):
            if not hasattr(config, attr):
                raise TypeError(f"ModelExporter needs a PredictConfig, got {config!r}.")
        self.config = config

    def _build(self):
        """A new graph with the predict tower, and a session holding the config's weights."""
        config = self.config
        graph = tf.Graph()
        with graph.as_default():
            placeholders = make_input_placeholders(config.input_signature)
            tower = build_predict_tower(config.tower_func, placeholders, "")
            inputs = lookup_tensors(tower, config.input_names, "input_names")
            outputs = lookup_tensors(tower, config.output_names, "output_names")
            config.session_init.setup_graph()
            check_session_init_complete(config.session_init, graph)
        sess = config.session_creator.create_session(graph)
        config.session_init.init(sess)
        return graph, sess, inputs, outputs

    def export_compact(self, filename: str, optimize: bool = True,
                       toco_compatible: bool = False) -> None:
        """Write a frozen GraphDef: variables become constants, constant subgraphs are folded, and
        only what the outputs need is kept. Load it with ``tf.compat.v1.import_graph_def``; the
        input and output tensors keep their names (``"x:0"``, ``"prob:0"``).

        Args:
            filename (str): the ``.pb`` file to write (its directory is created).
            optimize (bool): fold constant subgraphs (else only freeze and prune).
            toco_compatible (bool): accepted for tensorpack compatibility; no effect.
        """
        del toco_compatible
        if files.isdir(filename):
            raise IsADirectoryError(f"export_compact writes one file, but {filename} is a "
                                    "directory; give a file name such as model.pb.")
        directory = files.dirname(files.resolve(filename))
        _check_writable_directory(directory, "export_compact")
        graph, sess, inputs, outputs = self._build()
        output_ops = [get_op_tensor_name(t.name)[0] for t in outputs]
        input_ops = [get_op_tensor_name(t.name)[0] for t in inputs]
        with sess, _quiet_tf_logs():
            # The inputs are kept even when no output needs them (a label): loaders feed them.
            frozen = tfv1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), output_ops + input_ops)
        if optimize:
            frozen = _fold_constants(frozen, input_ops, output_ops)
        else:
            frozen = _prune(frozen, output_ops + input_ops)
        with disk_full_said("export_compact", filename):
            atomic_write(filename, frozen.SerializeToString())
        logger.info(f"Frozen graph ({len(frozen.node)} nodes) written to {filename}.")

    def export_serving(self, filename: str, tags: list | None = None,
                       signature_name: str = "serving_default") -> None:
        """Write a SavedModel (``saved_model.pb`` + ``variables/``) that loads in plain TF2 eager
        (``tf.saved_model.load(dir).signatures[signature_name](**inputs)``) and that TensorFlow
        Serving accepts (export to ``<model dir>/<version>``).

        The signature's input and output keys are the tensors' op names (``"x"``, ``"prob"``;
        ``"op_1"`` for the second output of ``op``); the method is PREDICT.

        The SavedModel is written to a hidden sibling directory and renamed to ``filename`` once
        complete: a process killed while exporting leaves no partial version directory behind.
        The hidden directory is removed on failure and on SIGTERM (when nothing else handles
        it), and after ``kill -9`` by the next export beside it.

        Args:
            filename (str): the export directory; it must not exist or be empty, and the directory
                holding it must be writable (it is created when missing).
            tags (list[str]): the MetaGraph's tags; ``["serve"]`` by default.
            signature_name (str): the signature's key. tensorpack's default was
                ``"prediction_pipeline"``; ``"serving_default"`` is what TF Serving and
                ``tf.saved_model.load`` callers look for first.
        """
        if tags is None:
            tags = [tf.saved_model.SERVING]
        if isinstance(tags, str):
            tags = [tags]
        if not isinstance(signature_name, str) or not signature_name:
            raise ValueError(f"export_serving: signature_name must be a non-empty string, got "
                             f"{signature_name!r}.")
        if files.exists(filename) and (not files.isdir(filename) or files.listdir(filename)):
            raise FileExistsError(f"export_serving: {filename} exists and is not an empty "
                                  "directory; give a new directory (e.g. the next version number "
                                  "for TF Serving) or remove it first.")
        _check_writable_directory(files.dirname(files.resolve(filename)), "export_serving")
        graph, sess, inputs, outputs = self._build()
        with graph.as_default(), sess, _quiet_tf_logs():
            utils = tfv1.saved_model.utils
            signature = tfv1.saved_model.signature_def_utils.build_signature_def(
                inputs={_signature_key(t): utils.build_tensor_info(t) for t in inputs},
                outputs={_signature_key(t): utils.build_tensor_info(t) for t in outputs},
                method_name=tfv1.saved_model.signature_constants.PREDICT_METHOD_NAME)
            with sibling_directory(filename) as partial, \
                    disk_full_said("export_serving", filename):
                builder = tfv1.saved_model.Builder(partial)
                builder.add_meta_graph_and_variables(sess, list(tags),
                                                     signature_def_map={signature_name: signature},
                                                     strip_default_attrs=True)
                builder.save()
        logger.info(f"SavedModel written to {filename} (signature {signature_name!r}, tags "
                    f"{list(tags)}).")


def _check_writable_directory(directory, who):
    """Create ``directory`` when missing; raise the OSError naming it unless it is writable (before
    the graph is built, so a bad path fails at once)."""
    try:
        if files.exists(directory) and not files.isdir(directory):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        files.makedirs(directory)
        if files.is_url(directory):
            probe_path = files.join(directory, f".export-probe-{uuid.uuid4().hex[:12]}")
            atomic_write(probe_path, b"")
            files.remove(probe_path)
        else:
            tempfile.NamedTemporaryFile(dir=directory, prefix=".export-probe-").close()
    except OSError as e:
        raise type(e)(f"{who}: cannot write in {directory} ({e.strerror or e}); give a directory "
                      "you can write to.") from None


class _quiet_tf_logs:
    """Hide TensorFlow's deprecation warnings about the v1 freezing API for a moment."""

    def __enter__(self):
        self._logger = tf.get_logger()
        self._level = self._logger.level
        self._logger.setLevel("ERROR")

    def __exit__(self, *exc):
        self._logger.setLevel(self._level)
        return False
