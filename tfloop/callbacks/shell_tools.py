"""The functions an InjectShell shell offers: read and change variables, see stats, stop."""
from __future__ import annotations

import collections
import difflib
from typing import Any

import numpy as np

from tfloop.callbacks.param_base import HyperParamSetter
from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import UnknownNameError, get_op_tensor_name

__all__ = ["ShellTools", "CHEAT_SHEET"]

CHEAT_SHEET = (
    "get('fc0/W')                 the value of a variable or tensor (one that needs no input)\n"
    "set('learning_rate', 1e-4)   change a variable or hyper-parameter from the next step on\n"
    "stats()                      the latest value of every stat, e.g. stats()['cost']\n"
    "stop()                       end training cleanly once the shell exits; also: trainer, self")

# Ops that hand a step its input: running a tensor behind one would take a batch from training.
_INPUT_OPS = frozenset({
    "Placeholder", "PlaceholderV2", "IteratorGetNext", "IteratorGetNextSync",
    "IteratorGetNextAsOptional", "MultiDeviceIteratorGetNextFromShard", "QueueDequeueV2",
    "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueDequeue", "QueueDequeueMany",
    "QueueDequeueUpTo", "Unstage"})


def _input_op_behind(tensor):
    """The first input op (placeholder, iterator, queue) ``tensor`` is computed from, or None."""
    seen, todo = set(), collections.deque([tensor.op])
    while todo:
        op = todo.popleft()
        if op.type in _INPUT_OPS:
            return op
        for parent in [t.op for t in op.inputs] + list(op.control_inputs):
            if parent.name not in seen:
                seen.add(parent.name)
                todo.append(parent)
    return None


class ShellTools:
    """``get``, ``set``, ``stats`` and ``stop`` for the shell of :class:`InjectShell`.

    Names are tensorpack-style: ``"fc0/W"`` or ``"fc0/W:0"`` for a variable (its value, never
    a resource handle), ``"fc0/output"`` for a tensor, found in the graph or the first training
    tower. Everything runs in the trainer's session without the callbacks' fetches, so looking
    never moves training on.

    Args:
        callback (InjectShell): the callback whose trainer the shell looks at.

    Example:
        >>> tools = ShellTools(inject_shell)     # as the shell's get/set/stats/stop
        >>> tools.get("fc0/W").shape
        (64, 32)
        >>> tools.set("learning_rate", 1e-4)
    """

    def __init__(self, callback: Any) -> None:
        self.callback = callback
        self.trainer = callback.trainer

    def namespace(self) -> dict[str, Any]:
        """The shell's names: ``get``, ``set``, ``stats``, ``stop``."""
        return {"get": self.get, "set": self.set, "stats": self.stats, "stop": self.stop}

    # ---- looking up ----------------------------------------------------------------------------
    def _variables(self):
        graph = self.trainer.graph
        return graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES) + \
            graph.get_collection(tfv1.GraphKeys.LOCAL_VARIABLES)

    def find_variable(self, name: str) -> Any:
        """The variable called ``name`` (``"fc0/W"``, ``"fc0/W:0"``), or None."""
        op_name = get_op_tensor_name(name)[0]
        for var in self._variables():
            if var.op.name == op_name:
                return var
        return None

    def _hyper_param(self, name):
        """The hyper-parameter a setter of the trainer's callbacks sets under ``name``, or None."""
        op_name = get_op_tensor_name(name)[0]
        for setter in self.trainer.callbacks_of(HyperParamSetter):
            var = getattr(setter.param, "var", None)
            names = {setter.param.readable_name} | ({var.op.name} if var is not None else set())
            if op_name in names:
                return setter.param
        return None

    def _unknown(self, name, what):
        names = [v.op.name for v in self._variables()]
        if what == "tensor":
            names += [op.name for op in self.trainer.graph.get_operations()]
        close = difflib.get_close_matches(get_op_tensor_name(name)[0], names, n=5, cutoff=0.6)
        hint = f" Close matches: {', '.join(close)}." if close else ""
        return UnknownNameError(f"No {what} named {name!r} in the training graph.{hint}")

    # ---- the tools -----------------------------------------------------------------------------
    def get(self, name: str) -> Any:
        """The current value of the variable or tensor ``name`` (a numpy value).

        Raises:
            UnknownNameError: no such variable or tensor (the message lists close names).
            ValueError: the tensor is computed from the training input (a batch would be taken).
        """
        var = self.find_variable(name)
        if var is not None:
            return self.trainer.sess.run(var)
        try:
            tensor, = self.callback.get_tensors_maybe_in_tower([name])
        except UnknownNameError:
            raise self._unknown(name, "variable or tensor") from None
        if not isinstance(tensor, tf.Tensor):
            raise ValueError(f"get({name!r}): that is an op, which has no value; name one of its "
                             f"outputs, e.g. {name}:0.")
        source = _input_op_behind(tensor)
        if source is not None:
            raise ValueError(
                f"get({name!r}): {tensor.name} is computed from the training input "
                f"(the {source.type} op {source.name!r}), so reading it would take a batch away "
                "from training. Fetch it with the training step instead, e.g. "
                f"callbacks=[TensorPrinter([{tensor.name!r}])].")
        return self.trainer.sess.run(tensor)

    def set(self, name: str, value: Any) -> None:
        """Give the variable or hyper-parameter ``name`` the value ``value``; the next training
        step uses it. A hyper-parameter that a setter (e.g. ``ScheduledHyperParamSetter``)
        schedules keeps the value until the setter sets its next one.

        Raises:
            UnknownNameError: no such variable (the message lists close names).
            ValueError: the value's shape or type does not fit, or ``name`` is the global step.
        """
        param = self._hyper_param(name)
        if param is not None:
            param.check_value(value)
            with self.trainer.sess.as_default():
                param.set_value(value)
            return
        var = self.find_variable(name)
        if var is None:
            raise self._unknown(name, "variable")
        if var is tfv1.train.get_global_step(self.trainer.graph):
            raise ValueError(f"set({name!r}): the global step counts the steps the trainer ran; "
                             "it cannot be set.")
        dtype = var.dtype.base_dtype
        try:
            array = np.asarray(value, dtype=dtype.as_numpy_dtype)
        except (TypeError, ValueError):
            array = None
        if array is None or not var.shape.is_compatible_with(array.shape):
            raise ValueError(f"set({name!r}, {value!r}): {var.op.name} needs a {dtype.name} of "
                             f"shape {var.shape.as_list()}.")
        # The graph is finalized: feed the new value to the initializer, the one assign op there.
        initializer = var.initializer
        self.trainer.sess.run(initializer, feed_dict={initializer.inputs[1]: array})

    def stats(self) -> dict[str, float]:
        """``{name: latest value}`` of every scalar put to the monitors so far."""
        monitors = self.trainer.monitors
        return {name: monitors.get_latest(name) for name in sorted(monitors.scalar_names())}

    def stop(self) -> None:
        """End training cleanly (``after_train`` runs) once the shell exits."""
        self.callback.request_stop()
