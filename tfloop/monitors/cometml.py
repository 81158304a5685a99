"""CometMLMonitor: scalars, images and the graph sent to a comet.ml experiment."""
from tfloop.monitors.base import MonitorBase
from tfloop.version import __version__

__all__ = ["CometMLMonitor"]


class CometMLMonitor(MonitorBase):
    """Send scalars (with the global step), images and the training graph to a
    ``comet_ml.Experiment``, mark the end of each epoch, and end the experiment after training.

    Needs the ``comet_ml`` package unless an experiment object is given (comet_ml wants to be
    imported before TensorFlow).

    Args:
        experiment (comet_ml.Experiment): the experiment to log to; when given, ``tags`` and
            ``kwargs`` must be empty.
        tags (list[str]): tags for a new experiment.
        kwargs: arguments of ``comet_ml.Experiment`` (project name, API key ...).

    Example:
        >>> monitors = DEFAULT_MONITORS() + [CometMLMonitor(project_name="mnist")]
    """

    def __init__(self, experiment=None, tags=None, **kwargs):
        if experiment is not None:
            if tags is not None or kwargs:
                raise ValueError("CometMLMonitor: with an experiment, give no tags or other "
                                 "arguments (set them on the experiment).")
            self._exp = experiment
        else:
            try:
                from comet_ml import Experiment
            except ImportError:
                raise ImportError("CometMLMonitor needs the comet_ml package (`pip install "
                                  "comet_ml`), or an experiment object.") from None
            kwargs.setdefault("auto_output_logging", None)  # it would freeze the progress bar
            self._exp = Experiment(**kwargs)
            if tags is not None:
                self._exp.add_tags(tags)
        self._exp.log_dependency("tfloop", __version__)

    @property
    def experiment(self):
        """The ``comet_ml.Experiment``."""
        return self._exp

    def _before_train(self):
        self._exp.set_model_graph(self.trainer.graph)

    def process_scalar(self, name, value):
        self._exp.log_metric(name, value, step=self.global_step)

    def process_image(self, name, images):
        self._exp.set_step(self.global_step)
        for i, image in enumerate(images):
            suffix = f"_{i}" if len(images) > 1 else ""
            self._exp.log_image(image, image_format="jpeg", image_minmax=(0, 255),
                                name=f"{name}_step{self.global_step}{suffix}")

    def _after_epoch(self):
        self._exp.log_epoch_end(self.epoch_num)

    def _after_train(self):
        self._exp.end()
