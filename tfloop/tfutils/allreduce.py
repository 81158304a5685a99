"""Summing gradients over towers, and making every replica start from the first tower's values.

Two ways to all-reduce the gradients of N towers inside one graph:

* ``"add_n"``: gradient ``j`` is summed with ``add_n`` on device ``j % N`` and every tower reads the
  sum. Plain graph ops, any devices; the fastest on CPU.
* ``"collective"`` / ``"nccl"``: TensorFlow's collective ops (``CollectiveReduceV2``), one member
  per tower; the gradients of each dtype are packed into one flat tensor, so a step runs one
  collective per dtype. ``"nccl"`` asks the runtime for NCCL (GPUs only). Collective groups may
  span processes: that is how ``DistributedTrainerReplicated`` all-reduces across workers.

A parameter server instead averages each gradient on its variable's device
(:func:`average_on_variable_devices`).

Initial values: :func:`copy_from_first_tower` (assign ops, one process) and
:func:`collective_broadcast` (the chief's first tower sends, every other tower of every worker
receives). :func:`replica_difference` measures how far the copies are apart.
"""
from tfloop.compat import tf
from tfloop.utils.checks import check_positive_int

__all__ = ["ALLREDUCE_MODES", "CollectiveGroup", "allreduce_grads", "average_on_variable_devices",
           "collective_any", "copy_from_first_tower", "collective_broadcast",
           "replica_difference", "densify"]

ALLREDUCE_MODES = ("add_n", "collective", "nccl")


def densify(grad):
    """A gradient as a dense tensor (``IndexedSlices`` from ``tf.gather`` are scattered)."""
    if isinstance(grad, tf.IndexedSlices):
        return tf.convert_to_tensor(grad)
    return grad


class CollectiveGroup:
    """One collective group: its size, its key, and the instance keys of its ops.

    Every member (tower) of the group must create its collective ops in the same order, in every
    process, so that :meth:`next_instance_key` hands out matching keys.

    Args:
        group_size (int): members of the group: towers per worker times workers.
        group_key (int): identifies the group; distinct groups of one process need distinct keys.
        communication_hint (str): ``"auto"``, ``"ring"`` or ``"nccl"``.
        timeout_s (float): give up a collective op after this long (0: no limit of its own; a
            session's ``operation_timeout_in_ms`` still applies).

    Example:
        >>> group = CollectiveGroup(group_size=4)
        >>> reduced = allreduce_grads(tower_grads, devices, mode="collective", group=group)
    """

    def __init__(self, group_size, group_key=1, communication_hint="auto", timeout_s=0.0):
        self.group_size = check_positive_int(group_size, "group_size")
        self.group_key = group_key
        self.communication_hint = communication_hint
        self.timeout_s = float(timeout_s)
        self._next_key = 1

    def next_instance_key(self):
        key = self._next_key
        self._next_key += 1
        return key

    def __repr__(self):
        return f"CollectiveGroup(size={self.group_size}, key={self.group_key})"


def _check_tower_grads(tower_grads, devices):
    if len(tower_grads) != len(devices):
        raise ValueError(f"Got gradients of {len(tower_grads)} towers for {len(devices)} devices.")
    lengths = {len(grads) for grads in tower_grads}
    if len(lengths) != 1:
        raise ValueError("Every tower must have the same number of gradients, got "
                         f"{[len(grads) for grads in tower_grads]}.")


def allreduce_grads(tower_grads, devices, average=True, mode="add_n", group=None):
    """Sum (or average) gradient ``j`` over all towers; every tower gets the result on its device.

    Args:
        tower_grads (list[list[tf.Tensor]]): ``tower_grads[i][j]``: tower ``i``'s gradient of its
            copy of variable ``j``.
        devices (list[str]): the device of each tower.
        average (bool): divide the sum by the number of towers in the group.
        mode (str): one of :data:`ALLREDUCE_MODES`.
        group (CollectiveGroup): for the collective modes: the group (which may span workers, then
            ``group.group_size`` counts the towers of all workers); one group of ``len(devices)``
            towers by default.

    Returns:
        list[list[tf.Tensor]]: the reduced gradients, indexed like ``tower_grads``.

    Example:
        >>> reduced = allreduce_grads([[g0_w, g0_b], [g1_w, g1_b]], ["/cpu:0", "/cpu:1"])
    """
    if mode not in ALLREDUCE_MODES:
        raise ValueError(f"Unknown all-reduce mode {mode!r}: use one of "
                         f"{', '.join(ALLREDUCE_MODES)}.")
    _check_tower_grads(tower_grads, devices)
    tower_grads = [[densify(g) for g in grads] for grads in tower_grads]
    if mode == "add_n":
        if group is not None and group.group_size != len(devices):
            raise ValueError(f"mode 'add_n' reduces inside one graph only; a group of "
                             f"{group.group_size} towers over several workers needs mode "
                             "'collective'.")
        return _add_n_allreduce(tower_grads, devices, average)
    if group is None:
        group = CollectiveGroup(len(devices),
                                communication_hint="nccl" if mode == "nccl" else "auto")
    return _collective_allreduce(tower_grads, devices, average, group)


def _add_n_allreduce(tower_grads, devices, average):
    n = len(devices)
    reduced = [[None] * len(tower_grads[0]) for _ in devices]
    with tf.name_scope("allreduce"):
        for j in range(len(tower_grads[0])):
            with tf.device(devices[j % n]):
                total = tf.math.add_n([grads[j] for grads in tower_grads])
                if average and n > 1:
                    total = total * tf.constant(1.0 / n, total.dtype)
            for i, device in enumerate(devices):
                with tf.device(device):
                    reduced[i][j] = tf.identity(total)
    return reduced


def _pack_by_dtype(grads):
    """Group gradient indices by dtype, in order of first appearance."""
    groups = {}
    for j, g in enumerate(grads):
        groups.setdefault(g.dtype.base_dtype, []).append(j)
    return list(groups.items())


def _collective_allreduce(tower_grads, devices, average, group):
    # One flat buffer per dtype: a collective op has a fixed cost, a model has many variables.
    packing = _pack_by_dtype(tower_grads[0])
    keys = [group.next_instance_key() for _ in packing]
    reduced = [[None] * len(tower_grads[0]) for _ in devices]
    with tf.name_scope("allreduce"):
        for i, device in enumerate(devices):
            with tf.device(device):
                previous = []
                for (_dtype, indices), key in zip(packing, keys):
                    grads = [tower_grads[i][j] for j in indices]
                    flat = tf.concat([tf.reshape(g, [-1]) for g in grads], axis=0)
                    # The same order on every member: NCCL needs it when a device runs several.
                    with tf.control_dependencies(previous):
                        total = tf.raw_ops.CollectiveReduceV2(
                            input=flat, group_size=group.group_size, group_key=group.group_key,
                            instance_key=key, ordering_token=[], merge_op="Add",
                            final_op="Div" if average else "Id",
                            communication_hint=group.communication_hint,
                            timeout_seconds=group.timeout_s)
                    previous = [total.op]
                    sizes = [tf.size(g) for g in grads]
                    for j, g, piece in zip(indices, grads, tf.split(total, sizes)):
                        reduced[i][j] = tf.reshape(piece, tf.shape(g))
    return reduced


def collective_any(flags, devices, group):
    """Whether any member of a (cross-process) collective group has a true flag: each of this
    process's members gives its bool scalar ``flags[i]`` on ``devices[i]`` and gets the answer
    (a bool scalar per member; run them all, as every member of a collective must).

    Example:
        >>> ended = collective_any([last0, last1], ["/gpu:0", "/gpu:1"], group)
    """
    key = group.next_instance_key()
    answers = []
    for flag, device in zip(flags, devices):
        with tf.device(device):
            value = tf.raw_ops.CollectiveReduceV2(
                input=tf.reshape(tf.cast(flag, tf.float32), [1]), group_size=group.group_size,
                group_key=group.group_key, instance_key=key, ordering_token=[], merge_op="Max",
                final_op="Id", communication_hint=group.communication_hint,
                timeout_seconds=group.timeout_s)
            answers.append(tf.greater(value[0], 0.0))
    return answers


def average_on_variable_devices(tower_grads, variables):
    """Average gradient ``j`` over the towers on the device of variable ``j`` (parameter server).

    Example:
        >>> averaged = average_on_variable_devices([[g0_w], [g1_w]], [w])
    """
    n = len(tower_grads)
    averaged = []
    with tf.name_scope("average_gradients"):
        for j, variable in enumerate(variables):
            with tf.device(variable.device):
                total = tf.math.add_n([densify(grads[j]) for grads in tower_grads])
                averaged.append(total * tf.constant(1.0 / n, total.dtype) if n > 1 else total)
    return averaged


def copy_from_first_tower(pairs):
    """An op that assigns each source variable's value to its copies (inside one graph).

    Args:
        pairs (list[tuple[tf.Variable, list[tf.Variable]]]): (tower 0's variable, its copies).

    Example:
        >>> broadcast = copy_from_first_tower([(w, [tower1_w, tower2_w])])
    """
    ops = []
    with tf.name_scope("copy_from_first_tower"):
        for source, copies in pairs:
            for copy in copies:
                with tf.device(copy.device):
                    ops.append(copy.assign(source.read_value()).op)
    return tf.group(*ops, name="broadcast")


def collective_broadcast(members, is_source, group):
    """An op that gives every member of a (cross-process) group the source member's values.

    This process holds ``len(members)`` members of ``group``; the source is the first member of
    the process where ``is_source`` is True (the chief). Every process must pass its variables in
    the same order.

    Args:
        members (list[tuple[str, list[tf.Variable or None]]]): for each local member: its device,
            and for each broadcast value the variable it sends (the source) or assigns (others).
            ``None``: the member takes part in that broadcast but keeps nothing. The first
            member's list must have no ``None``: its variables give shapes and dtypes.
        is_source (bool): whether this process's first member sends.
        group (CollectiveGroup): the group; one instance key is taken per value.

    Example:
        >>> op = collective_broadcast([("/job:worker/task:0/device:CPU:0", [w, step])],
        ...                           is_source=True, group=CollectiveGroup(2))
    """
    first = members[0][1]
    ops = []
    previous = [[] for _ in members]  # one value after the other, in the same order everywhere
    with tf.name_scope("broadcast"):
        for j, reference in enumerate(first):
            key = group.next_instance_key()
            for i, (device, variables) in enumerate(members):
                target = variables[j]
                with tf.device(device), tf.control_dependencies(previous[i]):
                    if is_source and i == 0:
                        op = tf.raw_ops.CollectiveBcastSendV2(
                            input=reference.read_value(), group_size=group.group_size,
                            group_key=group.group_key, instance_key=key,
                            communication_hint=group.communication_hint,
                            timeout_seconds=group.timeout_s).op
                    else:
                        value = tf.raw_ops.CollectiveBcastRecvV2(
                            group_size=group.group_size, group_key=group.group_key,
                            instance_key=key, shape=reference.shape.as_list(),
                            T=reference.dtype.base_dtype,
                            communication_hint=group.communication_hint,
                            timeout_seconds=group.timeout_s)
                        op = target.assign(value).op if target is not None else value.op
                ops.append(op)
                previous[i] = [op]
    return tf.group(*ops, name="broadcast")


def replica_difference(pairs):
    """A scalar float32 tensor: the largest absolute difference between any copy and its source
    (0 when the replicas are identical; 0 for an empty list).

    Example:
        >>> diff = replica_difference([(w, [tower1_w])])
    """
    diffs = [tf.constant(0.0)]
    with tf.name_scope("replica_difference"):
        for source, copies in pairs:
            for copy in copies:
                delta = tf.cast(copy.read_value(), tf.float64) - tf.cast(source.read_value(),
                                                                         tf.float64)
                diffs.append(tf.cast(tf.reduce_max(tf.abs(delta)), tf.float32))
    return tf.reduce_max(tf.stack(diffs), name="replica_difference")

