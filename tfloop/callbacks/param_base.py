"""Hyper-parameters, and the base class of the callbacks that set them.

A :class:`HyperParam` is something a setter can read and change: a graph variable
(:class:`GraphVarParam`, e.g. the learning rate) or a Python attribute (:class:`ObjAttrParam`).
A :class:`HyperParamSetter` decides the value; it changes the parameter only when that value
differs from the last one it set, logs the change and puts it to the monitors as a scalar.
The setters themselves live in ``param_schedule`` (by schedule or function), ``param_human`` (by
a file the user edits) and ``param_stat`` (by a monitored stat's progress).
"""
import difflib
import numbers

import numpy as np

from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import UnknownNameError, get_op_tensor_name
from tfloop.utils import logger
from tfloop.utils.checks import is_number
from tfloop.utils.coerce import tensorpack_keywords

__all__ = ["HyperParam", "GraphVarParam", "ObjAttrParam", "HyperParamSetter"]


class HyperParam:
    """Base class of a hyper-parameter that a :class:`HyperParamSetter` reads and changes.

    Example:
        >>> class KeepProb(HyperParam):
        ...     readable_name = "keep_prob"
        ...     def __init__(self, layer):
        ...         self.layer = layer
        ...     def set_value(self, value):
        ...         self.layer.keep_prob = value
        ...     def get_value(self):
        ...         return self.layer.keep_prob
    """

    readable_name = "hyperparam"

    @property
    def value_fetch(self):
        """A graph element holding the parameter's value, for setters that read it along with a
        training step instead of calling :meth:`get_value`; None when ``get_value`` is cheap."""
        return None

    def setup_graph(self):
        """Called in the setter's ``setup_graph``, before the graph is finalized: make ops here."""

    def check_value(self, value):
        """``value`` as the parameter would take it; raise ValueError (naming the value and what
        the parameter takes) if it cannot. Every setter checks a value before it sets it, so a
        bad schedule entry, ``func`` result or line of a hyper-parameter file is refused with a
        clear message. The default takes any value; override it to refuse some.

        Example:
            >>> class KeepProb(HyperParam):
            ...     def check_value(self, value):
            ...         if not 0 < value <= 1:
            ...             raise ValueError(f"keep_prob must be in (0, 1], got {value!r}.")
            ...         return value
        """
        return value

    def set_value(self, value):
        """Change the parameter to ``value`` (checked by :meth:`check_value`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement set_value(value).")

    def get_value(self):
        """The parameter's current value."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_value().")

    def __str__(self):
        return f"{type(self).__name__}({self.readable_name!r})"

    __repr__ = __str__


def _find_variable(var_name, graph):
    variables = graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES) + \
        graph.get_collection(tfv1.GraphKeys.LOCAL_VARIABLES)
    for v in variables:
        if v.name == var_name:
            return v
    scoped = [v for v in variables if v.name.endswith("/" + var_name)]
    if len(scoped) == 1:
        return scoped[0]
    if scoped:
        raise ValueError(f"Several variables end with {var_name!r}: "
                         f"{', '.join(v.name for v in scoped)}. Name the one to set in full.")
    close = difflib.get_close_matches(var_name, [v.name for v in variables], n=5, cutoff=0.5)
    hint = f" Close matches: {', '.join(close)}." if close else ""
    raise UnknownNameError(
        f"No variable named {var_name!r} in the graph.{hint} A hyper-parameter must be a "
        "variable, e.g. tf.compat.v1.get_variable('learning_rate', initializer=0.1, "
        "trainable=False) in optimizer().")


class GraphVarParam(HyperParam):
    """A variable of the training graph, found by name, e.g. the learning rate.

    The name may be given with or without ``:0``; a variable inside a name scope (a tower, the
    optimizer's scope) is found by its last name components when that is unambiguous.

    Args:
        name (str): the variable's name, e.g. ``"learning_rate"``.
        shape (tuple): the values' shape; ``()`` for a scalar.

    Example:
        >>> GraphVarParam("learning_rate")             # what a plain string param means
    """

    def __init__(self, name, shape=()):
        if not isinstance(name, str) or not name:
            raise ValueError("GraphVarParam needs a variable name such as 'learning_rate', "
                             f"got {name!r}.")
        self.name = name
        self.shape = tf.TensorShape(shape)
        self.readable_name, self.var_name = get_op_tensor_name(name)
        self.var = None

    def setup_graph(self):
        found = _find_variable(self.var_name, tfv1.get_default_graph())
        if found is tfv1.train.get_global_step(found.graph):
            raise ValueError(f"{self}: {found.name} is the global step, the count of training "
                             "steps that the trainer keeps; it cannot be set as a hyper-parameter. "
                             "Schedule a variable of your own (e.g. 'learning_rate').")
        if not self.shape.is_compatible_with(found.shape):
            raise ValueError(f"{self}: the variable {found.name} has shape {found.shape}, "
                             f"not the shape {self.shape} given.")
        dtype = found.dtype.base_dtype
        if not (dtype.is_floating or dtype.is_integer):
            raise TypeError(f"{self}: the variable {found.name} is of dtype {dtype.name}; "
                            "only number variables can be set.")
        self.var = found
        self._placeholder = tfv1.placeholder(dtype, found.shape, name="value")
        self._assign_op = found.assign(self._placeholder, read_value=False)

    @property
    def value_fetch(self):
        return self.var

    @staticmethod
    def _session():
        sess = tfv1.get_default_session()
        if sess is None:
            raise RuntimeError("Setting or reading a GraphVarParam needs a default session; the "
                               "trainer provides one during training.")
        return sess

    def _check_setup(self):
        if self.var is None:
            raise RuntimeError(f"{self}.setup_graph() was not called yet.")

    def check_value(self, value) -> np.ndarray:
        """``value`` as an array of the variable's dtype and shape.

        Raises:
            ValueError: it has another shape, is not a number, is NaN or infinite, or does not fit
                the dtype (``1e39`` is infinite in float32); the message names the value.
        """
        self._check_setup()
        dtype = self.var.dtype.base_dtype
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                array = np.asarray(value, dtype=dtype.as_numpy_dtype)
            wide = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            array = None
        if array is None or not self.var.shape.is_compatible_with(array.shape):
            raise ValueError(f"{self} cannot take the value {value!r}: it needs a {dtype.name} "
                             f"of shape {self.var.shape}.")
        if not np.isfinite(wide).all():
            raise ValueError(f"{self} cannot take the value {value!r}: a hyper-parameter must be "
                             "finite (a NaN or infinite value would turn the weights into NaN).")
        info = np.finfo(array.dtype) if dtype.is_floating else np.iinfo(array.dtype)
        if (np.abs(wide) > info.max).any():
            raise ValueError(f"{self} cannot take the value {value!r}: it does not fit the "
                             f"variable's dtype {dtype.name} (largest magnitude "
                             f"{float(info.max):.4g}); use a smaller value.")
        return array

    def set_value(self, value):
        array = self.check_value(value)
        self._session().run(self._assign_op, feed_dict={self._placeholder: array})

    def get_value(self):
        self._check_setup()
        return to_python(self._session().run(self.var))


class ObjAttrParam(HyperParam):
    """An attribute of a Python object.

    Args:
        obj: the object.
        attr (str): the attribute's name; it must exist when training starts.
        readable_name (str): the name in logs, monitors and ``hyper.txt``; ``attr`` by default.

    Example:
        >>> ObjAttrParam(augmentor, "max_rotation", readable_name="rotation")
    """

    @tensorpack_keywords(attrname="attr")
    def __init__(self, obj, attr, readable_name=None):
        if not isinstance(attr, str) or not attr:
            raise ValueError(f"ObjAttrParam needs an attribute name, got {attr!r}.")
        self.obj = obj
        self.attr = attr
        self.readable_name = attr if readable_name is None else str(readable_name)

    def setup_graph(self):
        if not hasattr(self.obj, self.attr):
            raise AttributeError(f"{self}: {self.obj!r} has no attribute {self.attr!r} to set.")

    def set_value(self, value):
        setattr(self.obj, self.attr, value)

    def get_value(self):
        return getattr(self.obj, self.attr)


def to_python(value):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _same_value(a, b):
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return a == b


def describe_value(value):
    if is_number(value):
        return f"{value:.6g}"
    return repr(value)


def as_hyper_param(param):
    """``param`` as a :class:`HyperParam`; a string names a variable (:class:`GraphVarParam`)."""
    if isinstance(param, str):
        return GraphVarParam(param)
    if not isinstance(param, HyperParam):
        raise TypeError("param must be a variable name (e.g. 'learning_rate') or a HyperParam "
                        f"(GraphVarParam, ObjAttrParam), got {param!r}.")
    return param


class HyperParamSetter(Callback):
    """Base class of callbacks that set a hyper-parameter before training and at each trigger.

    Subclasses implement :meth:`_get_value_to_set` (None means "leave it as it is"). The parameter
    is set in ``before_train`` and whenever the value differs from the one this setter set last;
    each change is logged. The parameter's value is put to the monitors as a scalar named after it
    when each epoch starts (read from the graph or object, whoever set it), and again whenever
    this setter changes it during an epoch's steps (step-based schedules): so each epoch's record
    in ``stats.json`` holds the value that epoch trained with, and a change made at an epoch's end
    is recorded with the next epoch.

    Args:
        param (str or HyperParam): a variable name means :class:`GraphVarParam` of it.

    Example:
        >>> class Halve(HyperParamSetter):
        ...     def _get_value_to_set(self):
        ...         return 0.1 * 0.5 ** self.epoch_num
        >>> Halve("learning_rate")
    """

    _chief_only = False

    def __init__(self, param):
        self.param = as_hyper_param(param)
        self._last_value = None
        self._last_logged_epoch = None
        self._in_epoch = False

    @property
    def last_value(self):
        """The value this setter set last (None before the first)."""
        return self._last_value

    def _setup_graph(self):
        self.param.setup_graph()

    def _get_value_to_set(self):
        """The value the parameter should have now, or None to leave it unchanged."""
        raise NotImplementedError(f"{type(self).__name__} must implement _get_value_to_set().")

    def get_value_to_set(self):
        """The value the parameter should have now, or None to leave it unchanged."""
        return self._get_value_to_set()

    def get_current_value(self):
        """The parameter's current value (for a graph variable: read from the session)."""
        return self.param.get_value()

    def _before_train(self):
        self._in_epoch = False
        self._set_param(force=True)

    def _before_epoch(self):
        self._in_epoch = True
        value = self.get_current_value()
        if isinstance(value, np.float32):  # its shortest repr: 0.1 rather than 0.10000000149
            value = float(str(value))
        self._put(to_python(value))

    def _after_epoch(self):
        self._in_epoch = False

    def _trigger(self):
        self._set_param()

    def _set_param(self, force=False):
        """Set the value to set now, when there is one and (unless ``force``) it is new."""
        value = self.get_value_to_set()
        if value is None or (not force and self._last_value is not None
                             and _same_value(value, self._last_value)):
            return
        self.param.set_value(value)
        value = to_python(value)
        if self.epoch_num != self._last_logged_epoch:
            self._last_logged_epoch = self.epoch_num
            was = "" if self._last_value is None else f" (was {describe_value(self._last_value)})"
            logger.detail(f"{self}: {self.param.readable_name} = {describe_value(value)} "
                          f"at global step {self.global_step}{was}.")
        self._last_value = value
        if self._in_epoch:
            self._put(value)

    def _put(self, value):
        if np.ndim(value) == 0 and isinstance(value, numbers.Real):
            self.trainer.monitors.put_scalar(self.param.readable_name, value)

    def _state_dict(self):
        value = self._last_value
        return {"last_value": value.tolist() if isinstance(value, np.ndarray) else value}

    def _load_state_dict(self, state):
        self._last_value = state.get("last_value")

    def __str__(self):
        return f"{type(self).__name__}({self.param.readable_name!r})"

    __repr__ = __str__
