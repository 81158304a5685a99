"""Predictors: call a graph's output tensors on numpy inputs, through one cached session callable.

The base classes live here, below both ``train/`` (``trainer.get_predictor``) and ``predict/``
(the offline predictors), which both return an :class:`OnlinePredictor`.
"""
import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tfloop.compat import tf
from tfloop.tfutils.common import get_op_or_tensor_by_name, get_op_tensor_name
from tfloop.tfutils.predictor_inputs import convert_input_value

__all__ = ["PredictorBase", "OnlinePredictor"]

RunContext = Callable[[], contextlib.AbstractContextManager[Any]]


class PredictorBase:
    """Base class of predictors: ``predictor(*inputs)`` returns the list of outputs.

    Attributes:
        return_input (bool): return ``(inputs, outputs)`` instead of just the outputs.

    Example:
        >>> class Doubler(PredictorBase):
        ...     def _do_call(self, dp):
        ...         return [dp[0] * 2]
        >>> Doubler()(np.ones(3))
        [array([2., 2., 2.])]
    """

    return_input = False

    def __call__(self, *dp: Any) -> Any:
        """Run the predictor on one datapoint: one value per input, in the order of its inputs.

        Returns:
            list[np.ndarray]: the outputs, in the order of the output names.
        """
        outputs = self._do_call(dp)
        return (dp, outputs) if self.return_input else outputs

    def _do_call(self, dp):
        raise TypeError(f"{type(self).__name__} must define _do_call(dp).")


class _InputSpec:
    __slots__ = ("name", "dtype", "shape", "description", "is_string")

    def __init__(self, tensor):
        self.name = tensor.name
        self.dtype = np.dtype(tensor.dtype.as_numpy_dtype)
        self.shape = tuple(tensor.shape.as_list()) if tensor.shape.rank is not None else None
        shape = "?" if self.shape is None else list(self.shape)
        self.description = f"{tensor.dtype.name} {shape}"
        self.is_string = self.dtype.kind == "O"

    def check(self, value, who):
        arr = value if type(value) is np.ndarray else None
        if arr is None or arr.dtype != self.dtype or self.is_string:
            arr = convert_input_value(value, self.name, self.dtype, self.description, who)
        shape = self.shape
        if shape is not None:
            got = arr.shape
            if len(got) != len(shape) or any(d is not None and d != g
                                              for d, g in zip(shape, got)):
                raise ValueError(f"{who}: input {self.name!r} expects {self.description}, got "
                                 f"shape {list(got)}.")
        return arr


class OnlinePredictor(PredictorBase):
    """A predictor on tensors of a graph, run in a given session (or the default session).

    Calls are thread-safe: several Python threads may call one predictor at once. Each input is
    checked against its tensor's shape and dtype, and cast within its kind (e.g. float64 values
    to a float32 input; integers must fit the input's dtype); a ``tf.string`` input takes bytes
    or str (arrays of dtype ``S``, ``U`` or object, or lists). The hot path is one cached
    ``session.make_callable``.

    Args:
        input_tensors (list): the tensors to feed (tensors or their names), in call order.
        output_tensors (list): the tensors to fetch (tensors or names), in output order.
        return_input (bool): return ``(inputs, outputs)``.
        sess (tf.compat.v1.Session): the session to run in; None: the default session at the
            first call (or the one a trainer binds at initialization).
        run_context (callable): makes a context manager entered around each call, e.g.
            ``Precision.rewriter_environment`` (the environment TensorFlow's mixed-precision
            rewriter reads when the first call rewrites the graph). None: nothing.

    Example:
        >>> predictor = OnlinePredictor([x], [prob], sess=sess)
        >>> prob_value, = predictor(np.zeros([8, 3], np.float32))
    """

    ACCEPT_OPTIONS = False

    def __init__(self, input_tensors: list, output_tensors: list, return_input: bool = False,
                 sess: Any = None, *,
                 run_context: RunContext | None = None) -> None:
        graph = None
        for t in list(input_tensors) + list(output_tensors):
            if isinstance(t, tf.Tensor):
                graph = t.graph
                break
        self.input_tensors = [self._as_tensor(t, graph) for t in input_tensors]
        self.output_tensors = [self._as_tensor(t, graph) for t in output_tensors]
        if not self.output_tensors:
            raise ValueError(f"{type(self).__name__} needs at least one output tensor.")
        self.return_input = bool(return_input)
        self._specs = [_InputSpec(t) for t in self.input_tensors]
        self._who = f"{type(self).__name__}({', '.join(s.name for s in self._specs)})"
        self._callable = None
        self._run_context = run_context or contextlib.nullcontext
        self.sess = sess

    @staticmethod
    def _as_tensor(t, graph):
        if isinstance(t, str):
            if graph is None:
                raise TypeError("OnlinePredictor needs at least one tf.Tensor to find the graph of "
                                f"the tensor named {t!r}; give tensors instead of names.")
            return get_op_or_tensor_by_name(get_op_tensor_name(t)[1], graph)
        if not isinstance(t, tf.Tensor):
            raise TypeError(f"OnlinePredictor needs tensors or tensor names, got {t!r}.")
        return t

    @property
    def sess(self):
        return self._sess

    @sess.setter
    def sess(self, sess):
        self._sess = sess
        self._callable = None
        if sess is not None:
            self._callable = sess.make_callable(self.output_tensors, feed_list=self.input_tensors,
                                                accept_options=self.ACCEPT_OPTIONS)

    def _do_call(self, dp):
        if len(dp) != len(self._specs):
            raise TypeError(f"{self._who} takes {len(self._specs)} input(s) "
                            f"({', '.join(s.name + ': ' + s.description for s in self._specs)}), "
                            f"got {len(dp)}.")
        args = [spec.check(value, self._who) for spec, value in zip(self._specs, dp)]
        run = self._callable
        if run is None:
            self.sess = self._default_session()
            run = self._callable
        with self._run_context():
            return run(*args)

    def _default_session(self):
        sess = tf.compat.v1.get_default_session()
        if sess is None:
            raise RuntimeError(f"{self._who} has no session: give sess=, or call it inside "
                               "`with sess.as_default():`.")
        return sess
