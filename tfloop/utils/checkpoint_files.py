"""The checkpoints of a directory, from one listing of it.

A checkpoint is named by its *prefix* (``<dir>/model-1200``); its files are the prefix followed by
a dot-suffix (``.index``, ``.data-00000-of-00001``, ``.meta``, and what tfloop writes beside it:
``.iterator``, ``.resume.json``). :func:`list_checkpoint_files` is the one place that lists them;
the readers of checkpoints (``tfutils.varmanip``: the latest complete one, tensorpack's
``get_all_checkpoints``) and of log directories (``utils.logdir_format``, the ``tfloop``
command) select from its answer. Files only, no TensorFlow: whether a checkpoint is complete is
``tfutils.varmanip``'s question.
"""
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tfloop.utils import files

__all__ = ["CheckpointFiles", "list_checkpoint_files", "checkpoint_step"]

_STEP = re.compile(r"-(\d+)$")


def checkpoint_step(prefix: str) -> int | None:
    """The global step in a checkpoint prefix's name (``model-1200`` -> 1200), or None."""
    match = _STEP.search(files.basename(prefix))
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class CheckpointFiles:
    """One checkpoint of a directory.

    Attributes:
        prefix (str): the checkpoint's path without suffix, ``<directory>/<name>``.
        name (str): the prefix's last part, e.g. ``model-1200`` or ``min-val_loss``.
        step (int): the step in its name, or None (``MinSaver``'s ``min-<stat>``).
        files (tuple[str]): the names of its files in the directory (empty for a checkpoint
            only named elsewhere, e.g. in the ``checkpoint`` state file).
        time (float): the modification time of its ``.index`` file; None without one, or where
            the filesystem keeps none.

    Example:
        >>> [c.name for c in list_checkpoint_files("train_log/run") if c.step is not None]
        ['model-600', 'model-1200']
    """

    prefix: str
    name: str
    step: int | None
    files: tuple[str, ...]
    time: float | None

    @property
    def has_index(self) -> bool:
        """Whether its ``.index`` file is present (a checkpoint TensorFlow can open)."""
        return self.name + ".index" in self.files


def _owners(names: list[str], prefixes: set[str]) -> dict[str, list[str]]:
    """``{prefix: [its file names]}``: a file belongs to the checkpoint whose name is the longest
    part of the file's name before one of its dots (``model.v2-7.index`` -> ``model.v2-7``)."""
    owned: dict[str, list[str]] = {prefix: [] for prefix in prefixes}
    for name in names:
        owner = None
        dot = name.find(".")
        while dot != -1:
            if name[:dot] in prefixes:
                owner = name[:dot]
            dot = name.find(".", dot + 1)
        if owner is not None:
            owned[owner].append(name)
    return owned


def _index_time(directory: str, name: str) -> float | None:
    try:
        return files.mtime(files.join(directory, name + ".index")) or None
    except OSError:     # deleted since the listing (a saver keeping its last few)
        return None


def list_checkpoint_files(directory: str, named: Iterable[str] = ()) -> list[CheckpointFiles]:
    """Every checkpoint of ``directory`` (a local path or a URL), complete or not, oldest first:
    by the step in its name (none first), then by the time of its index file, then by name.

    A checkpoint is a name with an ``.index`` file (hidden files left out) or one of ``named``
    (names or paths of checkpoints said to be there, e.g. by the ``checkpoint`` state file, so
    that one whose index is missing is still seen). A directory that cannot be listed has none.
    """
    try:
        names = sorted(files.listdir(directory))
    except OSError:
        names = []
    prefixes = {name[:-len(".index")] for name in names
                if name.endswith(".index") and not name.startswith(".")}
    prefixes.update(files.basename(path) for path in named if path)
    found = []
    for name, owned in _owners(names, prefixes).items():
        time = _index_time(directory, name) if name + ".index" in owned else None
        found.append(CheckpointFiles(files.join(directory, name), name, checkpoint_step(name),
                                     tuple(owned), time))
    return sorted(found, key=lambda c: (-1 if c.step is None else c.step, c.time or 0.0, c.name))
