"""What the digit examples share: scikit-learn's bundled 8x8 digits and the command line.

The data is 1797 images (no download), split 80/20 into training and validation.
"""
import argparse
import os

import numpy as np


def load_digits(seed=0):
    """(train_images, train_labels), (val_images, val_labels): NHWC float32 in [0, 1], int32."""
    from sklearn.datasets import load_digits as sklearn_digits
    digits = sklearn_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., np.newaxis]
    labels = digits.target.astype(np.int32)
    order = np.random.RandomState(seed).permutation(len(images))
    split = int(len(images) * 0.8)
    train, val = order[:split], order[split:]
    return (images[train], labels[train]), (images[val], labels[val])


def argument_parser(description, name, max_epoch):
    """``--max-epoch``, and ``--logdir`` (``train_log/<name>``) with ``--logdir-action``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--max-epoch", type=int, default=max_epoch)
    parser.add_argument("--logdir", default=os.path.join("train_log", name))
    parser.add_argument("--logdir-action", default="backup",
                        choices=["keep", "backup", "delete", "new"],
                        help="what to do when the log directory exists")
    return parser
