"""Regularization: weight-decay costs over variables chosen by a regex, and Dropout.

``Dropout`` keeps tensorpack's meaning: its first positional argument (and ``keep_prob``) is the
probability to *keep*; ``rate`` is the probability to drop.
"""
import re
import weakref

from tfloop.compat import tf, tfv1
from tfloop.models.registry import layer_register
from tfloop.tfutils.tower import get_current_tower_context
from tfloop.utils import logger

__all__ = [
    "Dropout",
    "l1_regularizer",
    "l2_regularizer",
    "regularize_cost",
    "regularize_cost_from_collection",
]

_LISTED = weakref.WeakKeyDictionary()  # graphs whose regularized variables were already listed


def l2_regularizer(scale):
    """A function of a tensor ``w``: ``scale * sum(w ** 2) / 2`` (``scale * tf.nn.l2_loss(w)``).

    Example:
        >>> wd = regularize_cost("fc.*/W", l2_regularizer(1e-4))
    """
    def l2(w):
        return tf.multiply(tf.cast(scale, w.dtype), tf.nn.l2_loss(w), name="l2_regularizer")
    return l2


def l1_regularizer(scale):
    """A function of a tensor ``w``: ``scale * sum(|w|)``.

    Example:
        >>> wd = regularize_cost(".*/W", l1_regularizer(1e-5))
    """
    def l1(w):
        return tf.multiply(tf.cast(scale, w.dtype), tf.reduce_sum(tf.abs(w)), name="l1_regularizer")
    return l1


def _zero(name):
    return tf.constant(0, dtype=tf.float32, name=f"empty_{name}")


def _as_float32(loss):
    if not loss.dtype.is_floating:
        raise TypeError(f"A regularization loss must be a float tensor, got {loss} ({loss.dtype}).")
    return tf.cast(loss, tf.float32) if loss.dtype != tf.float32 else loss


def _tower_prefix(ctx):
    """The variable-scope prefix of a replicated tower's own variables ('' when shared)."""
    return f"{ctx.vs_name}/" if ctx is not None and ctx.has_own_variables and ctx.vs_name else ""


def regularize_cost(regex: str, func, name: str = "regularize_cost") -> tf.Tensor:
    """The sum of ``func(v)`` over the trainable variables whose name matches ``regex``.

    In a replicated tower only that tower's own variables count. In a tower that is not
    training it is a zero constant (as in tensorpack).

    Args:
        regex (str): searched in each variable's name, e.g. ``'conv.*/W'``.
        func: tensor -> scalar tensor function, e.g. ``l2_regularizer(1e-4)`` or ``tf.nn.l2_loss``.
        name (str): the name of the result.

    Example:
        >>> cost = tf.add(cost, regularize_cost("fc.*/W", l2_regularizer(1e-5)), name="total_cost")
    """
    if not isinstance(regex, str) or not regex:
        raise ValueError(f"regularize_cost needs a non-empty regex (e.g. '.*/W'), got {regex!r}.")
    ctx = get_current_tower_context()
    if ctx is not None and not ctx.is_training:
        return _zero(name)
    prefix = _tower_prefix(ctx)
    params = [v for v in tfv1.trainable_variables() if v.op.name.startswith(prefix)]
    matched = [v for v in params if re.search(regex, v.op.name)]
    if not matched:
        return _zero(name)
    with tf.name_scope(f"{name}_internals"):
        costs = [_as_float32(func(v)) for v in matched]
    names = [v.op.name[len(prefix):] for v in matched]
    logger.info(f"regularize_cost() found {len(names)} variables to regularize.")
    graph = tfv1.get_default_graph()
    if graph not in _LISTED:
        _LISTED[graph] = True
        logger.info(f"The following tensors will be regularized: {', '.join(names)}")
    return tf.add_n(costs, name=name)


def regularize_cost_from_collection(name: str = "regularize_cost") -> tf.Tensor:
    """The sum of the losses in ``REGULARIZATION_LOSSES`` (those of a replicated tower's own
    variables, in such a tower); a zero constant in a tower that is not training.

    Example:
        >>> cost = tf.add(cost, regularize_cost_from_collection(), name="total_cost")
    """
    ctx = get_current_tower_context()
    if ctx is not None and not ctx.is_training:
        return _zero(name)
    prefix = _tower_prefix(ctx)
    losses = [loss for loss in tfv1.get_collection(tfv1.GraphKeys.REGULARIZATION_LOSSES)
              if loss.name.startswith(prefix)]
    if not losses:
        return _zero(name)
    logger.info(f"regularize_cost_from_collection() found {len(losses)} regularizers in "
                f"REGULARIZATION_LOSSES collection.")
    return tf.add_n([_as_float32(loss) for loss in losses], name=name)


_DROPOUT_KWARGS = ("keep_prob", "rate", "is_training", "training", "noise_shape", "seed")


def _drop_rate(args, kwargs):
    if len(args) > 1:
        raise TypeError(f"Dropout takes one positional argument after the input (keep_prob), got "
                        f"{len(args)}.")
    given = [k for k in ("keep_prob", "rate") if kwargs.get(k) is not None]
    if len(given) > 1 and not args:  # a positional keep_prob overrides both, as in argscope
        raise TypeError(f"Dropout got both {' and '.join(given)}: give keep_prob (the "
                        f"probability to keep) or rate (the probability to drop), not both.")
    if args:
        if args[0] != 0.5:
            logger.warning(
                f"Dropout: the positional argument ({args[0]}) is the probability to KEEP, as in "
                f"tensorpack (tf.nn.dropout's rate is the probability to drop). Write "
                f"keep_prob= or rate= to make it explicit.")
        keep = args[0]
    elif kwargs.get("keep_prob") is not None:
        keep = kwargs["keep_prob"]
    elif kwargs.get("rate") is not None:
        keep = None
        rate = kwargs["rate"]
        if not (isinstance(rate, tf.Tensor) or 0 <= rate < 1):
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}.")
        return rate
    else:
        keep = 0.5
    if not (isinstance(keep, tf.Tensor) or 0 < keep <= 1):
        raise ValueError(f"Dropout: keep_prob must be in (0, 1], got {keep!r}.")
    return 1 - keep


@layer_register(use_scope=None)
def Dropout(x, *args, **kwargs):
    """Dropout while training, identity otherwise: ``Dropout([name], x, keep_prob=0.5, *,
    rate=None, is_training=None, noise_shape=None, seed=None)``.

    As in tensorpack, the positional argument is ``keep_prob``, the probability to **keep** a
    unit (a warning says so when it is not 0.5), and wins over ``keep_prob``/``rate`` set by an
    argscope; ``rate=`` is the probability to drop.
    ``is_training`` (or ``training``) defaults to the tower context's.

    Example:
        >>> x = Dropout("drop", x, 0.8)           # keeps 80% of the units while training
        >>> x = Dropout("drop1", x, rate=0.2)     # the same
    """
    unknown = sorted(set(kwargs) - set(_DROPOUT_KWARGS))
    if unknown:
        raise TypeError(f"Dropout got unexpected argument(s) {', '.join(unknown)}; it accepts "
                        f"{', '.join(_DROPOUT_KWARGS)}.")
    rate = _drop_rate(args, kwargs)
    training = kwargs.get("is_training", kwargs.get("training"))
    if training is None:
        ctx = get_current_tower_context()
        training = ctx is not None and ctx.is_training
    if not training or (not isinstance(rate, tf.Tensor) and rate == 0):
        return tf.identity(x, name="output")
    dropped = tf.nn.dropout(x, rate=rate, noise_shape=kwargs.get("noise_shape"),
                            seed=kwargs.get("seed"))
    return tf.identity(dropped, name="output")
