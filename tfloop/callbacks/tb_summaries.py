"""Histograms and images for TensorBoard, one argument each."""
from __future__ import annotations

from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.utils.checks import check_bool, check_int

__all__ = ["TensorBoardSummaries"]


class TensorBoardSummaries(Callback):
    """Add histogram and image summaries to the graph, which the default ``MergeAllSummaries``
    fetches with the last step of every epoch (and every ``period`` steps if you give it one) and
    the ``TFEventWriter`` writes: TensorBoard's Histograms, Distributions and Images dashboards.

    Args:
        histograms (bool): a histogram of every trainable variable, tag ``<variable>/histogram``.
        images (list[str]): names of NHWC image tensors (in the graph or the first training
            tower), written as images tagged ``<name>/image/<i>``; float images are taken to be in
            [0, 1] (clipped), integers in [0, 255].
        max_images (int): at most this many images of each batch.

    Example:
        >>> callbacks = [TensorBoardSummaries(histograms=True, images=["input_image"])]
    """

    _chief_only = False

    def __init__(self, histograms: bool = False, images: list[str] | tuple[str, ...] = (),
                 max_images: int = 3) -> None:
        check_bool(histograms, "TensorBoardSummaries: histograms")
        if isinstance(images, str):
            images = [images]
        if not all(isinstance(name, str) and name for name in images):
            raise TypeError(f"TensorBoardSummaries: images must be a list of tensor names, got "
                            f"{images!r}.")
        if not histograms and not images:
            raise ValueError("TensorBoardSummaries would add nothing: give histograms=True or "
                             "images=[tensor names].")
        self.histograms = histograms
        self.images = list(images)
        self.max_images = check_int(max_images, "TensorBoardSummaries: max_images", at_least=1)

    def _setup_graph(self):
        with self.graph.name_scope(None):
            if self.histograms:
                for var in self.graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES):
                    tfv1.summary.histogram(f"{var.op.name}/histogram", var)
            for name, tensor in zip(self.images, self.get_tensors_maybe_in_tower(self.images)):
                self._image(name, tensor)

    def _image(self, name, tensor):
        if tensor.shape.rank != 4 or tensor.shape[-1] not in (1, 3, 4):
            raise ValueError(f"TensorBoardSummaries: the image tensor {tensor.name} has shape "
                             f"{tensor.shape}; images must be NHWC with 1, 3 or 4 channels.")
        if tensor.dtype.is_floating:
            tensor = tf.cast(tf.round(tf.clip_by_value(tensor, 0.0, 1.0) * 255.0), tf.uint8)
        elif tensor.dtype != tf.uint8:
            tensor = tf.cast(tf.clip_by_value(tensor, 0, 255), tf.uint8)
        # The raw op, so that the tag is the tensor's name even though an op has that name.
        summary = tf.raw_ops.ImageSummary(tag=name.split(":")[0], tensor=tensor,
                                          max_images=self.max_images)
        tfv1.add_to_collection(tfv1.GraphKeys.SUMMARIES, summary)

    def __str__(self):
        return f"TensorBoardSummaries(histograms={self.histograms}, images={self.images})"
