"""tensorpack's ``graph_builder.training``: :class:`DataParallelBuilder`, which builds a tower per
device (tfloop's own data-parallel trainers build their towers themselves:
:mod:`tfloop.train.multigpu`).

Example:
    >>> from tfloop.graph_builder.training import DataParallelBuilder
"""
from tfloop.compat import tfv1
from tfloop.tfutils.tower import TowerContext
from tfloop.utils import logger

__all__ = ["DataParallelBuilder"]


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
