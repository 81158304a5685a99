"""The log directory of a trainer's run: a value on the trainer, which callbacks and monitors
read (``self.trainer.logdir``)."""
from __future__ import annotations

import os
from collections.abc import Callable

from tfloop.utils import files, logger
from tfloop.utils.url_contact import check_reachable

__all__ = ["RunLogDir", "check_logdir"]


def check_logdir(path: str | os.PathLike[str] | None, what: str) -> str | None:
    """``path`` as a run's log directory: None, a local path as given, or a URL whose scheme
    TensorFlow's file layer knows (UnknownSchemeError otherwise, naming the plugin)."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a directory path (str or pathlib.Path) or None, got "
                        f"{path!r}.")
    path = os.fspath(path)
    return files.resolve(path) if files.is_url(path) else path


class RunLogDir:
    """The trainer's part that holds the run's :attr:`logdir`: given to the trainer, or taken
    from ``logger.set_logger_dir`` when its run starts, then fixed for the run. The trainer's
    ``logdir`` and ``run_logdir`` are this part's.

    Attributes:
        of_this_process (callable): the directory this process writes into, from the run's
            (the identity; a cluster trainer's worker writes into ``worker-<index>``).

    Example:
        >>> trainer = SimpleTrainer()
        >>> trainer.logdir = "ram://mnist"
    """

    def __init__(self) -> None:
        self._given: str | None = None   # given to this trainer (trainer.logdir = ...)
        self._run: str | None = None     # the one its run took, fixed when the run starts
        self._taken = False
        self.of_this_process: Callable[[str], str] = lambda run_logdir: run_logdir

    @property
    def logdir(self) -> str | None:
        """The run's log directory (a local path or a URL such as ``gs://bucket/run``): where
        callbacks and monitors write checkpoints, ``stats.json``, events. Given with
        ``trainer.logdir = path`` or ``TrainConfig(logdir=...)``; else, tensorpack's way, the
        directory of ``logger.set_logger_dir``, taken when the run starts; None without either
        (monitors that write files are then skipped). A worker of a cluster other than the chief
        writes into ``<the run's directory>/worker-<index>``.

        Example:
            >>> trainer.logdir = "gs://bucket/mnist"
            >>> launch_train_with_config(config, trainer)
        """
        if self._taken:
            return self._run
        chosen = self.run_logdir
        return None if chosen is None else self.of_this_process(chosen)

    @logdir.setter
    def logdir(self, path: str | os.PathLike[str] | None) -> None:
        if self._taken:
            raise RuntimeError(f"The log directory of a run is fixed when it starts: set "
                               f"trainer.logdir before training (it is {self._run}).")
        self._given = check_logdir(path, "trainer.logdir")

    @property
    def run_logdir(self) -> str | None:
        """The log directory of the whole run, where the chief writes its checkpoints: the same
        in every process of a cluster (a worker's own files go to :attr:`logdir`). Given with
        ``trainer.logdir = path``, else the directory of ``logger.set_logger_dir``; None without
        either."""
        return self._given if self._given is not None else logger.get_logger_dir()

    def take(self) -> None:
        """Fix :attr:`logdir` for the run that starts now (a URL's storage must answer first:
        :func:`~tfloop.utils.url_contact.check_reachable`)."""
        if not self._taken:
            run_logdir = self.logdir
            if run_logdir is not None:
                check_reachable(run_logdir)
            self._run = run_logdir
            self._taken = True
