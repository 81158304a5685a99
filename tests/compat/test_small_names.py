"""tensorpack's small helpers and aliases under tfloop: what each returns or is."""
import re

import numpy as np

import tfloop
from tfloop.compat import tf


def test_version_and_env_info():
    assert tfloop.libinfo.__version__ == tfloop.__version__
    assert tfloop.get_tf_version_tuple() == tuple(int(p) for p in tf.__version__.split(".")[:2])
    info = tfloop.collect_env_info()
    assert "Python" in info and "numpy" in info and "tensorflow" in info
    assert re.search(rf"^tfloop +{re.escape(tfloop.__version__)}$", info, re.M), info


def test_default_session_config_with_a_memory_fraction():
    config = tfloop.get_default_sess_config(0.5)
    assert config.allow_soft_placement and config.gpu_options.allow_growth
    assert config.gpu_options.per_process_gpu_memory_fraction == 0.5


def test_aliases_are_the_same_objects():
    assert tfloop.DumpTensor is tfloop.DumpTensors
    assert tfloop.DumpParamAsImage is tfloop.DumpTensorAsImage
    assert tfloop.GPUMemoryTracker is tfloop.PeakMemoryTracker
    assert tfloop.TFDatasetInput is tfloop.DatasetInput
    assert tfloop.graph_builder.ModelDesc is tfloop.ModelDesc
    assert tfloop.DEFAULT_CALLBACKS is tfloop.default_callbacks


def test_tf_local_cli_debug_hook_builds_tfdbg_hook_in_setup_graph():
    cb = tfloop.TFLocalCLIDebugHook()
    cb.add_tensor_filter("never", lambda datum, tensor: False)
    with tf.Graph().as_default():
        hook = cb._factory()
    assert type(hook).__name__ == "LocalCLIDebugHook"


def test_helpers_that_copied_tensorpack_code_imports():
    from tfloop.graph_builder.utils import (
        merge_grad_list,
        override_to_local_variable,
        split_grad_list,
    )
    from tfloop.libinfo import __git_version__
    from tfloop.models.tflayer import map_common_tfargs
    from tfloop.models.utils import disable_autograph
    from tfloop.tfutils.model_utils import get_shape_str
    from tfloop.tfutils.summary import create_scalar_summary
    from tfloop.tfutils.tower import PredictTowerContext, TrainTowerContext

    assert __git_version__ == tfloop.__version__
    assert map_common_tfargs({"data_format": "NCHW", "W_init": 1, "b_init": 2}) == {
        "data_format": "channels_first", "kernel_initializer": 1, "bias_initializer": 2}
    summary = create_scalar_summary("val-error", np.float32(0.25))
    assert (summary.value[0].tag, summary.value[0].simple_value) == ("val-error", 0.25)
    pairs = [[(1, "w"), (2, "b")], [(3, "w"), (4, "b")]]
    grads, variables = split_grad_list(pairs)
    assert grads == [[1, 2], [3, 4]] and merge_grad_list(grads, variables) == pairs
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3])
        assert get_shape_str([x, x[0]]) == "[None, 3],[3]"
        with TrainTowerContext("tower1", vs_name="tower1", index="1", total=2) as ctx:
            assert (ctx.is_training, ctx.index, ctx.total, ctx.vs_name) == (True, 1, 2, "tower1")
            with override_to_local_variable():
                local = tf.compat.v1.get_variable("copy", [1])
        with PredictTowerContext("pred") as ctx:
            assert not ctx.is_training
        assert local in tf.compat.v1.local_variables()
        assert local not in tf.compat.v1.global_variables()
        assert disable_autograph()(len)([1, 2]) == 2
