"""Setting a hyper-parameter by hand (a file in the log dir) or by a monitored stat's progress."""
import math
import os
import stat
from collections import deque

from tfloop.callbacks.param import HyperParamSetter
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.utils import logger

__all__ = ["HumanHyperParamSetter", "StatMonitorParamSetter", "parse_hyper_file"]


def parse_hyper_file(text):
    """Parse ``name:value`` lines; blank lines and lines starting with ``#`` are skipped.

    Returns:
        (dict, list, set): the values by name (a later line wins), the problems as
        ``(line number, line, reason)``, and every name a line mentioned, valid or not.

    Example:
        >>> values, problems, names = parse_hyper_file("learning_rate:0.01\\nmomentum=0.9\\n")
        >>> values, problems
        ({'learning_rate': 0.01}, [(2, 'momentum=0.9', "no ':' between name and value")])
    """
    values, problems, names = {}, [], set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, value = line.rpartition(":")
        name = name.strip()
        if not colon:
            problems.append((number, line, "no ':' between name and value"))
            continue
        if not name:
            problems.append((number, line, "no name before ':'"))
            continue
        names.add(name)
        try:
            number_value = float(value)
        except ValueError:
            problems.append((number, line, f"{value.strip()!r} is not a number"))
            continue
        if not math.isfinite(number_value):
            problems.append((number, line, "the value must be finite"))
            continue
        values[name] = number_value
    return values, problems, names


class HumanHyperParamSetter(HyperParamSetter):
    """Set a hyper-parameter from a text file you edit while training runs.

    At ``before_train`` and each trigger the file is read; a ``<name>:<value>`` line for the
    parameter's readable name sets it when the value differs from the one this setter set last
    (so a schedule's later change is not undone by an old line). Blank lines and ``#`` comments
    are fine. A malformed line, or a file without the parameter, logs a warning naming the file,
    the line number and the line, once per version of the file, and changes nothing else. A
    missing file is ignored quietly; an unreadable one logs a warning. Training never stops
    because of the file. Replace the file in one move (``mv``) rather than writing it in place.

    Args:
        param (str or HyperParam): the parameter, e.g. ``"learning_rate"``.
        file_name (str): relative to the log directory, or an absolute path.

    Raises:
        ValueError: at setup, when ``file_name`` is relative and no log directory is set.

    Example:
        >>> HumanHyperParamSetter("learning_rate")
        >>> # then, during training:  echo "learning_rate:0.01" > train_log/run/hyper.txt
    """

    def __init__(self, param, file_name="hyper.txt"):
        super().__init__(param)
        if not isinstance(file_name, str) or not file_name:
            raise ValueError(f"file_name must be a file name such as 'hyper.txt', got {file_name!r}.")
        self.file_name = file_name
        self.path = None
        self._warned_about = None

    def _setup_graph(self):
        super()._setup_graph()
        self.path = self._resolve_path()
        logger.info(f"{self}: write '{self.param.readable_name}:<value>' to {self.path} to change it during training.")

    def _resolve_path(self):
        if os.path.isabs(self.file_name):
            return self.file_name
        log_dir = logger.get_logger_dir()
        if log_dir is None:
            raise ValueError(
                f"{self} reads {self.file_name!r} from the log directory, but no log directory is set: call "
                "logger.set_logger_dir(...) first, or pass an absolute path as file_name.")
        return os.path.join(log_dir, self.file_name)

    def _read(self):
        # Non-blocking, and only a regular file is read: opening a FIFO for reading would wait
        # for a writer, blocking training forever.
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as e:
            self._warn_once(str(e), [f"{self}: cannot read {self.path}: {e}; the value stays as it is."])
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self._warn_once("not a file", [
                    f"{self}: {self.path} is not a regular file (a FIFO, a directory or a device), so it is not "
                    "read; the value stays as it is. Write a plain text file there."])
                return None
            with os.fdopen(fd, encoding="utf-8", closefd=False) as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as e:
            self._warn_once(str(e), [f"{self}: cannot read {self.path}: {e}; the value stays as it is."])
            return None
        finally:
            os.close(fd)

    def _warn_once(self, key, messages):
        if key == self._warned_about:
            return
        self._warned_about = key
        for message in messages:
            logger.warning(message)

    def _get_value_to_set(self):
        text = self._read()
        if text is None:
            return None
        values, problems, names = parse_hyper_file(text)
        name = self.param.readable_name
        messages = [f"{self}: {self.path} line {number}: {line!r} ignored: {reason}; write lines like '{name}:0.01'." for number, line, reason in problems]
        if name not in names:
            messages.append(f"{self}: {self.path} has no line '{name}:<value>'; the value stays as it is.")
        value = values.get(name)
        check = getattr(self.param, "check_value", None)
        if value is not None and check is not None:
            try:
                check(value)
            except ValueError as e:
                messages.append(f"{self}: {self.path} line '{name}:{value!r}' ignored: {e}")
                value = None
        if messages:
            self._warn_once(text, messages)
        return value


class StatMonitorParamSetter(HyperParamSetter, StatMonitorCallback):
    """Change a hyper-parameter when a monitored stat stops improving.

    At each trigger the stat's latest value, when it was put since the last trigger during this
    run, joins a window of the last ``last_k`` values. When
    the window is full and none of its later values beats the oldest one by more than
    ``threshold`` (lower is better; higher with ``reverse=True``), the parameter is set to
    ``value_func(current value)`` and the window is emptied, so the next change can come
    ``last_k`` triggers later at the earliest. A trigger with no new value of the stat adds
    nothing. The parameter is not touched in ``before_train``. The window and the last change
    are saved in the callback's state.

    Args:
        param (str or HyperParam): the parameter, e.g. ``"learning_rate"``.
        stat_name (str): the monitored scalar, e.g. ``"val-error"``.
        value_func (callable): ``value_func(current value) -> new value``.
        threshold (float): how much better than the oldest value counts as an improvement (>= 0).
        last_k (int): the window's length, >= 2.
        reverse (bool): higher values of the stat are better.

    Example:
        >>> StatMonitorParamSetter("learning_rate", "val-error", lambda lr: lr * 0.2,
        ...                        threshold=0, last_k=5)    # no better in 5 epochs: lr / 5
    """

    def __init__(self, param, stat_name, value_func, threshold, last_k, reverse=False):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or \
                not threshold >= 0:
            raise ValueError(f"threshold must be a number >= 0, got {threshold!r}.")
        HyperParamSetter.__init__(self, param)
        StatMonitorCallback.__init__(self, stat_name, mode="max" if reverse else "min",
                                     min_delta=threshold)
        if not callable(value_func):
            raise TypeError("value_func must be callable as value_func(current value) -> "
                            f"new value, got {value_func!r}.")
        if isinstance(last_k, bool) or not isinstance(last_k, int) or last_k < 2:
            raise ValueError("last_k must be an int >= 2 (the number of values to compare), "
                             f"got {last_k!r}.")
        self.stat_name = stat_name
        self.value_func = value_func
        self.threshold = self.min_delta
        self.last_k = last_k
        self.reverse = bool(reverse)
        self.history = deque(maxlen=last_k)
        self.last_change_step = None
        self._warned_stale = False

    def _before_train(self):
        self.skip_values_before(self.global_step)

    def _best_of(self, values):
        values = [v for v in values if not math.isnan(v)]
        if not values:
            return None
        return min(values) if self.mode == "min" else max(values)

    def _get_value_to_set(self):
        new = self.read_new_values(warn_missing=True)
        if not new:
            if self.read_history() and not self._warned_stale:
                self._warned_stale = True
                logger.warning(f"{self}: triggered without a new value of {self.stat!r} since the last "
                               "trigger; it is put less often than this callback runs.")
            return None
        step, value = new[-1]
        self.history.append((step, value))
        self.update_best(value)
        if len(self.history) < self.last_k:
            return None
        values = [v for _, v in self.history]
        if self.is_improvement(self._best_of(values[1:]), reference=values[0]):
            return None
        self.history.clear()
        self.last_change_step = self.global_step
        logger.info(f"{self}: no improvement of {self.stat} by more than {self.threshold} in {values}; changing {self.param.readable_name}.")
        return self.value_func(self.get_current_value())

    def _state_dict(self):
        state = HyperParamSetter._state_dict(self)
        state.update(StatMonitorCallback._state_dict(self))
        state.update(history=[list(entry) for entry in self.history],
                     last_change_step=self.last_change_step)
        return state

    def _load_state_dict(self, state):
        HyperParamSetter._load_state_dict(self, state)
        StatMonitorCallback._load_state_dict(self, state)
        self.history = deque((tuple(entry) for entry in state.get("history", [])),
                             maxlen=self.last_k)
        self.last_change_step = state.get("last_change_step")

    def __str__(self):
        return f"{type(self).__name__}({self.param.readable_name!r}, {self.stat!r})"

    __repr__ = __str__
