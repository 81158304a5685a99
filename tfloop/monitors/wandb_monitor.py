"""WandbMonitor: scalars and images logged to a Weights & Biases run at the global step, in one run
that a resumed training continues."""
from tfloop.monitors.base import MonitorBase
from tfloop.monitors.outcome import training_outcome
from tfloop.monitors.run_file import read_run_file, write_run_file
from tfloop.utils import logger
from tfloop.utils.extras import import_extra

__all__ = ["WandbMonitor"]

RUN_FILE = "wandb_run.json"
_ILLEGAL_PROJECT_CHARS = "/\\#?%:"
_MANAGED = ("id", "resume")


def check_project(project):
    """``project`` (a W&B project name or None); raise a ``ValueError`` naming the fix when W&B
    would refuse it."""
    if project is None:
        return None
    if not isinstance(project, str) or not project:
        raise TypeError(f"WandbMonitor: project must be a non-empty str or None, got {project!r}.")
    bad = sorted({c for c in project if c in _ILLEGAL_PROJECT_CHARS})
    if bad or len(project) > 128:
        reason = f"contains {' '.join(bad)}" if bad else "is longer than 128 characters"
        raise ValueError(f"WandbMonitor: the W&B project name {project!r} {reason}; a project "
                         f"name has at most 128 characters and none of {_ILLEGAL_PROJECT_CHARS}, "
                         f"e.g. {project.translate({ord(c): '-' for c in bad})[:128]!r}.")
    return project


class WandbMonitor(MonitorBase):
    """Log every scalar (and every image put with ``put_image``) to a Weights & Biases run, at
    ``step`` = the global step.

    Values are gathered per step and handed to the run at the end of each epoch. The run is
    finished after training with the exit code of how it ended: 0 when it finished or a callback
    stopped it cleanly, 1 when it raised, 128 + the signal on SIGINT/SIGTERM. Its files go into
    the log directory (``<log dir>/wandb/``) unless ``dir=`` is given.

    The run id is kept in ``wandb_run.json`` in the log directory: a training that resumes there
    (``AutoResumeTrainConfig``) continues the same run (``resume="allow"``), from the step after
    the last one logged, so no step is logged twice. ``WANDB_MODE=offline`` works as usual
    (``wandb sync`` uploads the runs later).

    Runs on the chief worker only. Needs ``pip install 'tfloop-train[wandb]'``.

    Args:
        project (str): the W&B project (W&B's default when None).
        name (str): the run's display name.
        config (dict): hyper-parameters, stored as the run's config.
        init_kwargs: more arguments of ``wandb.init`` (``entity``, ``tags``, ``dir`` ...); the
            monitor sets ``id`` and ``resume`` itself.

    Attributes:
        run: the ``wandb`` run, from ``before_train`` on.

    Example:
        >>> monitors = DEFAULT_MONITORS() + [WandbMonitor("mnist", config={"lr": 0.01})]
    """

    _chief_only = True

    def __init__(self, project=None, name=None, config=None, **init_kwargs):
        self._project = check_project(project)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"WandbMonitor: name must be a str or None, got {name!r}.")
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"WandbMonitor: config must be a dict or None, got {config!r}.")
        managed = sorted(k for k in init_kwargs if k in _MANAGED)
        if managed:
            raise TypeError(f"WandbMonitor sets {' and '.join(managed)} itself (it resumes the "
                            "run named in the log directory); leave them out.")
        self._wandb = import_extra("wandb", "wandb", "WandbMonitor")
        self._name, self._config, self._init_kwargs = name, config, init_kwargs
        self.run = None
        self._rows = {}
        self._logged_through = -1
        self._resumed_through = -1  # the last step the run had when this training resumed it

    def _before_train(self):
        logdir = self.trainer.logdir
        stored = read_run_file(logdir, RUN_FILE)
        kwargs = dict(self._init_kwargs)
        if logdir is not None:
            kwargs.setdefault("dir", logdir)
        if self.global_step > 0 and stored is not None and stored.get("project") == self._project:
            run_id, self._logged_through = stored["run_id"], int(stored["logged_through_step"])
            self._resumed_through = self._logged_through
            kwargs.update(id=run_id, resume="allow")
        self.run = self._wandb.init(project=self._project, name=self._name, config=self._config,
                                    **kwargs)
        self._save_run_file()
        logger.info(f"WandbMonitor: logging to run {self.run.id} of project "
                    f"{self.run.project}.")

    def _save_run_file(self):
        write_run_file(self.trainer.logdir, RUN_FILE, {
            "run_id": self.run.id, "project": self._project,
            "logged_through_step": self._logged_through})

    def _row(self):
        step = self.global_step
        if step <= self._resumed_through:
            return None  # the resumed run already has this step
        return self._rows.setdefault(step, {})

    def process_scalar(self, name, value):
        row = self._row()
        if row is not None:
            row[name] = value

    def process_image(self, name, images):
        row = self._row()
        if row is not None:
            row[name] = [self._wandb.Image(image) for image in images]

    def _trigger(self):
        self._flush()

    def _flush(self):
        if not self._rows:
            return
        rows, self._rows = self._rows, {}
        for step in sorted(rows):
            self.run.log(rows[step], step=step)
        self._logged_through = max(self._logged_through, max(rows))
        self._save_run_file()

    def _after_train(self):
        if self.run is None:
            return
        try:
            self._flush()
        finally:
            self.run.finish(exit_code=training_outcome(self.trainer).exit_code)
            self.run = None

    def __str__(self):
        return "WandbMonitor"
