"""Setting a hyper-parameter by a schedule of points, or by a function of the epoch or step."""
import bisect
import math

import numpy as np

from tfloop.callbacks.param_base import HyperParamSetter, describe_value, to_python
from tfloop.callbacks.schedule import Schedule
from tfloop.utils import logger
from tfloop.utils.checks import check_callable, is_int, is_number
from tfloop.utils.coerce import tensorpack_float, tensorpack_int

__all__ = ["ScheduledHyperParamSetter", "HyperParamSetterWithFunc"]

_SCHEDULE_EXAMPLE = "e.g. [(0, 0.1), (30, 0.01), (60, 0.001)]"


def _check_schedule(schedule):
    """The schedule as ``[(int point, float value)]`` sorted by point, converted as tensorpack
    did (``int(point)``, ``float(value)``, then sorted), or an error naming the bad entry."""
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise ValueError(f"schedule must be a non-empty list of (epoch or step, value) pairs, "
                         f"{_SCHEDULE_EXAMPLE}; got {schedule!r}.")
    checked = []
    for i, entry in enumerate(schedule):
        where = f"schedule entry {i} ({entry!r})"
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise ValueError(f"{where} is not an (epoch or step, value) pair; a valid schedule: "
                             f"{_SCHEDULE_EXAMPLE}.")
        point, value = tensorpack_int(entry[0], f"{where}: the epoch or step"), \
            tensorpack_float(entry[1])
        if not is_int(point) or point < 0:
            raise ValueError(f"{where}: the epoch or step must be an int >= 0, got {point!r}; a "
                             f"valid schedule: {_SCHEDULE_EXAMPLE}.")
        if not is_number(value) or not math.isfinite(value):
            raise ValueError(f"{where}: the value must be a finite number, got {value!r}; a valid "
                             f"schedule: {_SCHEDULE_EXAMPLE}.")
        checked.append((int(point), float(value), i))
    ordered = sorted(checked, key=lambda entry: entry[0])
    for (point, first, i), (next_point, second, j) in zip(ordered, ordered[1:]):
        if point == next_point:
            raise ValueError(
                f"schedule entries {i} and {j} both set epoch/step {point} (to {first:g} and "
                f"{second:g}): tensorpack silently used the first; keep one entry per "
                f"epoch/step; a valid schedule: {_SCHEDULE_EXAMPLE}.")
    if ordered != checked:
        logger.info(f"ScheduledHyperParamSetter: the schedule's points are not in increasing "
                    f"order; they are taken sorted, as tensorpack sorted them: "
                    f"{[(p, v) for p, v, _ in ordered]}.")
    return [(point, value) for point, value, _ in ordered]


class ScheduledHyperParamSetter(HyperParamSetter):
    """Set a hyper-parameter by a schedule of (epoch or step, value) points.

    A point N means "after epoch N (or global step N) has finished": ``(30, 1e-2)`` makes epoch
    31 the first to train with 1e-2, and ``(0, v)`` sets ``v`` before the first epoch. Between
    points the value of the last point reached holds (``interp=None``) or is linearly
    interpolated (``interp='linear'``, recomputed at each point). Before the first point the
    parameter is not touched; after the last one its value holds.

    In ``before_train`` the value for the point already reached (``starting_epoch - 1``, or the
    resumed global step) is set when ``set_at_beginning``, so a run that starts mid-schedule gets
    the right value. With ``set_at_beginning=False`` that value is only taken as the current one:
    the parameter changes at the next point whose value differs.

    Args:
        param (str or HyperParam): the parameter, e.g. ``"learning_rate"``.
        schedule (list): ``(epoch or step, value)`` pairs, points ints >= 0, one value per
            point. As in tensorpack, the points are sorted, and each is converted with ``int()``
            and each value with ``float()`` (a config file's ``('25', '1e-5')`` is
            ``(25, 1e-05)``).
        interp (str): None or ``"linear"``.
        step_based (bool): points are global steps: the parameter is set after the step that
            reaches each point (with ``interp='linear'``, after every step); otherwise epochs,
            checked at each trigger.
        set_at_beginning (bool): set the value of the current point in ``before_train``.

    Example:
        >>> ScheduledHyperParamSetter("learning_rate", [(30, 1e-2), (60, 1e-3), (85, 1e-4)])
        >>> ScheduledHyperParamSetter("learning_rate", [(0, 0.0), (1000, 0.1)], interp="linear",
        ...                           step_based=True)               # a linear warm-up
    """

    def __init__(self, param, schedule, interp=None, step_based=False, set_at_beginning=True):
        self.schedule = _check_schedule(schedule)
        if interp not in (None, "linear"):
            raise ValueError(f"interp must be None or 'linear', got {interp!r}.")
        self.interp = interp
        self.step_based = bool(step_based)
        self.set_at_beginning = bool(set_at_beginning)
        self._points = [p for p, _ in self.schedule]
        # Step based: set after the steps that reach a point, or after every step to interpolate.
        stepwise = self.step_based and interp is None
        self.when = Schedule(step_hook=self.step_based,
                             step_points=tuple(self._points) if stepwise else ())
        super().__init__(param)

    def _setup_graph(self):
        super()._setup_graph()
        for i, (point, value) in enumerate(self.schedule):
            try:
                self.param.check_value(value)
            except ValueError as e:
                raise ValueError(f"schedule entry {i} ({point}, {value!r}): {e}") from None

    def value_at(self, point):
        """The scheduled value once epoch/step ``point`` has finished (None before the first)."""
        i = bisect.bisect_right(self._points, point) - 1
        if i < 0:
            return None
        start, value = self.schedule[i]
        if self.interp is None or i + 1 == len(self.schedule) or point == start:
            return value
        end, end_value = self.schedule[i + 1]
        return value + (end_value - value) * (point - start) / (end - start)

    def _current_point(self):
        return self.global_step if self.step_based else self.epoch_num

    def _get_value_to_set(self):
        return self.value_at(self._current_point())

    def _before_train(self):
        self._warn_if_started_mid_schedule()
        if self.set_at_beginning:
            super()._before_train()
        else:
            self._last_value = self.value_at(self._current_point())

    def _warn_if_started_mid_schedule(self):
        """Starting after point 0 (a later ``starting_epoch``, or a resumed run), warn when the
        parameter differs from what the schedule says it should be by now (as tensorpack)."""
        point = self._current_point()
        expected = self.value_at(point)
        if point == 0 or expected is None:
            return
        actual = to_python(self.get_current_value())
        try:
            same = bool(np.allclose(actual, expected))
        except (TypeError, ValueError):
            same = False
        if same:
            return
        where = f"{'step' if self.step_based else 'epoch'} {point}"
        action = ("it is set now (set_at_beginning=True)." if self.set_at_beginning else
                  "it is left as is (set_at_beginning=False): if no other callback sets it, check "
                  "its initial value.")
        logger.warning(f"{self}: by the schedule, '{self.param.readable_name}' should be "
                       f"{describe_value(expected)} after {where}, where training starts, but it "
                       f"is {describe_value(actual)}; {action}")

    def _trigger_step(self):
        self._set_param()

    def _trigger_epoch(self):
        if not self.step_based:
            self.trigger()


class HyperParamSetterWithFunc(HyperParamSetter):
    """Set a hyper-parameter to ``func(point, current_value)`` in ``before_train`` and then after
    every epoch (or every step when ``step_based``).

    ``point`` is the epoch number just finished (``starting_epoch - 1`` in ``before_train``), or
    with ``step_based`` the global step, i.e. the number of steps finished: the value returned is
    the one the next step trains with. ``func`` returns None to leave the value as it is. A step
    based setter of a graph variable reads the current value along with the step, at no extra cost.

    Args:
        param (str or HyperParam): the parameter, e.g. ``"learning_rate"``.
        func (callable): ``func(epoch_num or global_step, current_value) -> new value or None``.
        step_based (bool): call ``func`` after every step instead of at each trigger.

    Example:
        >>> HyperParamSetterWithFunc("learning_rate",                # decay 10% every epoch
        ...                          lambda epoch, lr: lr * 0.9)
        >>> HyperParamSetterWithFunc("learning_rate",                # warm up over 500 steps
        ...     lambda step, lr: 0.1 * (step + 1) / 500 if step < 500 else None,
        ...                          step_based=True)
    """

    def __init__(self, param, func, step_based=False):
        self.f = check_callable(func, "func",
                                signature="func(epoch_num or global_step, current value)")
        self.step_based = bool(step_based)
        self._step_value = None
        super().__init__(param)
        self.when = Schedule(step_hook=self.step_based, fetches=False)

    def _get_value_to_set(self):
        point = self.global_step if self.step_based else self.epoch_num
        current = self._step_value if self._step_value is not None else self.get_current_value()
        value = self.f(point, current)
        if value is not None:
            try:
                self.param.check_value(value)
            except ValueError as e:
                raise ValueError(f"{self}: func({point}, {current!r}) returned {value!r}, which is "
                                 f"refused: {e}") from None
        return value

    def _reads_along_with_step(self):
        return self.step_based and self.param.value_fetch is not None

    def _setup_graph(self):
        super()._setup_graph()
        self.when = self.when.replace(fetches=self._reads_along_with_step())

    def _before_run(self, ctx):
        return [self.param.value_fetch]

    def _after_run(self, ctx, values):
        self._step_value = to_python(values.results[0])

    def _trigger_step(self):
        try:
            self._set_param()
        finally:
            self._step_value = None

    def _trigger_epoch(self):
        if not self.step_based:
            self.trigger()
