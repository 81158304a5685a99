"""tensorpack's ``graph_builder.utils``: :class:`LeastLoadedDeviceSetter` (spread variables over
devices) and :func:`allreduce_grads` with tensorpack's signature, and the helpers custom trainers
copied from tensorpack import (``split_grad_list``, ``merge_grad_list``,
``override_to_local_variable``).

Example:
    >>> from tfloop.graph_builder.utils import LeastLoadedDeviceSetter, allreduce_grads
"""
import contextlib

from tfloop.compat import tf, tfv1
from tfloop.tfutils import allreduce
from tfloop.utils import logger

__all__ = ["LeastLoadedDeviceSetter", "allreduce_grads"]

_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")


class LeastLoadedDeviceSetter:
    """A device function: variables go to the device of ``ps_devices`` holding the fewest
    elements so far, every other op to ``worker_device`` (an op with a device keeps it).

    Args:
        worker_device (str): the device of compute ops.
        ps_devices (list[str]): the devices variables may go to.

    Example:
        >>> with tf.device(LeastLoadedDeviceSetter("/gpu:0", ["/gpu:0", "/gpu:1"])):
        ...     cost = model.build_graph(*inputs)
    """

    def __init__(self, worker_device, ps_devices):
        if not ps_devices:
            raise ValueError("LeastLoadedDeviceSetter needs at least one device in ps_devices.")
        self.worker_device = worker_device
        self.ps_devices = list(ps_devices)
        self.ps_sizes = [0] * len(self.ps_devices)

    def __call__(self, op):
        if op.device:
            return op.device
        if op.type not in _VARIABLE_OPS:
            return tf.DeviceSpec.from_string(self.worker_device).to_string()
        index = self.ps_sizes.index(min(self.ps_sizes))
        shape = tf.TensorShape(op.get_attr("shape")) if "shape" in op.node_def.attr else None
        size = shape.num_elements() if shape is not None else None
        if size is None:
            logger.warning(f"LeastLoadedDeviceSetter: the shape of variable {op.name} is not "
                           f"fully defined; it counts as one element.")
            size = 1
        self.ps_sizes[index] += size
        return tf.DeviceSpec.from_string(self.ps_devices[index]).to_string()

    def __str__(self):
        return f"LeastLoadedDeviceSetter({self.worker_device}, {self.ps_devices})"


def allreduce_grads(all_grads, average, mode="nccl"):
    """Sum (``average``: average) gradient ``j`` over the K towers; each tower gets the result on
    the device of its own gradient (tensorpack's signature of
    :func:`tfloop.tfutils.allreduce.allreduce_grads`, which takes the devices and more modes).

    Args:
        all_grads (list[list[tf.Tensor]]): K lists of N gradients, tower ``i``'s on its device.
        average (bool): divide the sum by K.
        mode (str): ``"nccl"`` (NVIDIA's NCCL, GPUs) or ``"collective"`` (TensorFlow's
            collective ops, any device).

    Returns:
        list[list[tf.Tensor]]: K lists of N reduced gradients.

    Example:
        >>> reduced = allreduce_grads([tower0_grads, tower1_grads], average=True)
    """
    if mode not in ("nccl", "collective"):
        raise ValueError(f"allreduce_grads: mode must be 'nccl' or 'collective', got {mode!r}.")
    all_grads = [list(grads) for grads in all_grads]
    if len(all_grads) == 1:
        return all_grads
    devices = [grads[0].device if grads else "" for grads in all_grads]
    return allreduce.allreduce_grads(all_grads, devices, average=average, mode=mode)


def split_grad_list(grad_list):
    """``(gradients, variables)``, each K x N, of K towers' lists of N ``(gradient, variable)``
    pairs, as custom multi-device trainers copied from tensorpack split them.

    Example:
        >>> grads, variables = split_grad_list([[(g0_w, w), (g0_b, b)], [(g1_w, w), (g1_b, b)]])
    """
    return ([[g for g, _ in tower] for tower in grad_list],
            [[v for _, v in tower] for tower in grad_list])


def merge_grad_list(all_grads, all_vars):
    """The inverse of :func:`split_grad_list`: K lists of N ``(gradient, variable)`` pairs.

    Example:
        >>> grad_list = merge_grad_list(reduced_grads, variables)
    """
    return [list(zip(grads, variables)) for grads, variables in zip(all_grads, all_vars)]


@contextlib.contextmanager
def override_to_local_variable(enable=True):
    """A context in which ``tf.compat.v1.get_variable`` makes local variables (out of
    ``GLOBAL_VARIABLES``, hence out of checkpoints), as tensorpack's replicated trainers make a
    tower's copies; ``enable=False`` changes nothing.

    Example:
        >>> with override_to_local_variable(enable=tower_index > 0):
        ...     cost = model.build_graph(*inputs)
    """
    if not enable:
        yield
        return

    def local(getter, name, *args, **kwargs):
        collections = list(kwargs.get("collections") or [tfv1.GraphKeys.GLOBAL_VARIABLES])
        if tfv1.GraphKeys.GLOBAL_VARIABLES in collections:
            collections.remove(tfv1.GraphKeys.GLOBAL_VARIABLES)
            collections.append(tfv1.GraphKeys.LOCAL_VARIABLES)
        kwargs["collections"] = collections
        return getter(name, *args, **kwargs)
    with tfv1.variable_scope(tfv1.get_variable_scope(), custom_getter=local,
                             auxiliary_name_scope=False):
        yield
