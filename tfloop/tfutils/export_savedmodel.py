"""Writing an export's SavedModel: a TF2 SavedModel with the serving signature and ``serve``.

tfloop builds and restores the model in a ``tf.compat.v1`` graph and session. That graph is
written as a SavedModel by TF1's builder into a scratch directory, loaded back in eager mode
and saved again by ``tf.saved_model.save`` around a ``tf.Module`` whose ``serve`` function runs
the signature: the result has the signature TF Serving, ``saved_model_cli``, TFLite's converter
and tf2onnx read, and the ``serve`` endpoint Keras's ``model.export`` gives, with the variables
in ``variables/``.
"""
import os
import threading

from tfloop.compat import tf, tfv1
from tfloop.utils import logger

__all__ = ["write_saved_model", "eager_in_a_thread"]


def _v1_signature(inputs, outputs):
    utils = tfv1.saved_model.utils
    return tfv1.saved_model.signature_def_utils.build_signature_def(
        inputs={key: utils.build_tensor_info(t) for key, t in inputs.items()},
        outputs={key: utils.build_tensor_info(t) for key, t in outputs.items()},
        method_name=tfv1.saved_model.signature_constants.PREDICT_METHOD_NAME)


def _write_v1(sess, directory, inputs, outputs, tags, signature_name):
    """TF1's SavedModel of the session's graph."""
    builder = tfv1.saved_model.Builder(directory)
    builder.add_meta_graph_and_variables(
        sess, list(tags), signature_def_map={signature_name: _v1_signature(inputs, outputs)},
        strip_default_attrs=True)
    builder.save()


def _serving_module(loaded, inputs):
    """A ``tf.Module`` holding the loaded model, with ``serve(*inputs) -> {key: output}``."""
    signature = loaded.signatures["serving_default"]
    keys = list(inputs)

    def serve(*tensors):
        return signature(**dict(zip(keys, tensors)))

    module = tf.Module()
    module.model = loaded
    module.serve = tf.function(serve, autograph=False, input_signature=[
        tf.TensorSpec(t.shape, t.dtype, name=key) for key, t in inputs.items()])
    return module


def eager_in_a_thread(fn):
    """Run ``fn()`` in a new thread, where TensorFlow starts in eager mode whatever graph the
    calling thread has as default (a trainer's, in a callback); what it raises is raised here.

    Returns:
        bool: whether it ran: False when eager execution is disabled in the process
        (``tf.compat.v1.disable_eager_execution()``).
    """
    outcome = {}

    def run():
        try:
            if tf.executing_eagerly():
                outcome["result"] = fn()
        except BaseException as e:  # re-raised in the calling thread
            outcome["error"] = e

    thread = threading.Thread(target=run, name="tfloop-export", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return "result" in outcome


def write_saved_model(sess, directory, scratch, inputs, outputs, tags, signature_name):
    """Write the session's graph to ``directory`` as a TF2 SavedModel.

    Without eager execution (a program that called ``tf.compat.v1.disable_eager_execution()``),
    TF1's SavedModel is written there instead: the same signature, no ``serve``.

    Args:
        sess (tf.compat.v1.Session): holds the graph and the variables' values.
        directory (str): a new directory.
        scratch (str): an empty directory for the intermediate TF1 SavedModel.
        inputs, outputs (dict[str, tf.Tensor]): the signature's tensors by key, in order.
        tags (list[str]): the MetaGraph's tags; they hold ``"serve"``.
        signature_name (str): the signature's key.
    """
    v1_dir = os.path.join(scratch, "v1")
    with sess.graph.as_default():
        _write_v1(sess, v1_dir, inputs, outputs, [tf.saved_model.SERVING], "serving_default")

    def save_tf2():
        loaded = tf.saved_model.load(v1_dir)
        module = _serving_module(loaded, inputs)
        extra = [t for t in tags if t != tf.saved_model.SERVING]
        tf.saved_model.save(module, directory,
                            signatures={signature_name: module.serve.get_concrete_function()},
                            options=tf.saved_model.SaveOptions(extra_tags=extra or None))
        return True

    if eager_in_a_thread(save_tf2):
        return
    with sess.graph.as_default():
        _write_v1(sess, directory, inputs, outputs, tags, signature_name)
    logger.info("Eager execution is disabled in this process: the SavedModel is TF1's, with "
                "its signature and no serve() endpoint.")
