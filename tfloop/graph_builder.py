"""tensorpack's ``graph_builder`` names: ``ModelDesc``, and the two helpers custom multi-device
trainers use: :class:`DataParallelBuilder` (build a tower per device) and
:class:`LeastLoadedDeviceSetter` (spread variables over devices). tfloop's own data-parallel
trainers build their towers themselves (:mod:`tfloop.train.multigpu`).

Example:
    >>> from tfloop.graph_builder import DataParallelBuilder, LeastLoadedDeviceSetter
"""
from tfloop.compat import tf, tfv1
from tfloop.model_desc import ModelDesc, ModelDescBase
from tfloop.tfutils.tower import TowerContext
from tfloop.utils import logger

__all__ = ["ModelDesc", "ModelDescBase", "DataParallelBuilder", "LeastLoadedDeviceSetter"]

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


class DataParallelBuilder:
    """Call a function once per device, each call in a training ``TowerContext`` named
    ``tower<i>`` whose variables are shared with tower 0's.

    Example:
        >>> costs = DataParallelBuilder.call_for_each_tower(
        ...     [0, 1], lambda: tower_func(*source.get_input_tensors()))
    """

    @staticmethod
    def call_for_each_tower(towers, func, devices=None, use_vs=None):
        """Run ``func()`` in each tower and return the results.

        Args:
            towers (list[int]): GPU indices, one tower each.
            func: called without arguments inside each tower.
            devices (list): a device (string or device function) per tower; ``/gpu:<i>`` by
                default (soft placement puts the ops on the CPU without GPUs).
            use_vs (list[bool]): must be None or all False: towers share variables. For a copy
                of the variables per device use ``SyncMultiGPUTrainerReplicated``.
        """
        towers = list(towers)
        if devices is not None and len(devices) != len(towers):
            raise ValueError(f"call_for_each_tower: {len(devices)} devices for {len(towers)} "
                             f"towers.")
        if use_vs is not None and any(use_vs):
            raise ValueError("call_for_each_tower: use_vs=True (a variable copy per tower) is not "
                             "supported; use SyncMultiGPUTrainerReplicated for replicated "
                             "variables.")
        results = []
        for i, tower in enumerate(towers):
            device = devices[i] if devices is not None else f"/gpu:{tower}"
            logger.info(f"Building graph for training tower {i} on "
                        f"{device if isinstance(device, str) else 'its device function'} ...")
            with tfv1.device(device), TowerContext(f"tower{i}", is_training=True, index=i):
                results.append(func())
        return results

    build_on_towers = call_for_each_tower
