"""ModelExporter: a trained model as a frozen GraphDef or a SavedModel, with no tfloop needed to
load it."""
import errno
import os
import tempfile
import uuid
from typing import Any

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.tfutils.export_files import disk_full_said, scratch_directory, sibling_directory
from tfloop.tfutils.export_frozen import fold_constants, prune
from tfloop.tfutils.export_graph import building_for_export
from tfloop.tfutils.export_savedmodel import eager_in_a_thread, write_saved_model
from tfloop.tfutils.export_signature import choose_inputs, signature_key
from tfloop.tfutils.export_tflite import convert_to_tflite
from tfloop.tfutils.predict_tower import (
    build_predict_tower,
    check_session_init_complete,
    lookup_tensors,
    make_input_placeholders,
)
from tfloop.tfutils.sesscreate import NewSessionCreator
from tfloop.tfutils.tower import TowerFunc
from tfloop.utils import files, logger
from tfloop.utils.fs import atomic_write

__all__ = ["ModelExporter"]


class ModelExporter:
    """Export a model for inference, from a :class:`PredictConfig` (the model and its weights).

    The graph is built like an ``OfflinePredictor``'s, for an export: it holds what the model
    computes and none of the constructs that training in this process needs (the layers'
    empty-batch guard under oneDNN), so deployment tools (TF Serving, TFLite's converter, tf2onnx)
    take it. Every export gives the same outputs as that predictor on the same input.

    A serving signature's inputs are, unless ``input_names`` were given, the model's inputs that
    the outputs depend on (a label only the cost reads is left out, and the log says so).

    Args:
        config (PredictConfig): the model, the input/output names, and ``session_init``.

    Attributes:
        left_out_inputs (list[str]): the model inputs the last serving export left out of its
            signature (no output depends on them).

    Example:
        >>> exporter = ModelExporter(PredictConfig(model=MyModel(), session_init="train_log/run",
        ...                                        output_names=["prob"]))
        >>> exporter.export_compact("model.pb")           # tf.compat.v1.import_graph_def
        >>> exporter.export_serving_version("export/mnist")   # export/mnist/1, for TF Serving
    """

    def __init__(self, config: Any) -> None:
        for attr in ("tower_func", "input_signature", "input_names", "output_names",
                     "session_init", "session_creator"):
            if not hasattr(config, attr):
                raise TypeError(f"ModelExporter needs a PredictConfig, got {config!r}.")
        self.config = config
        self.left_out_inputs: list[str] = []

    @classmethod
    def for_tower_func(cls, tower_func: Any, output_names: list, session_init: Any,
                       input_names: list | None = None) -> "ModelExporter":
        """An exporter of a model given by its ``TowerFunc`` (a trainer's ``tower_func``), for a
        caller without a ``PredictConfig``; the towers ``tower_func`` keeps are left as they are.

        Args:
            tower_func (TowerFunc): the model's tower function and input signature.
            output_names (list[str]): the tensors to export.
            session_init (SessionInit): what to load, e.g. ``DictRestore(weights)``.
            input_names (list[str]): the tensors to feed; None: as ``PredictConfig``'s default.
        """
        return cls(_TowerExportConfig(tower_func, output_names, session_init, input_names))

    def _build_graph(self, who, leave_out_unused):
        """A new graph with the predict tower built for export; the inputs (those the outputs
        need, with ``leave_out_unused`` and no input names given), the outputs, and the names of
        the model inputs left out."""
        config = self.config
        given = getattr(config, "input_names_given", True)
        graph = tf.Graph()
        with graph.as_default(), building_for_export(graph):
            placeholders = make_input_placeholders(config.input_signature)
            tower = build_predict_tower(config.tower_func, placeholders, "")
            inputs = lookup_tensors(tower, config.input_names, "input_names")
            outputs = lookup_tensors(tower, config.output_names, "output_names")
            chosen, left_out = choose_inputs(who, placeholders, inputs, outputs,
                                             config.input_names, config.output_names,
                                             given or not leave_out_unused)
        return graph, chosen, outputs, left_out

    def _build(self, who, leave_out_unused):
        """:meth:`_build_graph`, and a session holding the config's weights."""
        graph, inputs, outputs, left_out = self._build_graph(who, leave_out_unused)
        session_init = self.config.session_init
        with graph.as_default():
            session_init.setup_graph()
            check_session_init_complete(session_init, graph)
        sess = self.config.session_creator.create_session(graph)
        session_init.init(sess)
        return graph, sess, inputs, outputs, left_out

    def serving_signature(self) -> tuple[list[str], list[str]]:
        """The input and output keys the serving signature will have, from the graph alone (no
        weights are loaded): a quick check of the names before an export.

        Raises:
            KeyError: a name is not in the graph (close matches are listed).
            ValueError: an output depends on an input not among ``input_names``.
        """
        _, inputs, outputs, _ = self._build_graph("export_serving", leave_out_unused=True)
        return [signature_key(t) for t in inputs], [signature_key(t) for t in outputs]

    def export_compact(self, filename: str, optimize: bool = True,
                       toco_compatible: bool = False) -> None:
        """Write a frozen GraphDef: variables become constants, constant subgraphs are folded, and
        only what the outputs need is kept. Load it with ``tf.compat.v1.import_graph_def``; the
        input and output tensors keep their names (``"x:0"``, ``"prob:0"``). Every input is kept,
        even one no output reads (as tensorpack did): a loader may feed it.

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
        graph, sess, inputs, outputs, _ = self._build("export_compact", leave_out_unused=False)
        output_ops = [get_op_tensor_name(t.name)[0] for t in outputs]
        input_ops = [get_op_tensor_name(t.name)[0] for t in inputs]
        with sess, _quiet_tf_logs():
            frozen = tfv1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), output_ops + input_ops)
        if optimize:
            frozen = fold_constants(frozen, input_ops, output_ops)
        else:
            frozen = prune(frozen, output_ops + input_ops)
        with disk_full_said("export_compact", filename):
            atomic_write(filename, frozen.SerializeToString())
        logger.info(f"Frozen graph ({len(frozen.node)} nodes) written to {filename}.")

    def export_serving(self, filename: str, tags: list | None = None,
                       signature_name: str = "serving_default") -> None:
        """Write a SavedModel (``saved_model.pb`` + ``variables/``) that loads in plain TF2 eager
        (``tf.saved_model.load(dir).signatures[signature_name](**inputs)``, or
        ``tf.saved_model.load(dir).serve(*inputs)``), that ``saved_model_cli``, TFLite's
        converter and tf2onnx read and that TensorFlow Serving accepts (as a version directory:
        see :meth:`export_serving_version`).

        The signature's input and output keys are the tensors' op names (``"x"``, ``"prob"``;
        ``"op_1"`` for the second output of ``op``); the method is PREDICT. ``serve`` takes the
        inputs in order, positionally, and returns the outputs by key, as the signature does.

        The SavedModel is written to a hidden sibling directory and renamed to ``filename`` once
        complete: a process killed while exporting leaves no partial version directory behind.
        The hidden directory is removed on failure and on SIGTERM (when nothing else handles
        it), and after ``kill -9`` by the next export beside it.

        Args:
            filename (str): the export directory; it must not exist or be empty, and the directory
                holding it must be writable (it is created when missing).
            tags (list[str]): the MetaGraph's tags; ``["serve"]`` by default; they must hold
                ``"serve"``, the tag every serving tool loads.
            signature_name (str): the signature's key. tensorpack's default was
                ``"prediction_pipeline"``; ``"serving_default"`` is what TF Serving and
                ``tf.saved_model.load`` callers look for first.
        """
        self._export_serving(filename, tags, signature_name)

    def _export_serving(self, filename, tags, signature_name):
        """:meth:`export_serving`; returns the graph exported."""
        tags = _serving_tags(tags)
        if not isinstance(signature_name, str) or not signature_name:
            raise ValueError(f"export_serving: signature_name must be a non-empty string, got "
                             f"{signature_name!r}.")
        if files.exists(filename) and (not files.isdir(filename) or files.listdir(filename)):
            raise FileExistsError(f"export_serving: {filename} exists and is not an empty "
                                  "directory; give a new directory (e.g. the next version number "
                                  "for TF Serving) or remove it first.")
        _check_writable_directory(files.dirname(files.resolve(filename)), "export_serving")
        graph, sess, inputs, outputs, self.left_out_inputs = self._build(
            "export_serving", leave_out_unused=True)
        input_keys = {signature_key(t): t for t in inputs}
        output_keys = {signature_key(t): t for t in outputs}
        with sess, _quiet_tf_logs():
            with sibling_directory(filename) as partial, scratch_directory(filename) as scratch, \
                    disk_full_said("export_serving", filename):
                write_saved_model(sess, partial, scratch, input_keys, output_keys, tags,
                                  signature_name)
        logger.info(f"SavedModel written to {filename} (signature {signature_name!r}: inputs "
                    f"{', '.join(input_keys)}; outputs {', '.join(output_keys)}; tags {tags}).")
        return graph

    def export_serving_version(self, model_dir: str, version: int | None = None,
                               tags: list | None = None,
                               signature_name: str = "serving_default") -> str:
        """:meth:`export_serving` into TF Serving's layout: ``<model_dir>/<version>/``.

        TF Serving (``--model_base_path=<model_dir>``) serves the highest numbered version
        directory and moves to a new one when it appears; the export is renamed into place only
        once complete, so TF Serving never loads a partial one.

        Args:
            model_dir (str): the model's base directory (created when missing).
            version (int): the version number (>= 0); None: one above the highest version in
                ``model_dir`` (1 when there is none).
            tags, signature_name: as in :meth:`export_serving`.

        Returns:
            str: the version directory written.
        """
        if version is None:
            version = _next_version(model_dir)
        elif isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ValueError(f"export_serving_version: version must be an int >= 0 (TF Serving "
                             f"reads version directories by number), got {version!r}.")
        target = files.join(model_dir, str(version))
        self.export_serving(target, tags=tags, signature_name=signature_name)
        return target

    def export_tflite(self, filename: str, select_tf_ops: bool = False) -> None:
        """Write a TFLite model (a ``.tflite`` flatbuffer) of the serving signature, converted by
        TFLite's converter from the SavedModel :meth:`export_serving` writes; its signature
        runner is ``"serving_default"``, with the same input and output keys.

        An op the converter cannot convert raises TFLite's ``ConverterError`` whose message begins
        with each such op and the layer that built it (``Igamma (odd/Igamma, in the layer 'odd'
        (Odd))``), followed by TFLite's own message.

        Args:
            filename (str): the file to write (its directory is created).
            select_tf_ops (bool): let the model use TensorFlow ops that TFLite lacks (run by
                TFLite's Flex delegate, which the runtime must link).
        """
        if files.isdir(filename):
            raise IsADirectoryError(f"export_tflite writes one file, but {filename} is a "
                                    "directory; give a file name such as model.tflite.")
        _check_writable_directory(files.dirname(files.resolve(filename)), "export_tflite")
        with tempfile.TemporaryDirectory(prefix="tfloop-tflite-") as scratch:
            saved = os.path.join(scratch, "saved_model")
            graph = self._export_serving(saved, None, "serving_default")
            converted = {}

            def convert():
                converted["model"] = convert_to_tflite(saved, "serving_default", graph,
                                                       select_tf_ops)
            with _quiet_tf_logs():
                if not eager_in_a_thread(convert):
                    raise RuntimeError("export_tflite needs eager execution (TFLite's converter "
                                       "does), which this process disabled.")
        with disk_full_said("export_tflite", filename):
            atomic_write(filename, converted["model"])
        logger.info(f"TFLite model ({len(converted['model'])} bytes) written to {filename}.")


class _TowerExportConfig:
    """What :class:`ModelExporter` reads of a ``PredictConfig``, from a tower function."""

    def __init__(self, tower_func, output_names, session_init, input_names):
        self.input_signature = list(tower_func.input_signature)
        self.tower_func = TowerFunc(tower_func.tower_fn, self.input_signature)
        self.output_names = list(output_names)
        self.input_names_given = input_names is not None
        self.input_names = list(input_names) if input_names is not None else \
            [spec.name for spec in self.input_signature]
        self.session_init = session_init
        self.session_creator = NewSessionCreator()


def _serving_tags(tags):
    if tags is None:
        return [tf.saved_model.SERVING]
    if isinstance(tags, str):
        tags = [tags]
    tags = list(tags)
    if tf.saved_model.SERVING not in tags or not all(isinstance(t, str) and t for t in tags):
        raise ValueError(f"export_serving: tags must be non-empty strings including 'serve' (the "
                         f"tag TF Serving, saved_model_cli and the converters load), got {tags!r}.")
    return tags


def _next_version(model_dir):
    """One above the highest numbered directory in ``model_dir`` (1 when there is none)."""
    if not files.isdir(model_dir):
        return 1
    names = [name.rstrip("/") for name in files.listdir(model_dir)]
    versions = [int(name) for name in names if name.isdigit()]
    return max(versions, default=0) + 1


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
