"""Batch statistics averaged over the training towers of one process (``sync_statistics``).

Each training tower computes its batch's mean and mean of squares, and one all-reduce
(``CollectiveReduceV2``, one member per tower, on the tower's device) averages them; the variance
is then ``E[x^2] - E[x]^2``. With equal per-tower batches this is exactly the mean and variance of
the combined batch. The gradient of the all-reduce is the same all-reduce of the towers'
gradients, so each tower's gradient includes what its batch contributes to every tower's cost.

The towers of a layer meet through instance keys handed out per graph: the layer's variable
scope (without the replica prefix ``tower<i>/``) names its collective in every tower.
"""
import weakref
import zlib

from tfloop.compat import tf
from tfloop.utils import logger

__all__ = []

# Group keys of the statistics' all-reduce: above the gradient all-reduce's (1, 2, ...), one per
# worker task, so that the groups of several workers never merge into one.
_GROUP_KEY_BASE = 1 << 24
# A collective waits for every tower; fetching one tower's tensors alone would wait forever.
SYNC_TIMEOUT_S = 600.0
_REGISTRIES = weakref.WeakKeyDictionary()


class _LayerSync:
    """The collective of one BatchNorm layer: its keys and the devices of its towers."""

    def __init__(self, forward_key):
        self.forward_key = forward_key
        self.devices = {}            # tower index -> device
        self.backward_keys = []      # the k-th gradient built in each tower uses backward_keys[k]
        self.backward_calls = {}     # tower index -> gradients built so far


class _GraphSync:
    """The layers of one graph whose statistics are synchronized."""

    def __init__(self, group_key):
        self.group_key = group_key
        self.layers = {}
        self._next_key = 1

    def new_key(self):
        key = self._next_key
        self._next_key += 1
        return key


def _group_key(device):
    spec = tf.DeviceSpec.from_string(device)
    job = zlib.crc32((spec.job or "").encode()) % 64
    return _GROUP_KEY_BASE + job * 65536 + (spec.task or 0)


def _layer_name(ctx):
    scope = tf.compat.v1.get_variable_scope().name
    prefix = f"{ctx.vs_name}/" if ctx.vs_name else ""
    return scope[len(prefix):] if prefix and scope.startswith(prefix) else scope


def _register(ctx, device):
    graph = tf.compat.v1.get_default_graph()
    registry = _REGISTRIES.get(graph)
    if registry is None:
        registry = _REGISTRIES[graph] = _GraphSync(_group_key(device))
    name = _layer_name(ctx)
    layer = registry.layers.get(name)
    if layer is None:
        layer = registry.layers[name] = _LayerSync(registry.new_key())
    if ctx.index in layer.devices:
        raise ValueError(f"BatchNorm {name!r} with sync_statistics is built twice in training "
                         f"tower {ctx.index} ({ctx.name!r}): give each call its own layer name.")
    if device in layer.devices.values():
        raise ValueError(f"BatchNorm {name!r} with sync_statistics: training towers "
                         f"{sorted(i for i, d in layer.devices.items() if d == device)} and "
                         f"{ctx.index} are both on {device!r}; each tower needs its own device.")
    layer.devices[ctx.index] = device
    return registry, layer


def _allreduce_mean(x, group_size, group_key, instance_key):
    return tf.raw_ops.CollectiveReduceV2(
        input=x, group_size=group_size, group_key=group_key, instance_key=instance_key,
        ordering_token=[], merge_op="Add", final_op="Div", communication_hint="auto",
        timeout_seconds=SYNC_TIMEOUT_S)


def _tower_average(stats, ctx, registry, layer):
    """``stats`` averaged over the ``ctx.total`` towers, with the all-reduce as its gradient."""
    group = (ctx.total, registry.group_key)

    @tf.custom_gradient
    def average(x):
        def grad(dy):
            calls = layer.backward_calls.get(ctx.index, 0)
            layer.backward_calls[ctx.index] = calls + 1
            if calls == len(layer.backward_keys):
                layer.backward_keys.append(registry.new_key())
            return _allreduce_mean(dy, *group, layer.backward_keys[calls])
        return _allreduce_mean(x, *group, layer.forward_key), grad

    return average(stats)


def sync_tower_count(sync_statistics, ctx):
    """How many training towers a training BatchNorm averages its statistics over: ``ctx.total``,
    or 1 (with a warning: the statistics are the tower's own). Raises on a setup that cannot
    synchronize."""
    if ctx is not None and ctx.total == 1 and ctx.index > 0 and ctx.name:
        raise ValueError(
            f"BatchNorm(sync_statistics={sync_statistics!r}) in training tower {ctx.name!r} "
            f"(index {ctx.index}) whose TowerContext says total=1: build every training tower "
            f"with TowerContext(..., index=i, total=<number of towers>) so their statistics can "
            f"be averaged (the data-parallel trainers do).")
    if ctx is None or ctx.total == 1:
        logger.warning(f"BatchNorm(sync_statistics={sync_statistics!r}) is used with only one "
                       f"tower: the statistics are this tower's batch's.")
        return 1
    if sync_statistics != "nccl":
        raise ValueError(
            f"BatchNorm(sync_statistics={sync_statistics!r}) averages over Horovod processes, "
            f"which tfloop does not synchronize (its HorovodTrainer has one tower per process); "
            f"training tower {ctx.name!r} is one of {ctx.total} towers of this process: use "
            f"sync_statistics='nccl' to average over them.")
    return ctx.total


def synced_moments(inputs, axes, ctx):
    """The mean and variance of ``inputs`` over ``axes``, taken over the batches of all
    ``ctx.total`` training towers (each built under its own device)."""
    mean = tf.reduce_mean(inputs, axes)
    stats = tf.concat([mean, tf.reduce_mean(tf.square(inputs), axes)], axis=0)
    device = stats.op.device
    if not device:
        raise ValueError(
            f"BatchNorm(sync_statistics='nccl') in training tower {ctx.name!r} is built without a "
            f"device: build each of the {ctx.total} training towers under tf.device(<its own "
            f"device>) (the data-parallel trainers do).")
    registry, layer = _register(ctx, device)
    mean, mean_square = tf.split(_tower_average(stats, ctx, registry, layer), 2)
    return mean, tf.nn.relu(mean_square - tf.square(mean))
