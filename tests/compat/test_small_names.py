"""tensorpack's small helpers and aliases under tfloop: what each returns or is."""
import re

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
