"""Setting a hyper-parameter by hand: a file in the log directory, edited while training runs."""
import math
import os
import stat

from tfloop.callbacks.param_base import HyperParamSetter
from tfloop.utils import logger
from tfloop.utils.logdir import local_path_in

__all__ = ["HumanHyperParamSetter", "parse_hyper_file"]


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
            raise ValueError(
                f"file_name must be a file name such as 'hyper.txt', got {file_name!r}.")
        self.file_name = file_name
        self.path = None
        self._warned_about = None

    def _setup_graph(self):
        super()._setup_graph()
        self.path = self._resolve_path()
        logger.info(f"{self}: write '{self.param.readable_name}:<value>' to {self.path} to change "
                    "it during training.")

    def _resolve_path(self):
        return local_path_in(
            self.trainer.logdir, self.file_name,
            f"{self} reads {self.file_name!r} from the log directory, but no log directory is "
            "set: call logger.set_logger_dir(...) first, or pass an absolute path as file_name.",
            str(self))

    def _read(self):
        # Non-blocking, and only a regular file is read: opening a FIFO for reading would wait
        # for a writer, blocking training forever.
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as e:
            self._warn_once(str(e), [
                f"{self}: cannot read {self.path}: {e}; the value stays as it is."])
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self._warn_once("not a file", [
                    f"{self}: {self.path} is not a regular file (a FIFO, a directory or a "
                    "device), so it is not read; the value stays as it is. Write a plain text "
                    "file there."])
                return None
            with os.fdopen(fd, encoding="utf-8", closefd=False) as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as e:
            self._warn_once(str(e), [
                f"{self}: cannot read {self.path}: {e}; the value stays as it is."])
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
        messages = [f"{self}: {self.path} line {number}: {line!r} ignored: {reason}; write lines "
                    f"like '{name}:0.01'." for number, line, reason in problems]
        if name not in names:
            messages.append(f"{self}: {self.path} has no line '{name}:<value>'; the value stays as "
                            "it is.")
        value = values.get(name)
        if value is not None:
            try:
                self.param.check_value(value)
            except ValueError as e:
                messages.append(f"{self}: {self.path} line '{name}:{value!r}' ignored: {e}")
                value = None
        if messages:
            self._warn_once(text, messages)
        return value
