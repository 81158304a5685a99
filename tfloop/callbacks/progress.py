"""ProgressBar: a tqdm bar for each epoch, optionally showing fetched scalars."""
import sys
import time

import numpy as np
import tqdm

from tfloop.callbacks.base import Callback
from tfloop.callbacks.schedule import Schedule
from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.tfutils.summary import MOVING_SUMMARY_OPS_KEY, moving_summary_name
from tfloop.utils import logger
from tfloop.utils.checks import check_number

__all__ = ["ProgressBar"]

TTY_REFRESH_SECS = 0.5
NOTEBOOK_REFRESH_SECS = 0.5
LOG_REFRESH_SECS = 60.0
_DEFAULT_REFRESH_SECS = {"terminal": TTY_REFRESH_SECS, "notebook": NOTEBOOK_REFRESH_SECS,
                         "log": LOG_REFRESH_SECS}


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _is_notebook_output(stream):
    """Whether ``stream`` is a Jupyter kernel's output stream (ipykernel's ``OutStream``: the
    ``sys.stdout``/``sys.stderr`` of a notebook cell), whose frontends redraw a line on ``\\r``.
    ipykernel is never imported here: a process that has not loaded it runs no kernel."""
    iostream = sys.modules.get("ipykernel.iostream")
    out_stream = getattr(iostream, "OutStream", None)
    return isinstance(out_stream, type) and isinstance(stream, out_stream)


def _output_kind(stream):
    """How a progress bar can show on ``stream``: ``"terminal"``, ``"notebook"`` (a Jupyter
    kernel's output, not a terminal but redrawn in place) or ``"log"`` (a file, a pipe, CI)."""
    if _isatty(stream):
        return "terminal"
    if _is_notebook_output(stream):
        return "notebook"
    return "log"


class _LogLines:
    """An epoch's bar in a log: a line when ``refresh_secs`` have passed since the last one, and
    one when the epoch ends, each a whole line. tqdm's own rendering, without a tqdm object (and
    its set-up and teardown) per epoch."""

    clock = staticmethod(time.monotonic)

    def __init__(self, stream, total, initial, desc, refresh_secs):
        self._stream, self.total, self._desc = stream, total, desc
        self._initial = self.n = initial
        self._refresh_secs = refresh_secs
        self._start = self._written = self.clock()
        self._postfix = {}

    def set_postfix(self, postfix, refresh=False):
        self._postfix = postfix

    def set_description(self, desc, refresh=False):
        self._desc = desc

    def update(self, steps):
        self.n += steps
        now = self.clock()
        if now - self._written >= self._refresh_secs:
            self._write(now)

    def close(self):
        self._write(self.clock())

    def _write(self, now):
        self._written = now
        postfix = ", ".join(f"{tag}={tqdm.tqdm.format_num(value)}"
                            for tag, value in self._postfix.items())
        # Without a total, tqdm puts the ": " after the prefix itself.
        prefix = f"{self._desc}: " if self.total is not None else self._desc
        line = tqdm.tqdm.format_meter(self.n, self.total, now - self._start, ascii=True,
                                      prefix=prefix, postfix=postfix or None,
                                      initial=self._initial)
        self._stream.write(line + "\n")
        self._stream.flush()


class ProgressBar(Callback):
    """Show a progress bar over the steps of each epoch.

    On a terminal the bar refreshes twice a second. In a Jupyter notebook (the output is the
    kernel's stream) it also refreshes twice a second, redrawn in place with carriage returns:
    one live line per epoch, without ipywidgets. When the output is neither (a log file, CI) it is
    written as a line at the end of each epoch, and during a long epoch at most once a minute, in
    ASCII, so logs stay short.
    When each epoch is one pass over data of unknown length, the first epoch's bar counts steps
    without a total (``Epoch 1: 8it [...]``); later ones take the last pass's length as their
    total, and a pass of another length ends with a bar that says so (``Epoch 3 (a pass of 7
    steps; the pass before had 8): 100%|...| 7/7``).
    The named tensors are fetched along with each step and their latest values shown after the
    bar. One of the default callbacks, which shows the moving averages (the cost's, and those
    ``add_moving_summary`` made).

    Args:
        names (list[str]): scalar tensors to show, by name (in the graph or the training tower).
        refresh_secs (float): the minimum time between refreshes; by default 0.5 on a terminal and
            in a notebook, 60 otherwise.
        file: the stream to write to; by default the stream of the console log (``sys.stdout``),
            so that the bar and the log lines interleave in order (set
            ``tfloop.utils.logger.set_console_stream`` to move both).
        moving_averages (bool): also show every moving average of ``add_moving_summary`` (the
            cost's among them), as the default ``ProgressBar`` of a training does.

    Example:
        >>> ProgressBar(["cost", "accuracy"])
        Epoch 3: 100%|##########| 500/500 [00:07<00:00, 66.2it/s, cost=0.21, accuracy=0.93]
        >>> ProgressBar(moving_averages=True)
        Epoch 3: 100%|##########| 500/500 [00:07<00:00, 66.2it/s, cost=0.2]
    """

    def __init__(self, names=(), refresh_secs=None, file=None, *, moving_averages=False):
        if isinstance(names, str):
            raise TypeError(f"ProgressBar takes a list of tensor names, got the string {names!r}; "
                            f"write ProgressBar([{names!r}]).")
        self._refresh_secs = check_number(refresh_secs, "ProgressBar: refresh_secs", at_least=0,
                                          allow_none=True)
        self._names = list(names)
        self._tags = [get_op_tensor_name(n)[0] for n in self._names]
        self._file = file
        self._moving_averages = bool(moving_averages)
        self.when = Schedule(fetches=bool(self._names) or self._moving_averages)
        self._fetches = None
        self._bar = None

    def _setup_graph(self):
        tensors = []
        if self._names:
            tensors = self.get_tensors_maybe_in_tower(self._names)
            for name, t in zip(self._names, tensors):
                if not isinstance(t, tf.Tensor) or t.shape.rank not in (0, None):
                    what = f"of shape {t.shape}" if isinstance(t, tf.Tensor) else "an op"
                    raise ValueError(f"ProgressBar shows scalar tensors; {name!r} is {what}.")
                if not (t.dtype.is_floating or t.dtype.is_integer or t.dtype.is_bool):
                    raise TypeError(f"ProgressBar shows numbers; {name!r} is the {t.dtype.name} "
                                    f"tensor {t.name} (a summary, if it is a string). Give the "
                                    "name of the scalar tensor it summarizes.")
        if self._moving_averages:
            averages = [t for t in self.graph.get_collection(MOVING_SUMMARY_OPS_KEY)
                        if isinstance(t, tf.Tensor)]
            self._tags += [moving_summary_name(t) for t in averages]
            tensors = list(tensors) + averages
        if tensors:
            self._fetches = tfv1.train.SessionRunArgs(fetches=tensors)
        self.when = self.when.replace(fetches=self._fetches is not None)  # no averages: none

    def _before_epoch(self):
        stream = self._file if self._file is not None else logger.console_stream()
        kind = _output_kind(stream)
        refresh = self._refresh_secs
        if refresh is None:
            refresh = _DEFAULT_REFRESH_SECS[kind]
        # local_step + 1 is the first step of this epoch: 0, or more in a run resumed mid-epoch.
        # When the epochs are passes, the total is the last pass's length (none in the first).
        total, initial = self.trainer.expected_steps_per_epoch, self.local_step + 1
        desc = f"Epoch {self.epoch_num}"
        if kind == "log":
            self._bar = _LogLines(stream, total, initial, desc, refresh)
        else:
            self._bar = tqdm.tqdm(total=total, initial=initial, desc=desc, file=stream,
                                  mininterval=refresh, ascii=False,
                                  dynamic_ncols=kind == "terminal",
                                  smoothing=0.5, leave=True)

    def _before_run(self, ctx):
        return self._fetches

    def _after_run(self, ctx, values):
        if self._bar is not None:
            postfix = {tag: float(np.asarray(v)) for tag, v in zip(self._tags, values.results)}
            self._bar.set_postfix(postfix, refresh=False)

    def _trigger_step(self):
        if self._bar is not None:
            self._bar.update(self.trainer.steps_per_run)

    def _after_epoch(self):
        if self._bar is not None and self.trainer.epochs_are_passes and self.trainer.is_last_step:
            self._show_pass_length()
        self._close()

    def _show_pass_length(self):
        """At the end of an epoch that is a pass: a pass of another length than the one before
        gets its own total, and the bar says so."""
        bar, steps = self._bar, self.local_step + 1
        if bar.total is not None and bar.total != steps:
            bar.set_description(f"Epoch {self.epoch_num} (a pass of {steps} steps; the pass "
                                f"before had {bar.total})", refresh=False)
            bar.total = steps

    def _after_train(self):
        self._close()

    def _close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
