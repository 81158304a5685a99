"""tensorpack's ``HED/hed.py`` on tfloop, imports changed: one training step and validation on
a tiny BSDS500 directory this test writes in the standard layout, and validation.
Its float 0/1 edge maps go into the int32 input unchanged (whole numbers: taken, as TensorFlow
1's feed took them). Fix of the example's own bug: its raw NCHW ``conv2d_transpose`` (a GPU-only
kernel) runs in NHWC between transposes."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import checkpoints, run_example, write_example  # noqa: E402
from dataflow_support import write_bsds500  # noqa: E402

pytest.importorskip("scipy")
pytest.importorskip("cv2")


@pytest.mark.slow
def test_hed_trains_one_step(tmp_path):
    write_bsds500(str(tmp_path / "data" / "bsds500_data"),
                  splits=(("train", 1), ("val", 1)))
    code = write_example("examples/HED", tmp_path / "code", {"hed.py": [
        # sizes shrunk: batches of 1 image (of 8 same-shaped ones: the buckets of randomly
        # resized images would not fill from a one-image set), one step, one epoch
        ("BatchDataByShape(ds, 8, idx=0)", "BatchDataByShape(ds, 1, idx=0)"),
        ("steps_per_epoch = len(dataset_train) * 40", "steps_per_epoch = 1"),
        ("max_epoch=100,", "max_epoch=1,"),
        # the example's GPU-only op: TensorFlow's CPU kernel of conv2d_transpose takes NHWC
        # only, so the raw NCHW call runs between two transposes
        ("    deconv = tf.nn.conv2d_transpose(x, weight_var, out_shape,\n"
         "                                    [1, 1, shape, shape], 'SAME', data_format='NCHW')",
         "    deconv = tf.transpose(tf.nn.conv2d_transpose(tf.transpose(x, [0, 2, 3, 1]), "
         "weight_var, tf.gather(out_shape, [0, 2, 3, 1]), [1, shape, shape, 1], 'SAME'), "
         "[0, 3, 1, 2])")]})
    run_example(code, ["hed.py"], 500, {"TFLOOP_DATASET": str(tmp_path / "data")})
    assert checkpoints(code / "train_log" / "hed") == ["model-1.index"]
