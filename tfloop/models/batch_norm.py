"""BatchNorm and BatchRenorm with tensorpack's variables, EMA updates and tower rules.

Variables of ``BatchNorm('bn', x)``: ``bn/beta``, ``bn/gamma``, ``bn/mean/EMA``,
``bn/variance/EMA`` — the names a tensorpack checkpoint has.

Which tower updates the moving averages (tensorpack's rule): only a tower that normalizes with
batch statistics (``training``), and of those only the first training tower — or a tower that is
not training at all but was asked for ``training=True`` (it may be the only one). Other training
towers read the same variables and leave them alone.
"""
from tfloop.compat import tf, tfv1
from tfloop.models.batch_norm_sync import sync_tower_count, synced_moments
from tfloop.models.layer_args import convert_args, data_format_of
from tfloop.models.registry import VariableHolder, layer_register
from tfloop.tfutils.tower import get_current_tower_context
from tfloop.utils import logger
from tfloop.utils.checks import check_one_of, check_positive_int

__all__ = ["BatchNorm", "BatchRenorm"]

EMA_UPDATES = ("default", "collection", "internal", "skip")
_BN_ALIASES = {"use_bias": "center", "use_scale": "scale", "gamma_init": "gamma_initializer",
               "decay": "momentum"}
_WARNED_FROZEN = set()


def _bn_variables(channels, center, scale, beta_init, gamma_init, dtype):
    beta = tfv1.get_variable("beta", [channels], dtype, beta_init or tfv1.zeros_initializer()) \
        if center else tf.zeros([channels], dtype, name="beta")
    gamma = tfv1.get_variable("gamma", [channels], dtype, gamma_init or tfv1.ones_initializer()) \
        if scale else tf.ones([channels], dtype, name="gamma")
    return beta, gamma


def param_dtype(dtype):
    """The dtype of a BatchNorm's variables and statistics for an input of ``dtype``: float32
    for bfloat16 and float16 inputs (their sums of squares need its range), else ``dtype``."""
    return tf.float32 if dtype.base_dtype in (tf.bfloat16, tf.float16) else dtype.base_dtype


def fused_batch_norm(x, beta, gamma, epsilon, data_format, moving=None):
    """One ``FusedBatchNormV3`` of a 4D ``x``: normalized with the batch's statistics, or with
    ``moving`` (mean, variance) when given. ``x`` may be bfloat16 or float16 with float32
    parameters. Returns the output, the mean and the variance it used (biased, as
    ``tf.nn.moments``'; the op's own is Bessel-corrected)."""
    dtype = param_dtype(x.dtype)
    mean, var = moving if moving is not None else (tf.zeros([0], dtype),) * 2
    y, mean, var = tf.raw_ops.FusedBatchNormV3(
        x=x, scale=gamma, offset=beta, mean=mean, variance=var, epsilon=epsilon,
        data_format=data_format, is_training=moving is None)[:3]
    if moving is None:
        count = tf.cast(tf.size(x, out_type=tf.int64) // tf.cast(tf.size(mean), tf.int64), dtype)
        var = var * (tf.maximum(count, 1.0) - 1.0) / tf.maximum(count, 1.0)
    return y, mean, var


def _statistic(name, channels, dtype, value, ctx):
    var = tfv1.get_variable(name, [channels], dtype, tfv1.constant_initializer(value),
                            trainable=False)
    models = tfv1.get_collection_ref(tfv1.GraphKeys.MODEL_VARIABLES)
    if (ctx is None or ctx.is_main_training_tower) and var not in models:
        models.append(var)
    return var


def _ema_update(var, value, decay, name):
    """``var -= (1 - decay) * (var - value)``: an EMA without zero-debias."""
    with tf.name_scope(name):
        return tfv1.assign_sub(var, (1.0 - decay) * (var - tf.cast(value, var.dtype))).op


def get_bn_variables(n_out, use_scale, use_bias, beta_init, gamma_init):
    """The variables of a batch normalization over ``n_out`` channels, as tensorpack's helper
    makes them for a BatchNorm of a project's own (e.g. a 3-D one copied from tensorpack):
    ``(beta, gamma, moving_mean, moving_var)`` named ``beta``, ``gamma``, ``mean/EMA``,
    ``variance/EMA``; beta (gamma) is a constant 0 (1) without ``use_bias`` (``use_scale``).

    Example:
        >>> beta, gamma, mean, var = get_bn_variables(64, True, True, None, None)
    """
    beta, gamma = _bn_variables(n_out, use_bias, use_scale, beta_init, gamma_init, tf.float32)
    ctx = get_current_tower_context()
    return (beta, gamma, _statistic("mean/EMA", n_out, tf.float32, 0.0, ctx),
            _statistic("variance/EMA", n_out, tf.float32, 1.0, ctx))


def internal_update_bn_ema(xn, batch_mean, batch_var, moving_mean, moving_var, decay):
    """``xn`` as ``output``, computed after the moving statistics took one EMA step (``decay``)
    towards the batch's, as tensorpack's helper does.

    Example:
        >>> y = internal_update_bn_ema(y, mean, var, moving_mean, moving_var, 0.9)
    """
    updates = [_ema_update(moving_mean, batch_mean, decay, "mean_ema_op"),
               _ema_update(moving_var, batch_var, decay, "var_ema_op")]
    with tf.control_dependencies(updates):
        return tf.identity(xn, name="output")


def _layout(ndims, axis, data_format):
    """(channel axis, reduction axes, broadcast shape maker) of a 2D or 4D input."""
    if ndims == 2:
        return 1, [0], lambda c: [1, c]
    if axis == 1:
        return 1, [0, 2, 3], lambda c: [1, c, 1, 1]
    return 3, [0, 1, 2], lambda c: [1, 1, 1, c]


@layer_register()
@convert_args(dict(_BN_ALIASES, use_local_stat="training"))
def BatchNorm(inputs, axis=None, *, training=None, momentum=0.9, epsilon=1e-5, center=True,
              scale=True, beta_initializer=None, gamma_initializer=None,
              virtual_batch_size=None, data_format="channels_last", ema_update="default",
              sync_statistics=None, internal_update=None):
    """Batch normalization of a 2D (``[N, C]``) or 4D input, as tensorpack's BatchNorm.

    Args:
        axis (int): the channel axis, 1 or 3; by default from ``data_format`` (1 for 2D input).
        training (bool): normalize with the batch's statistics (True) or the moving averages;
            by default the tower context's ``is_training`` (False outside any tower). Old name:
            ``use_local_stat``.
        momentum (float): decay of the moving averages (old name ``decay``).
        center, scale (bool): learn ``beta`` / ``gamma`` (old names ``use_bias``, ``use_scale``).
        virtual_batch_size (int): "ghost" batch norm: normalize groups of this many examples
            (training only); the moving averages follow the first group; it must divide the
            batch size.
        ema_update (str): ``'default'`` (= ``'collection'``): the update ops go to
            ``UPDATE_OPS``, which the default callback ``RunUpdateOps`` runs each step;
            ``'internal'``: the output depends on the updates; ``'skip'``: no update.
            tensorpack 0.9's ``internal_update=True`` (``False``) is ``'internal'``
            (``'collection'``).
        sync_statistics: ``None`` (each tower normalizes with its own batch), or ``'nccl'``:
            in training, the mean and variance are averaged over the training towers of this
            process (``TowerContext.total``), so every tower normalizes as one tower on the
            combined batch would (equal per-tower batches), and the moving averages follow
            them (``ema_update`` becomes ``'internal'``). ``'horovod'`` (across processes) is
            accepted on a single tower only. With one tower either warns and uses its batch.

    A 4D input without ``virtual_batch_size`` or ``sync_statistics`` is normalized by one fused
    op. A bfloat16 or float16 input keeps float32 variables and gives an output of its dtype.

    Variables: ``beta``, ``gamma``, ``mean/EMA``, ``variance/EMA``; the output's
    ``variables`` also names them ``moving_mean``, ``mean``, ``moving_variance``, ``variance``.

    Example:
        >>> x = BatchNorm("bn0", Conv2D("conv0", image, 32, 3))
        >>> x.variables.moving_mean        # the variable bn0/mean/EMA
    """
    ctx = get_current_tower_context()
    training = bool(ctx is not None and ctx.is_training) if training is None else bool(training)
    if not training:
        virtual_batch_size = None
    ndims = inputs.shape.rank
    axis, channel_axis, red_axes, channels, shape = _input_layout(inputs, axis, data_format)
    ema_update = _ema_update_of(ema_update, internal_update)
    sync_statistics = _check_options(ema_update, sync_statistics, virtual_batch_size)
    sync_towers = sync_tower_count(sync_statistics, ctx) \
        if training and sync_statistics is not None else 1
    ema_update = "collection" if ema_update == "default" else ema_update
    if not training and ctx is not None and ctx.is_main_training_tower:
        _warn_frozen()

    dtype = param_dtype(inputs.dtype)
    beta, gamma = _bn_variables(channels, center, scale, beta_initializer, gamma_initializer,
                                dtype)
    moving_mean = _statistic("mean/EMA", channels, dtype, 0.0, ctx)
    moving_var = _statistic("variance/EMA", channels, dtype, 1.0, ctx)

    def normalize(x, mean, var):
        r = (lambda t: tf.reshape(t, shape)) if axis == 1 and ndims == 4 else (lambda t: t)
        return tf.nn.batch_normalization(x, r(mean), r(var), r(beta), r(gamma), epsilon)

    # One fused op where it can (in the input's dtype, float32 parameters); otherwise the
    # statistics are computed in the variables' dtype.
    fused = ndims == 4 and sync_towers == 1 and virtual_batch_size is None
    x = inputs if fused else tf.cast(inputs, dtype)
    if fused:
        xn, mean, var = fused_batch_norm(x, beta, gamma, epsilon, "NCHW" if axis == 1 else "NHWC",
                                         None if training else (moving_mean, moving_var))
    elif not training:
        xn = normalize(x, moving_mean, moving_var)
    elif virtual_batch_size is not None:
        xn, mean, var = _ghost_batch_norm(x, virtual_batch_size, red_axes, channel_axis,
                                          channels, shape, beta, gamma, epsilon)
    else:
        mean, var = synced_moments(x, red_axes, ctx) if sync_towers > 1 \
            else tf.nn.moments(x, red_axes)
        xn = normalize(x, mean, var)
    updates = []
    if training:
        updates, ema_update = _training_updates(
            ema_update, virtual_batch_size is not None or sync_statistics is not None, ctx,
            (moving_mean, moving_var), (mean, var), momentum)
    xn = tf.cast(xn, inputs.dtype)
    with tf.control_dependencies(updates if ema_update == "internal" else []):
        out = tf.identity(xn, name="output")
    out.variables = _layer_variables(moving_mean, moving_var, beta if center else None,
                                     gamma if scale else None)
    return out


def _layer_variables(moving_mean, moving_var, beta, gamma):
    """The output's ``variables``: the moving averages, and ``beta``/``gamma`` when learned."""
    holder = VariableHolder(moving_mean=moving_mean, mean=moving_mean,
                            moving_variance=moving_var, variance=moving_var)
    if gamma is not None:
        holder.gamma = gamma
    if beta is not None:
        holder.beta = beta
    return holder


def _ema_update_of(ema_update, internal_update):
    """``ema_update``, or what tensorpack 0.9's ``internal_update`` flag meant."""
    if internal_update is None:
        return ema_update
    if ema_update != "default":
        raise TypeError("BatchNorm got both internal_update= (tensorpack 0.9's) and ema_update=: "
                        "give only ema_update=.")
    return "internal" if internal_update else "collection"


def _check_options(ema_update, sync_statistics, virtual_batch_size):
    """Check BatchNorm's options; returns ``sync_statistics`` in lower case (or None)."""
    check_one_of(ema_update, "BatchNorm: ema_update", EMA_UPDATES)
    if sync_statistics is None:
        return None
    sync_statistics = str(sync_statistics).lower()
    if sync_statistics not in ("nccl", "horovod"):
        raise ValueError(f"BatchNorm: sync_statistics must be None, 'nccl' or 'horovod', got "
                         f"{sync_statistics!r}.")
    if virtual_batch_size is not None:
        raise ValueError("BatchNorm: sync_statistics and virtual_batch_size cannot be used "
                         "together.")
    return sync_statistics


def _channel_axis(axis, ndims, data_format):
    """``axis`` checked for a ``ndims``-D input, or the default one of ``data_format``."""
    if axis is None:
        return 1 if ndims == 2 or data_format == "NCHW" else 3
    if axis not in ((1,) if ndims == 2 else (1, 3)):
        raise ValueError(f"BatchNorm: axis must be {'1' if ndims == 2 else '1 or 3'} for a "
                         f"{ndims}D input, got {axis!r}.")
    return axis


def _input_layout(inputs, axis, data_format):
    """Where BatchNorm's input has its channels: ``(axis, channel axis, reduction axes, number
    of channels, shape of a parameter broadcast to the input)``, with the input checked to be 2D
    or 4D with a known number of channels, and ``axis`` and ``data_format`` checked."""
    ndims = inputs.shape.rank
    if ndims not in (2, 4):
        raise ValueError(f"BatchNorm needs a 2D or 4D input, got shape {inputs.shape}.")
    data_format = data_format_of(data_format, "BatchNorm")
    axis = _channel_axis(axis, ndims, data_format)
    channel_axis, red_axes, broadcast = _layout(ndims, axis, data_format)
    channels = inputs.shape[channel_axis]
    if channels is None:
        raise ValueError(f"BatchNorm needs a known number of channels (axis {channel_axis}), got "
                         f"shape {inputs.shape}.")
    return axis, channel_axis, red_axes, channels, broadcast(channels)


def _warn_frozen():
    """Warn once per variable scope about a frozen BatchNorm in the main training tower."""
    scope = tfv1.get_variable_scope().name
    if scope not in _WARNED_FROZEN:
        _WARNED_FROZEN.add(scope)
        logger.warning(f"BatchNorm {scope!r} uses its moving mean/variance in training "
                       f"(training=False in a training tower).")


def _updates_moving_averages(ctx):
    """Whether a training BatchNorm in tower ``ctx`` updates the moving averages."""
    return ctx is None or ctx.is_main_training_tower or not ctx.is_training


def _training_updates(ema_update, in_layer, ctx, moving, statistics, momentum):
    """The moving-average updates of a training BatchNorm, and its ``ema_update`` mode: ghost
    batches and synced statistics (``in_layer``) update in the layer, as tensorpack's."""
    if in_layer:
        ema_update = "skip" if ema_update == "skip" else "internal"
    if ema_update == "skip" or not _updates_moving_averages(ctx):
        return [], ema_update
    return _ema_updates(*moving, *statistics, momentum, ema_update), ema_update


def _ema_updates(moving_mean, moving_var, mean, var, momentum, ema_update):
    """The two moving-average update ops, added to ``UPDATE_OPS`` for ``'collection'``."""
    updates = [_ema_update(moving_mean, mean, momentum, "mean_ema_op"),
               _ema_update(moving_var, var, momentum, "var_ema_op")]
    if ema_update == "collection":
        for op in updates:
            tfv1.add_to_collection(tfv1.GraphKeys.UPDATE_OPS, op)
    return updates


def _ghost_batch_norm(x, virtual_batch_size, red_axes, channel_axis, channels, shape, beta,
                      gamma, epsilon):
    """Normalize each group of ``virtual_batch_size`` examples with its own statistics.

    Returns the output and the first group's mean and variance (for the moving averages)."""
    check_positive_int(virtual_batch_size, "BatchNorm: virtual_batch_size")
    batch = x.shape[0]
    if batch is not None and batch % virtual_batch_size:
        raise ValueError(f"BatchNorm: virtual_batch_size={virtual_batch_size} does not divide the "
                         f"batch size {batch}.")
    grouped = tf.reshape(x, tf.concat([[-1, virtual_batch_size], tf.shape(x)[1:]], axis=0))
    mean, var = tf.nn.moments(grouped, [a + 1 for a in red_axes], keepdims=True)
    group_shape = [1] + shape
    xn = tf.nn.batch_normalization(grouped, mean, var, tf.reshape(beta, group_shape),
                                   tf.reshape(gamma, group_shape), epsilon)
    return tf.reshape(xn, tf.shape(x)), tf.reshape(mean[0], [channels]), \
        tf.reshape(var[0], [channels])


@layer_register()
@convert_args(_BN_ALIASES)
def BatchRenorm(x, rmax, dmax, *, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                gamma_initializer=None, data_format="channels_last"):
    """Batch renormalization (Ioffe 2017) of a 2D or 4D input, as tensorpack's BatchRenorm.

    In a training tower the batch statistics are corrected by ``r`` (clipped to
    ``[1/rmax, rmax]``) and ``d`` (clipped to ``[-dmax, dmax]``) computed from the renorm
    averages (momentum 0.99, updated in every training tower); the inference averages are
    updated through ``UPDATE_OPS`` by the first training tower only.

    Args:
        rmax, dmax (float or scalar tensor): the largest corrections allowed.

    Variables: ``beta``, ``gamma``, ``moving_mean``, ``moving_variance``, ``moving_stddev``,
    ``renorm_mean``, ``renorm_stddev`` (the names ``tf.layers`` gave them).

    Example:
        >>> x = BatchRenorm("brn", x, rmax=3.0, dmax=5.0)
    """
    ctx = get_current_tower_context()
    training = ctx is not None and ctx.is_training
    ndims = x.shape.rank
    if ndims not in (2, 4):
        raise ValueError(f"BatchRenorm needs a 2D or 4D input, got shape {x.shape}.")
    data_format = "NCHW" if ndims == 2 else data_format_of(data_format, "BatchRenorm")
    axis = 1 if data_format == "NCHW" else 3
    channel_axis, red_axes, broadcast = _layout(ndims, axis, data_format)
    channels = x.shape[channel_axis]
    if channels is None:
        raise ValueError(f"BatchRenorm needs a known number of channels, got shape {x.shape}.")
    beta, gamma = _bn_variables(channels, center, scale, None, gamma_initializer, x.dtype)
    moving_mean = _statistic("moving_mean", channels, x.dtype, 0.0, ctx)
    moving_var = _statistic("moving_variance", channels, x.dtype, 1.0, ctx)
    moving_std = _statistic("moving_stddev", channels, x.dtype, 1.0, ctx)
    renorm_mean = _statistic("renorm_mean", channels, x.dtype, 0.0, ctx)
    renorm_std = _statistic("renorm_stddev", channels, x.dtype, 1.0, ctx)

    def r(t):
        return tf.reshape(t, broadcast(channels)) if axis == 1 and ndims == 4 else t

    if not training:
        xn = tf.nn.batch_normalization(x, r(moving_mean), r(moving_var), r(beta), r(gamma),
                                       epsilon)
    else:
        mean, var = tf.nn.moments(x, red_axes)
        std = tf.sqrt(var + epsilon)
        floor = tf.maximum(renorm_std, tf.sqrt(tf.cast(epsilon, x.dtype)))
        corr_r = tf.clip_by_value(std / floor, 1.0 / rmax, rmax)
        corr_d = tf.clip_by_value((mean - renorm_mean) / floor, -dmax, dmax)
        corr_r, corr_d = tf.stop_gradient(corr_r), tf.stop_gradient(corr_d)
        with tf.control_dependencies([corr_r, corr_d]):
            renorm_updates = [_ema_update(renorm_mean, mean, 0.99, "renorm_mean_ema_op"),
                              _ema_update(renorm_std, std, 0.99, "renorm_stddev_ema_op")]
        with tf.control_dependencies(renorm_updates):
            mean, var = tf.identity(mean), tf.identity(var)
        xn = tf.nn.batch_normalization(x, r(mean), r(var), r(beta + corr_d * gamma),
                                       r(gamma * corr_r), epsilon)
        if ctx.is_main_training_tower:
            update_std = _ema_update(moving_std, tf.sqrt(var + epsilon), momentum,
                                     "stddev_ema_op")
            with tf.control_dependencies([update_std]):
                update_var = tfv1.assign(moving_var, tf.nn.relu(
                    tf.square(moving_std.read_value()) - epsilon), name="variance_from_stddev")
            for op in (_ema_update(moving_mean, mean, momentum, "mean_ema_op"), update_var.op):
                tfv1.add_to_collection(tfv1.GraphKeys.UPDATE_OPS, op)
    out = tf.identity(xn, name="output")
    out.variables = VariableHolder()
    if scale:
        out.variables.gamma = gamma
    if center:
        out.variables.beta = beta
    return out
