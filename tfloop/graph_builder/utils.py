"""tensorpack's ``graph_builder.utils``: :class:`LeastLoadedDeviceSetter` (spread variables over
devices) and :func:`allreduce_grads` with tensorpack's signature.

Example:
    >>> from tfloop.graph_builder.utils import LeastLoadedDeviceSetter, allreduce_grads
"""
from tfloop.compat import tf
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
