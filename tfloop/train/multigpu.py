"""Data-parallel training on several devices of one machine: replicated, or a parameter server.

Both trainers build one tower per device; each tower calls the input source's
``get_input_tensors()`` and so trains on its own batch. A training step therefore consumes one
batch per tower: ``steps_per_epoch`` counts steps, not batches (see ``docs/distributed.md``).
"""

from tfloop.compat import tf, tfv1
from tfloop.tfutils.allreduce import (
    allreduce_grads,
    average_on_variable_devices,
    copy_from_first_tower,
    replica_difference,
)
from tfloop.tfutils.common import get_global_step_var
from tfloop.tfutils.gradproc import replicated_variables
from tfloop.tfutils.sesscreate import NewSessionCreator, default_session_config
from tfloop.tfutils.tower import TowerContext
from tfloop.train.devices import (
    allreduce_mode_for,
    check_session_devices,
    device_key,
    resolve_devices,
)
from tfloop.train.tower import TowerTrainer, check_cost, check_optimizer
from tfloop.train.tower_variables import ParameterPlacer, localize_copies, match_tower_copies
from tfloop.utils import logger

__all__ = ["SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
           "SyncMultiGPUTrainer", "DataParallelTrainer"]

class DataParallelTrainer(TowerTrainer):
    """Base class of the data-parallel trainers: one training tower per device.

    Args:
        gpus: see :func:`resolve_devices`.

    Attributes:
        devices (list[str]): the device of each tower.
        ps_devices (list[str]): where the variables live, for a trainer whose towers share one
            set of them (empty for the others).

    Example:
        >>> SyncMultiGPUTrainerReplicated(2).devices      # ["/device:CPU:0", "/device:CPU:1"]
    """

    def __init__(self, gpus):
        super().__init__()
        self.devices = resolve_devices(gpus)
        self.ps_devices = []
        self._tower_variables = []

    @property
    def num_towers(self):
        return len(self.devices)

    @property
    def batches_per_step(self):
        """One batch per tower."""
        return self.num_towers

    def default_session_config(self):
        """:func:`default_session_config` with as many CPU devices as the towers need."""
        config = default_session_config()
        cpu = [device_key(d)[3] for d in self.devices if device_key(d)[2] == "CPU"]
        if cpu:
            config.device_count["CPU"] = max(cpu) + 1
        return config

    def _build_tower_costs(self, input, replicated, device_fn=None):
        """Call the tower function once per device; record the trainable variables each creates."""
        costs = []
        trainable = tfv1.GraphKeys.TRAINABLE_VARIABLES
        for i, device in enumerate(self.devices):
            before = set(tfv1.get_collection(trainable))
            vs_name = f"tower{i}" if replicated and i > 0 else ""
            with TowerContext(f"tower{i}", is_training=True, vs_name=vs_name, index=i,
                              total=self.num_towers):
                inputs = input.get_input_tensors()
                with tfv1.device(device_fn(i) if device_fn is not None else device):
                    costs.append(check_cost(self.tower_func(*inputs)))
            self._tower_variables.append([v for v in tfv1.get_collection(trainable)
                                          if v not in before])
        if not self._tower_variables[0]:
            raise ValueError("The model has no trainable variables created in its tower function: "
                             f"the cost {costs[0].name} cannot be trained.")
        return costs

    def _shared_variable_towers(self, input, get_opt_fn, placer):
        """Build the towers over one set of variables, placed by ``placer``.

        Returns:
            (optimizer, gradients per tower, variables per tower).
        """
        costs = self._build_tower_costs(
            input, replicated=False,
            device_fn=lambda i: placer.device_function(self.devices[i]))
        opt = check_optimizer(get_opt_fn())
        variables = self._tower_variables[0]
        grads, var_lists = self._tower_gradients(opt, costs, [variables] * self.num_towers)
        return opt, grads, var_lists

    def _towers_on_shared_variables(self, input, get_opt_fn):
        """Build the towers over one set of variables on the parameter devices
        (``self.ps_devices``, which the trainer sets).

        Returns:
            (global_step, optimizer, gradients per tower, variables per tower).
        """
        placer = ParameterPlacer(self.ps_devices)
        with tfv1.device(self.ps_devices[0]):
            global_step = get_global_step_var()
        return (global_step, *self._shared_variable_towers(input, get_opt_fn, placer))

    def _tower_gradients(self, opt, costs, var_lists):
        """Each tower's gradients of its variables; variables without a gradient are left out
        (in every tower alike)."""
        grads = []
        for i, (cost, variables) in enumerate(zip(costs, var_lists)):
            with tfv1.device(self.devices[i]), tf.name_scope(f"tower{i}/"):
                pairs = opt.compute_gradients(cost, var_list=variables,
                                              colocate_gradients_with_ops=True)
            grads.append([g for g, _ in pairs])
        missing = [j for j, g in enumerate(grads[0]) if g is None]
        for i, tower in enumerate(grads):
            if [j for j, g in enumerate(tower) if g is None] != missing:
                raise ValueError(f"Towers 0 and {i} differ in which variables get a gradient: the "
                                 "tower function must build the same model in every tower."
                                 )
        if len(missing) == len(grads[0]):
            raise ValueError(f"The cost {costs[0].name} does not depend on any trainable variable.")
        keep = [j for j in range(len(grads[0])) if j not in missing]
        return [[tower[j] for j in keep] for tower in grads], \
            [[variables[j] for j in keep] for variables in var_lists]

    def initialize(self, session_creator=None, session_init=None):
        """Create the session (with the towers' devices), initialize, then check the devices.
        The run's options are applied to the session by ``Trainer.initialize``, once."""
        probed = session_creator or NewSessionCreator(config=self.default_session_config())
        probe = isinstance(probed, NewSessionCreator)
        if probe:  # an empty session shows the devices before an op is placed on a missing one
            with tfv1.Session(probed.target, graph=tf.Graph(), config=probed.config) as sess:
                check_session_devices(sess, self.devices, type(self).__name__)
        super().initialize(session_creator, session_init)
        if not probe:
            check_session_devices(self.sess, self.devices, type(self).__name__)
        self._after_initialize()

    def _after_initialize(self):
        """Runs once after the variables were initialized or restored."""


class SyncMultiGPUTrainerReplicated(DataParallelTrainer):
    """Data-parallel training with a copy of the variables on every device.

    Tower 0's variables have the plain names (checkpoints look like a :class:`SimpleTrainer`'s and
    load into one); tower ``i`` keeps its copies as ``tower<i>/...`` local variables, out of
    checkpoints. Every step all-reduces the gradients and each tower applies the same update, in
    one ``apply_gradients`` call (so optimizer state such as Adam's step counts advances once).
    After the variables are initialized or restored, the copies take tower 0's values and are
    checked equal.

    Args:
        gpus: an int N, GPU indices, or device strings (see :func:`resolve_devices`).
        average (bool): average the gradients over towers (True) or sum them.
        mode (str): the all-reduce: ``"add_n"``, ``"collective"`` or ``"nccl"``; by default
            ``"nccl"`` when every device is a GPU, else ``"add_n"``. tensorpack's names are
            taken too (any case), mapped to what TensorFlow 2 offers on the towers' devices
            and said once in the log: ``"gpu"`` and ``"cpu"`` (sums on the towers' devices)
            are ``"add_n"``; ``"hierarchical"`` is the default; ``"nccl"`` on towers that
            are not all GPUs is ``"add_n"``.

    Attributes:
        replica_variables (list[tuple[tf.Variable, list[tf.Variable]]]): every global variable
            that has copies, with its copies.

    Example:
        >>> launch_train_with_config(config, SyncMultiGPUTrainerReplicated(2))
    """

    def __init__(self, gpus, average=True, mode=None):
        super().__init__(gpus)
        self.average = bool(average)
        self.mode = allreduce_mode_for(mode, self.devices, type(self).__name__)
        self.replica_variables = []

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        graph = tfv1.get_default_graph()
        existing = set(graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES))
        global_step = get_global_step_var()
        costs = self._build_tower_costs(input, replicated=True)
        opt = check_optimizer(get_opt_fn())
        var_lists = match_tower_copies(self._tower_variables)
        grads, var_lists = self._tower_gradients(opt, costs, var_lists)
        reduced = self._allreduce(grads)
        pairs = [(g, v) for tower_grads, variables in zip(reduced, var_lists)
                 for g, v in zip(tower_grads, variables)]
        with replicated_variables(var_lists, self.devices):  # gradient processors run per tower
            train_op = opt.apply_gradients(pairs, global_step=global_step, name="train_op")
        self.replica_variables = localize_copies(graph, existing)
        self._build_broadcast()
        logger.info(f"{type(self).__name__}: {self.num_towers} towers on {', '.join(self.devices)} "
                    f"(one batch each per step), all-reduce {self.mode!r}, "
                    f"{len(self.replica_variables)} variable(s) with copies.")
        return train_op

    def _allreduce(self, grads):
        return allreduce_grads(grads, self.devices, average=self.average, mode=self.mode)

    def _build_broadcast(self):
        self._broadcast_op = copy_from_first_tower(self.replica_variables)
        self.replica_difference = replica_difference(self.replica_variables)

    def _after_initialize(self):
        self.sess.run(self._broadcast_op)
        self.check_replicas()

    def check_replicas(self):
        """Raise unless every copy equals tower 0's variable (one ``session.run``)."""
        difference = float(self.sess.run(self.replica_difference))
        if difference != 0.0:
            raise RuntimeError(f"{type(self).__name__}: the variable copies differ from tower 0's "
                               f"by up to {difference} after the broadcast.")
        return difference


class SyncMultiGPUTrainerParameterServer(DataParallelTrainer):
    """Data-parallel training with one set of variables on a parameter device.

    The towers read the shared variables; their gradients are averaged on each variable's device
    and applied once per step.

    Args:
        gpus: an int N, GPU indices, or device strings (see :func:`resolve_devices`).
        ps_device (str): where the variables live: ``"cpu"`` (the default: ``/cpu:0``), ``"gpu"``
            (spread over the towers' devices, fewest bytes first), or a device string.

    Example:
        >>> launch_train_with_config(config, SyncMultiGPUTrainerParameterServer(4, ps_device="gpu"))
    """

    def __init__(self, gpus, ps_device=None):
        super().__init__(gpus)
        if ps_device is None or ps_device == "cpu":
            ps_devices = ["/device:CPU:0"]
        elif ps_device == "gpu":
            ps_devices = list(self.devices)
        elif isinstance(ps_device, str):
            ps_devices = resolve_devices([ps_device])
        else:
            raise ValueError("ps_device must be 'cpu', 'gpu' or a device string, got "
                             f"{ps_device!r}.")
        self.ps_devices = ps_devices

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        global_step, opt, grads, var_lists = self._towers_on_shared_variables(input, get_opt_fn)
        variables = var_lists[0]
        averaged = average_on_variable_devices(grads, var_lists[0])
        logger.info(f"{type(self).__name__}: {self.num_towers} towers on {', '.join(self.devices)} "
                    "(one batch each per step), variables on "
                    f"{', '.join(sorted({v.device for v in variables}))}.")
        return opt.apply_gradients(list(zip(averaged, var_lists[0])), global_step=global_step,
                                   name="train_op")


def SyncMultiGPUTrainer(gpus):
    """tensorpack's shorthand: :class:`SyncMultiGPUTrainerParameterServer`, variables on the CPU.

    Example:
        >>> launch_train_with_config(config, SyncMultiGPUTrainer(2))
    """
    return SyncMultiGPUTrainerParameterServer(gpus, ps_device="cpu")
