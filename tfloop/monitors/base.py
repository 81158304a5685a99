"""Monitors: callbacks that receive data (scalars, images, summaries, events) and write it out.

A backend subclasses :class:`MonitorBase` and implements any of the ``process_*`` methods. The
:class:`Monitors` dispatcher, available as ``trainer.monitors``, is how everything else puts data:
it sends each item to every backend at once and keeps the history of every scalar.
"""
import functools
import numbers
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1

__all__ = ["MonitorBase", "Monitors", "NoOpMonitor", "summary_scalar"]


class MonitorBase(Callback):
    """Base class of monitor backends.

    Override any of ``process_scalar``, ``process_image``, ``process_summary``,
    ``process_event``; the default of each ignores the data. Backends are callbacks too: open files
    in ``_setup_graph`` or ``_before_train``, flush in ``_trigger_epoch`` (or ``_trigger``), close
    in ``_after_train``. Monitors run on every worker (not chief-only).

    A backend receives nothing before its ``before_train`` has run: what other callbacks put
    earlier (in their ``setup_graph``, or in a ``before_train`` called before the backend's) is
    held by the :class:`Monitors` dispatcher and handed to the backend, in the order it was put,
    as soon as its ``before_train`` returns — or, when training fails before reaching it, right
    before its ``after_train``. So whatever ``_before_train`` opens is open for every item.

    Example:
        >>> class PrintScalars(MonitorBase):
        ...     def process_scalar(self, name, value):
        ...         print(self.global_step, name, value)
    """

    _chief_only = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A backend's own public ``before_train``/``after_train`` (Keras style) hand over the
        held items as :meth:`before_train` and :meth:`after_train` do."""
        super().__init_subclass__(**kwargs)
        if "before_train" in cls.__dict__:
            cls.before_train = _then_receiving(cls.__dict__["before_train"])  # type: ignore[method-assign]
        if "after_train" in cls.__dict__:
            cls.after_train = _receiving_first(cls.__dict__["after_train"])  # type: ignore[method-assign]

    def before_train(self) -> None:
        self._before_train()
        self._start_receiving()

    def after_train(self) -> None:
        self._start_receiving()
        self._after_train()

    def _start_receiving(self) -> None:
        """Receive what was put before this backend's ``before_train``; from now on, receive
        each item as it is put."""
        dispatcher = self.trainer.monitors if self.trainer is not None else None
        if isinstance(dispatcher, Monitors):
            dispatcher._hand_over(self)

    def process_scalar(self, name: str, value: float) -> None:
        """Receive a scalar ``value`` (a Python float or int) named ``name``."""

    def process_image(self, name: str, images: Any) -> None:
        """Receive images as a uint8 array of shape NHWC (C is 1, 3 or 4)."""

    def process_summary(self, summary: Any) -> None:
        """Receive a ``tf.compat.v1.Summary`` protobuf."""

    def process_event(self, event: Any) -> None:
        """Receive a ``tf.compat.v1.Event`` protobuf (step and wall time already set)."""


def _then_receiving(before_train: Callable[[MonitorBase], None]) -> Callable[..., None]:
    @functools.wraps(before_train)
    def receiving_after(self: MonitorBase) -> None:
        before_train(self)
        self._start_receiving()
    return receiving_after


def _receiving_first(after_train: Callable[[MonitorBase], None]) -> Callable[..., None]:
    @functools.wraps(after_train)
    def receiving_before(self: MonitorBase) -> None:
        self._start_receiving()
        after_train(self)
    return receiving_before


class NoOpMonitor(MonitorBase):
    """A monitor that ignores everything; use it in place of a backend you want to switch off."""

    def __init__(self, name=None):
        self._name = name

    def __str__(self):
        return f"NoOpMonitor({self._name or ''})"


def _as_scalar(name, value):
    """``value`` as a Python int or float; errors name the scalar."""
    original = value
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(())[()]
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, numbers.Real):
        shape = f" of shape {np.shape(original)}" if isinstance(original, np.ndarray) \
            else ""
        raise TypeError(f"put_scalar({name!r}) needs one real number (int, float or a numpy "
                        f"scalar), got {original!r} ({type(original).__name__}{shape}); put each "
                        "value under a name of its own, or convert it with float(...).")
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            as_text = str(value)
            raise ValueError(f"put_scalar({name!r}) got the int {as_text[:6]}...{as_text[-3:]} "
                             f"({len(str(abs(value)))} digits), too large for a float64; put a "
                             "smaller value.") from None
        return value
    return float(value)


def _as_tf_summary(summary):
    """``summary`` as a ``tf.compat.v1.Summary``: itself, parsed from bytes, or re-parsed from
    another class's serialization (TensorBoard's ``Summary`` is another class of the same
    shape)."""
    if isinstance(summary, tfv1.Summary):
        return summary
    descriptor = getattr(summary, "DESCRIPTOR", None)
    if isinstance(summary, (bytes, bytearray)):
        data = bytes(summary)
    elif getattr(descriptor, "name", None) == "Summary" and hasattr(summary, "SerializeToString"):
        data = summary.SerializeToString()
    else:
        raise TypeError("put_summary needs a Summary or its bytes: a tf.compat.v1.Summary, "
                        "TensorBoard's tensorboard.compat.proto.summary_pb2.Summary or another "
                        "protobuf message named Summary of that shape; got "
                        f"{type(summary).__name__}.")
    try:
        return tfv1.Summary.FromString(data)
    except Exception as e:  # protobuf's DecodeError, whose module differs between backends
        raise ValueError(f"put_summary could not read a Summary from the {len(data)} bytes of "
                         f"the {type(summary).__name__} it was given: {e}") from None


# The plugins whose one-number tensors are scalars: TensorBoard's scalars (its v1 ``scalar_pb``,
# TF 2's ``tf.summary.scalar``) and none (a plain tensor summary).
_SCALAR_PLUGINS = frozenset(["scalars", ""])


def summary_scalar(value):
    """The number a ``Summary.Value`` holds as a scalar, or None: its ``simple_value``, or the
    one element of a real-number ``tensor`` of TensorBoard's scalars plugin or of no plugin
    (``tensorboard.summary.v1.scalar_pb``, ``tf.summary.scalar``). Histograms, text, images and
    other plugins' tensors (HParams writes one-number tensors too) are not scalars.

    Example:
        >>> summary_scalar(tensorboard.summary.v1.scalar_pb("acc", 0.5).value[0])
        0.5
    """
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return value.simple_value
    if kind != "tensor" or value.metadata.plugin_data.plugin_name not in _SCALAR_PLUGINS:
        return None
    try:
        dtype = tf.as_dtype(value.tensor.dtype)
    except TypeError:
        return None
    if not (dtype.is_floating or dtype.is_integer or dtype.is_bool) or dtype.is_quantized:
        return None
    array = tf.make_ndarray(value.tensor)
    if array.size != 1:
        return None
    number = array.reshape(()).item()
    return int(number) if isinstance(number, bool) else number


_TOWER_PREFIX = re.compile(r"^(tower\d+|towerp\d+)/")


def _strip_tower_prefix(name):
    return _TOWER_PREFIX.sub("", name)


class Monitors(Callback):
    """Dispatch data to every monitor backend, and remember every scalar.

    Available as ``trainer.monitors``; always the last callback, so every other callback's
    ``trigger_epoch`` has put its data before backends flush. Until a backend's ``before_train``
    has run, what is put is held for it and handed over then (see :class:`MonitorBase`); the
    history of scalars has every value as soon as it is put.

    Example:
        >>> self.trainer.monitors.put_scalar("val-error", 0.03)
        >>> self.trainer.monitors.get_latest("val-error")
        0.03
        >>> self.trainer.monitors.get_history("val-error")
        [(1000, 0.03)]
    """

    _chief_only = False

    def __init__(self, monitors):
        for m in monitors:
            if not isinstance(m, MonitorBase):
                raise TypeError(f"Every monitor must be a MonitorBase, got {m!r} "
                                f"({type(m).__name__}).")
        self._monitors = list(monitors)
        self._scalar_history = {}
        # What each backend whose before_train has not run yet was sent: (method, args), in order.
        self._held = {id(m): [] for m in self._monitors}
        self._set_receivers()

    def _set_receivers(self):
        self._scalar_receivers = self._receivers("process_scalar")
        self._image_receivers = self._receivers("process_image")
        self._summary_receivers = self._receivers("process_summary")
        self._event_receivers = self._receivers("process_event")

    def _receivers(self, method):
        return [self._holder(m, method) if id(m) in self._held else getattr(m, method)
                for m in self._monitors
                if getattr(type(m), method) is not getattr(MonitorBase, method)]

    def _holder(self, backend, method):
        held = self._held[id(backend)]
        return lambda *args: held.append((method, args))

    def _hand_over(self, backend):
        """Give ``backend`` what it was sent so far, in order; send it the rest as it comes."""
        held = self._held.pop(id(backend), None)
        if held is None:
            return
        self._set_receivers()
        for method, args in held:
            getattr(backend, method)(*args)

    @property
    def backends(self):
        return tuple(self._monitors)

    def put_scalar(self, name, value):
        """Put a scalar: recorded in the history at the current global step, sent to every backend.

        Raises:
            TypeError: ``name`` is not a non-empty str, or ``value`` is not one real number (a str,
                None, an array of several values); the message names the scalar.
            ValueError: ``value`` is an int too large for a float64.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"put_scalar needs a non-empty str as the scalar's name, got {name!r} "
                            f"({type(name).__name__}) for the value {value!r}.")
        value = _as_scalar(name, value)
        step = self.trainer.global_step if self.trainer is not None else 0
        history = self._scalar_history.get(name)
        if history is None:
            history = self._scalar_history[name] = []
        history.append((step, value))
        for receive in self._scalar_receivers:
            receive(name, value)

    def put_image(self, name, images):
        """Put images: an array of HW, HWC or NHWC; floats are scaled from [0, 1] to uint8."""
        images = np.asarray(images)
        if images.dtype.kind not in "biuf":
            raise TypeError(f"put_image({name!r}) needs an array of numbers (uint8, or floats in "
                            f"[0, 1]), got dtype {images.dtype} ({type(images).__name__}); convert "
                            "it, e.g. np.asarray(images, np.float32).")
        if images.ndim == 2:
            images = images[np.newaxis, :, :, np.newaxis]
        elif images.ndim == 3:
            images = images[np.newaxis]
        if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
            raise ValueError(f"put_image({name!r}) needs HW, HWC or NHWC images with 1, 3 or 4 "
                             f"channels; got shape {images.shape}.")
        if images.dtype != np.uint8:
            images = np.clip(images * 255.0 if images.dtype.kind == "f" else images, 0, 255)
            images = images.astype(np.uint8)
        for receive in self._image_receivers:
            receive(name, images)

    def put_summary(self, summary):
        """Put a ``Summary`` proto or its serialized bytes: ``tf.compat.v1.Summary``,
        TensorBoard's own ``Summary`` (``tensorboard.compat.proto.summary_pb2``, e.g. from
        ``tensorboard.plugins.hparams.api.hparams_pb``) or any protobuf message named
        ``Summary`` of that shape, which becomes a ``tf.compat.v1.Summary``.

        Each scalar value inside is also put as a scalar under its tag (tower prefixes such as
        ``tower0/`` stripped): a ``simple_value``, or a one-number tensor of TensorBoard's
        scalars plugin (``tensorboard.summary.v1.scalar_pb("acc", x)`` is the scalar
        ``acc/scalar_summary``; see :func:`summary_scalar`).
        """
        summary = _as_tf_summary(summary)
        for value in summary.value:
            number = summary_scalar(value)
            if number is not None:
                value.tag = _strip_tower_prefix(value.tag)
                self.put_scalar(value.tag, number)
        for receive in self._summary_receivers:
            receive(summary)

    def put_event(self, event):
        """Put a ``tf.compat.v1.Event``; its step and wall time are set here."""
        event.step = self.trainer.global_step
        event.wall_time = time.time()
        for receive in self._event_receivers:
            receive(event)

    def get_latest(self, name):
        """The latest value put for scalar ``name``.

        Raises:
            KeyError: no scalar of that name was put; the message lists the known names.
        """
        return self._history(name)[-1][1]

    def get_history(self, name):
        """Every ``(global_step, value)`` put for scalar ``name``, oldest first."""
        return list(self._history(name))

    def _history(self, name):
        history = self._scalar_history.get(name)
        if not history:
            known = sorted(self._scalar_history) or "none yet"
            raise KeyError(f"No scalar named {name!r} was put to the monitors. Known names: "
                           f"{known}.")
        return history

    def scalar_names(self):
        """Names of every scalar put so far."""
        return sorted(self._scalar_history)
