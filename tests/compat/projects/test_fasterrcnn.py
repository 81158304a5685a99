"""tensorpack's ``examples/FasterRCNN`` on tfloop: ``train.py`` (a ResNet backbone,
``BACKBONE.WEIGHTS=''``, Faster R-CNN C4 and Mask R-CNN FPN), then ``predict.py --evaluate``
scored by pycocotools and ``predict.py --predict`` writing its picture with no display.

The example's files are read from tensorpack's repository with their imports changed (see
``_projects_support``); sizes shrink through the example's own ``--config KEY=VALUE`` overrides,
and one-line edits fix the example's own bugs: its GPU-only checks and numpy aliases removed in
numpy 1.24 (``docs/migrating.md``, "Moving a big project"). The data is a tiny COCO-format set
this test writes.
"""
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import run_example, write_example  # noqa: E402
from support import scaled_timeout  # noqa: E402

# The example's own bugs on a machine without a GPU, each a one-line change.
EXAMPLE_FIXES = {
    # Training asserts a GPU; on the CPU the trainer gets one tower.
    "config.py": [('        assert ngpu > 0, "Has to train with GPU!"\n',
                   "        ngpu = max(ngpu, 1)\n")],
    # Inference asserts a GPU or an MKL build; TensorFlow 2's CPU build runs it (tfloop's layers
    # transpose NCHW to NHWC on the CPU).
    "predict.py": [("    if not tf.test.is_gpu_available():\n", "    if False:\n"),
                   # --predict shows its picture after writing it; only with a display, as
                   # --visualize does.
                   ("\n    tpviz.interactive_imshow(viz)\n",
                    "\n    if os.environ.get('DISPLAY', None): tpviz.interactive_imshow(viz)\n")],
    # ROIAlign pools with TensorFlow's NCHW AvgPool, which has a GPU (or MKL) kernel only: pool
    # in NHWC between two transposes on the CPU.
    "modeling/model_box.py": [(
        "    ret = avgpool(ret, [1, 1, 2, 2], [1, 1, 2, 2], padding='SAME', data_format='NCHW')\n",
        "    ret = tf.transpose(avgpool(tf.transpose(ret, [0, 2, 3, 1]), [1, 2, 2, 1], "
        "[1, 2, 2, 1], padding='SAME'), [0, 3, 1, 2])\n")],
    # numpy 1.24 removed the aliases np.int and np.bool: the builtins are what they meant.
    "data.py": [("dtype=np.int)", "dtype=int)")],
    "common.py": [("dtype=np.bool))", "dtype=bool))")],
}

# Small sizes through the example's --config overrides: a 64-pixel image, one ResNet block per
# stage, narrow heads, few proposals, two training steps (TRAIN.LR_SCHEDULE counts steps of 8
# images: 0.25 * 8 // 1 = 2.0 epochs of one step), a checkpoint each epoch.
TINY = ["BACKBONE.WEIGHTS=", "BACKBONE.RESNET_NUM_BLOCKS=[1,1,1,1]",
        "PREPROC.TRAIN_SHORT_EDGE_SIZE=[64,64]", "PREPROC.TEST_SHORT_EDGE_SIZE=64",
        "PREPROC.MAX_SIZE=96", "DATA.NUM_WORKERS=0",
        "RPN.HEAD_DIM=16", "RPN.BATCH_PER_IM=32", "RPN.TRAIN_PRE_NMS_TOPK=64",
        "RPN.TRAIN_POST_NMS_TOPK=32", "RPN.TEST_PRE_NMS_TOPK=64", "RPN.TEST_POST_NMS_TOPK=32",
        "RPN.TRAIN_PER_LEVEL_NMS_TOPK=32", "RPN.TEST_PER_LEVEL_NMS_TOPK=32",
        "FRCNN.BATCH_PER_IM=16", "FPN.NUM_CHANNEL=16", "FPN.FRCNN_FC_HEAD_DIM=16",
        "MRCNN.HEAD_DIM=8", "TEST.RESULTS_PER_IM=5",
        # The accurate mask paste calls scipy's interp2d, removed in SciPy 1.14.
        "MRCNN.ACCURATE_PASTE=False",
        "TRAIN.STEPS_PER_EPOCH=1", "TRAIN.LR_SCHEDULE=[0.25]", "TRAIN.WARMUP=1",
        "TRAIN.CHECKPOINT_PERIOD=1", "TRAIN.EVAL_PERIOD=0"]
C4 = ["MODE_FPN=False", "MODE_MASK=False"]
MASK_FPN = ["MODE_FPN=True", "MODE_MASK=True"]

# COCO category ids of the synthetic objects (the example maps them to its 80 classes).
CATEGORIES = [1, 18]


def write_coco_split(basedir, split, count, seed):
    """``basedir/<split>/<i>.jpg`` (48x64 images, one or two bright rectangles each) and
    ``basedir/annotations/instances_<split>.json`` in COCO's format, with polygon masks."""
    import cv2
    rng = np.random.RandomState(seed)
    os.makedirs(os.path.join(basedir, split), exist_ok=True)
    os.makedirs(os.path.join(basedir, "annotations"), exist_ok=True)
    images, annotations = [], []
    for i in range(count):
        height, width = 48, 64
        image = (rng.rand(height, width, 3) * 60).astype(np.uint8)
        for k in range(1 + i % 2):
            w, h = rng.randint(14, 28), rng.randint(12, 22)
            x, y = rng.randint(0, width - w), rng.randint(0, height - h)
            image[y:y + h, x:x + w] = 200 + 40 * k
            annotations.append({
                "id": len(annotations) + 1, "image_id": i + 1, "category_id": CATEGORIES[k],
                "bbox": [float(x), float(y), float(w), float(h)], "area": float(w * h),
                "iscrowd": 0,
                "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]})
        name = f"{i}.jpg"
        cv2.imwrite(os.path.join(basedir, split, name), image)
        images.append({"id": i + 1, "file_name": name, "height": height, "width": width})
    document = {"images": images, "annotations": annotations,
                "categories": [{"id": c, "name": f"class{c}"} for c in CATEGORIES]}
    with open(os.path.join(basedir, "annotations", f"instances_{split}.json"), "w") as f:
        json.dump(document, f)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The example with imports changed and its fixes, and a tiny COCO set beside it."""
    root = tmp_path_factory.mktemp("fasterrcnn")
    src = write_example("examples/FasterRCNN", str(root / "FasterRCNN"), EXAMPLE_FIXES)
    coco = str(root / "coco")
    write_coco_split(coco, "train2017", 2, seed=0)
    write_coco_split(coco, "val2017", 2, seed=1)
    return src, coco


def train(src, coco, mode, logdir):
    config = TINY + mode + [f"DATA.BASEDIR={coco}"]
    return run_example(src, ["train.py", "--logdir", logdir, "--config"] + config, timeout=120)


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(150))
def test_faster_rcnn_c4_trains_from_scratch(project):
    src, coco = project
    logdir = os.path.join(src, "train_log", "c4")
    train(src, coco, C4, logdir)
    assert os.path.isfile(os.path.join(logdir, "model-2.index"))


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(300))
def test_mask_rcnn_fpn_trains_evaluates_and_predicts(project):
    src, coco = project
    logdir = os.path.join(src, "train_log", "maskrcnn")
    train(src, coco, MASK_FPN, logdir)
    checkpoint = os.path.join(logdir, "model-2")
    assert os.path.isfile(checkpoint + ".index")
    config = ["--config"] + TINY + MASK_FPN + [f"DATA.BASEDIR={coco}",
                                              "TEST.RESULT_SCORE_THRESH=0"]

    evaluated = run_example(src, ["predict.py", "--load", checkpoint, "--evaluate",
                                  "results.json"] + config, timeout=90)
    # Every detection went to pycocotools, which scored boxes and masks.
    with open(os.path.join(src, "results.json-coco_val2017")) as f:
        results = json.load(f)
    assert results and all("segmentation" in r for r in results)
    assert "Average Precision" in evaluated

    picture = os.path.join(coco, "val2017", "0.jpg")
    run_example(src, ["predict.py", "--load", checkpoint, "--predict", picture] + config,
                timeout=90)
    import cv2
    written = cv2.imread(os.path.join(src, "output.png"))
    assert written is not None and written.shape == (48, 128, 3)
