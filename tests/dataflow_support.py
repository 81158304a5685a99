"""Helpers for tests/dataflow: process liveness, a script runner, stand-in dataset files."""
import os
import subprocess
import sys
import time

from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXIT_WAIT_S = scaled_timeout(5)     # for stopped processes to be gone
LINE_WAIT_S = scaled_timeout(20)    # for a script's line (it imports TensorFlow first)


def alive(pid):
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, timeout=EXIT_WAIT_S):
    """True once every process of ``pids`` is gone, False if some still run after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def start_script(code, tmp_path):
    """Run ``code`` in a fresh Python; its stdout is a pipe to read lines from."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, "-u", "-c", code], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_until(proc, prefix, timeout=LINE_WAIT_S):
    """The first stdout line of ``proc`` that starts with ``prefix``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"script ended early: {proc.stderr.read()[-2000:]}")
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    raise AssertionError(f"no line starting with {prefix!r}")


def write_mnist(directory, n_train=300, n_test=260, seed=0):
    """Tiny MNIST files in the standard idx .gz format; returns (train images, train labels)."""
    import gzip

    import numpy as np
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    made = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.randint(0, 256, (n, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, n).astype(np.uint8)
        header = np.array([2051, n, 28, 28], ">u4").tobytes()
        with gzip.open(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(header + images.tobytes())
        with gzip.open(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(np.array([2049, n], ">u4").tobytes() + labels.tobytes())
        made[prefix] = (images, labels)
    return made["train"]


def write_cifar(directory, classnum=10, per_batch=30, n_test=40, seed=0):
    """Tiny CIFAR files in the "python version" pickle layout, extracted under ``directory``;
    returns the training images (N, 32, 32, 3) and labels."""
    import pickle

    import numpy as np
    rng = np.random.RandomState(seed)
    name = "cifar-10-batches-py" if classnum == 10 else "cifar-100-python"
    folder = os.path.join(directory, name)
    os.makedirs(folder, exist_ok=True)
    label_key = b"labels" if classnum == 10 else b"fine_labels"

    def batch(name, n):
        images = rng.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8)
        labels = rng.randint(0, classnum, n).tolist()
        data = images.transpose(0, 3, 1, 2).reshape(n, 3072)
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump({b"data": data, label_key: labels, b"batch_label": name.encode()}, f)
        return images, labels
    if classnum == 10:
        parts = [batch(f"data_batch_{i}", per_batch) for i in range(1, 6)]
        batch("test_batch", n_test)
        meta = {b"label_names": [f"class{i}".encode() for i in range(10)]}
        meta_name = "batches.meta"
    else:
        parts = [batch("train", per_batch * 5)]
        batch("test", n_test)
        meta = {b"fine_label_names": [f"class{i}".encode() for i in range(100)]}
        meta_name = "meta"
    with open(os.path.join(folder, meta_name), "wb") as f:
        pickle.dump(meta, f)
    images = np.concatenate([p[0] for p in parts])
    return images, sum((p[1] for p in parts), [])


def write_ilsvrc(directory, meta_dir, classes=3, per_class=2, n_val=3, size=(40, 48),
                 val_structure="original", seed=0):
    """A tiny ILSVRC12 copy in tensorpack's layout (JPEG files under ``directory``) and its
    Caffe-style metadata files in ``meta_dir``; returns the synset ids."""
    import cv2
    import numpy as np
    rng = np.random.RandomState(seed)
    synsets = [f"n{1000 + i:08d}" for i in range(classes)]
    os.makedirs(meta_dir, exist_ok=True)

    def image(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        cv2.imwrite(path, rng.randint(0, 256, (*size, 3)).astype(np.uint8))

    lines = {"train": [], "val": []}
    for label, synset in enumerate(synsets):
        for k in range(per_class):
            name = f"{synset}/{synset}_{k}.JPEG"
            image(os.path.join(directory, "train", name))
            lines["train"].append(f"{name} {label}")
    for k in range(n_val):
        label = k % classes
        name = f"ILSVRC2012_val_{k + 1:08d}.JPEG"
        sub = name if val_structure == "original" else f"{synsets[label]}/{name}"
        image(os.path.join(directory, "val", sub))
        lines["val"].append(f"{name} {label}")
    for split, rows in lines.items():
        with open(os.path.join(meta_dir, f"{split}.txt"), "w") as f:
            f.write("\n".join(rows) + "\n")
    with open(os.path.join(meta_dir, "synsets.txt"), "w") as f:
        f.write("\n".join(synsets) + "\n")
    with open(os.path.join(meta_dir, "synset_words.txt"), "w") as f:
        f.write("\n".join(f"{s} thing {i}" for i, s in enumerate(synsets)) + "\n")
    return synsets


def write_svhn(directory, sizes=(("train", 20), ("test", 10), ("extra", 10)), seed=0):
    """Tiny SVHN ``<name>_32x32.mat`` files (labels 1-10, 10 meaning 0); returns {name: (X, y)}."""
    import numpy as np
    import scipy.io
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    made = {}
    for name, n in sizes:
        images = rng.randint(0, 256, (32, 32, 3, n)).astype(np.uint8)
        labels = rng.randint(1, 11, (n, 1)).astype(np.uint8)
        scipy.io.savemat(os.path.join(directory, f"{name}_32x32.mat"), {"X": images, "y": labels})
        made[name] = (images, labels)
    return made


def write_bsds500(directory, splits=(("train", 2), ("val", 1), ("test", 1)), seed=0):
    """Tiny BSDS500 files in the ``BSR/BSDS500/data`` layout, 321x481 images (one portrait per
    split) and two annotators' boundaries each; returns {split: [(image, edges)]}."""
    import cv2
    import numpy as np
    import scipy.io
    rng = np.random.RandomState(seed)
    root = os.path.join(directory, "BSR", "BSDS500", "data")
    made = {}
    for split, n in splits:
        os.makedirs(os.path.join(root, "images", split), exist_ok=True)
        os.makedirs(os.path.join(root, "groundTruth", split), exist_ok=True)
        made[split] = []
        for k in range(n):
            shape = (481, 321) if k == 0 else (321, 481)
            image = np.zeros((*shape, 3), np.uint8) + np.uint8(40 * k)
            first, second = (rng.rand(*shape) > 0.7).astype(np.uint8), np.zeros(shape, np.uint8)
            truth = np.empty((1, 2), dtype=object)
            for j, boundaries in enumerate((first, second)):
                record = np.empty((1, 1), dtype=[("Boundaries", object)])
                record[0, 0]["Boundaries"] = boundaries
                truth[0, j] = record
            cv2.imwrite(os.path.join(root, "images", split, f"{k}.jpg"), image)
            scipy.io.savemat(os.path.join(root, "groundTruth", split, f"{k}.mat"),
                             {"groundTruth": truth})
            made[split].append((image, first.astype(np.float32) / 2))
    return made
