"""Code copied from tensorpack's source into a project (a 3-D ``Conv3D`` made from its
``conv2d.py``, a ``BatchNorm3D``, a custom trainer or callback) imports what tensorpack's own
modules import from each other: every such name resolves at its tfloop path, or is listed below
with the reason it does not. The helpers themselves are checked as those copies call them."""
import ast
import importlib
import os

import numpy as np
import pytest

import tfloop
from tfloop import tfv1 as tf
from tfloop.compat import tf as tf2

TENSORPACK = pytest.importorskip("tensorpack")

# tensorpack's internals that a copy has no use for outside tensorpack's own machinery.
NOT_PROVIDED = {
    "dataflow.imgaug.base.ImagePlaceholder": "a crop's internal placeholder image",
    "dataflow.imgaug.transform.BaseTransform": "tensorpack's pre-0.10 transform base, replaced "
                                               "by Transform",
    "dataflow.remote.dump_dataflow_to_process_queue": "the pipe of tensorpack's multiprocess "
                                                      "predictor",
    "graph_builder.distributed.DistributedParameterServerBuilder": "tensorpack's builders: "
                                                                    "tfloop's trainers build "
                                                                    "their graphs themselves",
    "graph_builder.distributed.DistributedReplicatedBuilder": "as above",
    "graph_builder.training.AsyncMultiGPUBuilder": "as above",
    "graph_builder.training.GraphBuilder": "as above",
    "graph_builder.training.SyncMultiGPUParameterServerBuilder": "as above",
    "graph_builder.training.SyncMultiGPUReplicatedBuilder": "as above",
    "graph_builder.utils.GradientPacker": "the hierarchical all-reduce's packing, for 8 GPUs",
    "graph_builder.utils.OverrideCachingDevice": "the distributed builders' caching device",
    "graph_builder.utils.OverrideToLocalVariable": "a pre-0.9 name of override_to_local_variable",
    "graph_builder.utils.aggregate_grads_colocate": "the builders' gradient aggregation",
    "graph_builder.utils.allreduce_grads_hierarchical": "the hierarchical all-reduce (8 GPUs)",
    "graph_builder.utils.allreduce_grads_naive": "the builders' all-reduce: allreduce_grads",
    "input_source.input_source_base.build_or_reuse_placeholder": "the input sources' placeholder "
                                                                 "cache",
    "predict.base.AsyncPredictorBase": "tensorpack's multiprocess predictor workers",
    "predict.concurrency.MultiProcessQueuePredictWorker": "as above",
    "tfutils.collection.CollectionGuard": "the tower's collection bookkeeping: freeze_collection",
    "tfutils.common.gpu_available_in_session": "a profiler's GPU probe",
    "tfutils.summary.create_image_summary": "the monitors' image encoding: "
                                            "trainer.monitors.put_image",
    "tfutils.varmanip.get_savename_from_varname": "sessinit's variable-name mapping",
    "tfutils.varmanip.is_training_name": "as above",
    "utils.concurrency.OrderedResultGatherProc": "tensorpack's multiprocess predictor",
    "utils.develop.LazyLoader": "tensorpack's lazy import of its own dataset module",
    "utils.serialize.dumps_once": "tensorpack's parallel runners' serializer choice",
    "utils.serialize.loads_once": "as above",
    "utils.utils.find_library_full_path": "collect_env's library probe",
    "train.trainers.DistributedTrainerBase": "the base of tensorpack's distributed trainers, "
                                             "which contrib.keras refuses (tfloop's: "
                                             "DistributedTrainerReplicated, ...)",
    "train.interface.apply_default_prefetch": "launch_train_with_config's own input choice",
    "compat._backport_tensor_spec": "tf.TensorSpec exists in every TensorFlow tfloop runs on",
}


def imported_names():
    """``{"module.name": [tensorpack files importing it]}`` for the names tensorpack's modules
    import from one another (``from ..utils.argtools import get_data_format``)."""
    root = os.path.dirname(TENSORPACK.__file__)
    names = {}
    for directory, _, files in os.walk(root):
        package = ["tensorpack"] + os.path.relpath(directory, root).split(os.sep)
        package = [p for p in package if p != "."]
        for name in files:
            if not name.endswith(".py") or name.endswith("_test.py"):
                continue
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if not (isinstance(node, ast.ImportFrom) and node.level > 0):
                    continue
                base = package[:len(package) - node.level + 1] + (node.module or "").split(".")
                module = ".".join(p for p in base[1:] if p)
                for alias in node.names:
                    if alias.name != "*" and not alias.name.startswith("__"):
                        names.setdefault(f"{module}.{alias.name}", []).append(name)
    return names


def resolves(dotted):
    module, _, name = dotted.rpartition(".")
    tfloop_module = importlib.import_module(f"tfloop.{module}" if module else "tfloop")
    if hasattr(tfloop_module, name):
        return True
    return hasattr(tfloop_module, "__path__") and \
        importlib.util.find_spec(f"{tfloop_module.__name__}.{name}") is not None


def test_every_name_tensorpack_imports_internally_resolves_in_tfloop():
    names = imported_names()
    missing = sorted(n for n in names if not n.rpartition(".")[2].startswith("_")
                     and n not in NOT_PROVIDED and not resolves(n))
    assert missing == []
    assert sorted(n for n in NOT_PROVIDED if n in names and resolves(n)) == []


def test_a_conv3d_copied_from_tensorpacks_conv2d(logdir):
    from tfloop.models.common import VariableHolder, layer_register
    from tfloop.models.tflayer import convert_to_tflayer_args
    from tfloop.utils.argtools import get_data_format, shape2d

    @layer_register(log_shape=True)
    @convert_to_tflayer_args(args_names=["filters", "kernel_size"],
                             name_mapping={"out_channel": "filters", "kernel_shape": "kernel_size",
                                           "stride": "strides"})
    def Conv3D(inputs, filters, kernel_size, strides=1, padding="same",  # noqa: N802
               data_format="channels_last", activation=None, kernel_initializer=None):
        data_format = get_data_format(data_format, keras_mode=False)
        assert data_format == "NHWC" and shape2d(kernel_size) == [kernel_size] * 2
        W = tf.get_variable("W", [kernel_size] * 3 + [inputs.shape[-1], filters],
                            initializer=kernel_initializer)
        out = tf.nn.conv3d(inputs, W, [1] + [strides] * 3 + [1], padding.upper())
        out = tf.identity(activation(out) if activation else out, name="output")
        out.variables = VariableHolder(W=W)
        return out

    with tf2.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4, 4, 4, 2])
        with tfloop.argscope(Conv3D, nl=tf.nn.relu, W_init=tf.ones_initializer()):
            y = Conv3D("conv", x, 3, kernel_shape=3, data_format="NHWC")   # tensorpack's names
        with pytest.raises(TypeError, match="got both out_channel= and filters="):
            Conv3D("bad", x, kernel_size=3, out_channel=3, filters=3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = sess.run(y, {x: np.ones([1, 4, 4, 4, 2], np.float32)})
    assert y.variables.W.op.name == "conv/W" and y.op.name == "conv/output"
    assert out.shape == (1, 4, 4, 4, 3) and out[0, 1, 1, 1, 0] == 27 * 2   # ones everywhere


def test_a_batch_norm_of_a_project_built_on_tensorpacks_helpers():
    from tfloop.models.batch_norm import get_bn_variables, internal_update_bn_ema
    from tfloop.models.shape_utils import StaticDynamicShape

    with tf2.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2, 2, 2, 3])
        shape = StaticDynamicShape(x)
        shape.apply(1, lambda d: d * 2)
        assert shape.get_static() == [None, 4, 2, 2, 3]
        with tfloop.TowerContext("", is_training=True), tf.variable_scope("bn3d"):
            beta, gamma, mean, var = get_bn_variables(3, True, True, tf.zeros_initializer(),
                                                      tf.ones_initializer())
            batch_mean, batch_var = tf.nn.moments(x, [0, 1, 2, 3])
            y = tf.nn.batch_normalization(x, batch_mean, batch_var, beta, gamma, 1e-5)
            y = internal_update_bn_ema(y, batch_mean, batch_var, mean, var, 0.5)
        assert [v.op.name for v in (beta, gamma, mean, var)] == \
            ["bn3d/beta", "bn3d/gamma", "bn3d/mean/EMA", "bn3d/variance/EMA"]
        assert mean in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            data = np.arange(24, dtype=np.float32).reshape([1, 2, 2, 2, 3])
            sess.run(y, {x: data})
            dynamic = sess.run(shape.get_dynamic(0), {x: data})
            np.testing.assert_allclose(sess.run(mean), 0.5 * data.mean(axis=(0, 1, 2, 3)))
    assert dynamic == 1


# Public helpers of tensorpack's utils modules (outside their __all__) that tfloop does not
# provide, and why.
UTILS_NOT_PROVIDED = {
    "concurrency.OrderedContainer": "the ordering buffer of tensorpack's multiprocess predictor",
    "concurrency.OrderedResultGatherProc": "as above",
    "develop.LazyLoader": "tensorpack's lazy import of its own dataset module",
    "loadcaffe.CaffeLayerProcessor": "load_caffe's internals (load_caffe needs Caffe: "
                                     "docs/migrating.md, 'Names that raise when used')",
    "loadcaffe.CAFFE_PROTO_URL": "a download address (tfloop reads local files only)",
    "nvml.NvmlException": "NVMLContext's internals (tfloop does not load NVML: "
                          "docs/migrating.md, 'Names that raise when used')",
    "nvml.NVML": "as above",
    "nvml.NvidiaDevice": "as above",
    "nvml.NVML_ERROR_FUNCTION_NOT_FOUND": "as above",
    "nvml.NvmlErrorCodes": "as above",
    "palette.PALETTE_HEX": "tensorpack's color table; tfloop's PALETTE_RGB is generated",
    "palette.DETECTRON_PALETTE": "as above",
    "serialize.MsgpackSerializer": "tensorpack's serializer back ends: tfloop.utils.serialize's "
                                   "dumps/loads",
    "serialize.PyarrowSerializer": "as above (pyarrow's serialization was removed from pyarrow)",
    "serialize.PickleSerializer": "as above",
    "serialize.MAX_MSGPACK_LEN": "as above",
    "utils.find_library_full_path": "collect_env's library probe",
    "viz.Canvas": "the canvas of interactive_imshow's patch browser, internal to stack_patches",
}


def tensorpack_utils_helpers():
    """``module.name`` of every public function, class and constant defined in tensorpack's
    ``utils`` modules."""
    root = os.path.join(os.path.dirname(TENSORPACK.__file__), "utils")
    helpers = set()
    for name in sorted(os.listdir(root)):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        with open(os.path.join(root, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            defined = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else \
                [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
            helpers.update(f"{name[:-3]}.{n}" for n in defined
                           if not n.startswith("_") and n != "STATICA_HACK")
    return helpers


def test_every_helper_of_tensorpacks_utils_is_in_tfloop_or_explained():
    helpers = tensorpack_utils_helpers()
    missing = sorted(h for h in helpers if h not in UTILS_NOT_PROVIDED
                     and not resolves(f"utils.{h}"))
    assert missing == []
    assert sorted(h for h in UTILS_NOT_PROVIDED if h not in helpers or resolves(f"utils.{h}")) == []
