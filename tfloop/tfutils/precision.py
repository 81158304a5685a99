"""Mixed precision and XLA as session rewrites: ``TrainConfig(mixed_precision=..., xla=...)``,
``RunOptions`` and ``PredictConfig(mixed_precision=..., xla=...)``. What each value does, and the
process environment TensorFlow's rewriter reads: :class:`Precision`.
"""
import contextlib
import functools
import os

from tfloop.compat import tf, tfv1
from tfloop.tfutils.loss_scale import LossScaleOptimizer
from tfloop.tfutils.optimizer import optimizer_chain
from tfloop.tfutils.summary import average_finite_values_only
from tfloop.utils import logger
from tfloop.utils.scoped_env import scoped_environ, value_before

__all__ = ["MIXED_PRECISION_MODES", "Precision", "check_mixed_precision", "merge_session_configs"]

MIXED_PRECISION_MODES = (None, "bfloat16", "float16")
_EMULATE_FP16 = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_EMULATE_FP16"
_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
_ALLOWLIST_REMOVE = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE"
# Without bfloat16 hardware TensorFlow runs these in bfloat16 through Eigen's generic
# contraction, ~50x slower than oneDNN's float32 kernels (the forward Conv2D and MatMul cast to
# float32 internally and stay fast enough).
_EMULATED_SLOW_BF16 = ("Conv2DBackpropFilter", "Conv2DBackpropInput")


def check_mixed_precision(value):
    """Return ``value`` if it is one of :data:`MIXED_PRECISION_MODES`, else raise ValueError."""
    if value is not None and (not isinstance(value, str) or value not in MIXED_PRECISION_MODES):
        modes = ["None (float32)"] + [repr(m) for m in MIXED_PRECISION_MODES[1:]]
        raise ValueError(f"mixed_precision={value!r} is not a precision tfloop knows: use "
                         f"{', '.join(modes[:-1])} or {modes[-1]}.")
    return value


def _check_xla(value):
    if not isinstance(value, bool):
        raise ValueError(f"xla={value!r}: use True (compile the step with XLA) or False.")
    return value


def merge_session_configs(base, user):
    """``base`` (what the trainer needs) with the fields set in ``user`` merged on top; device
    counts take the larger of the two, so a trainer's extra devices are never lost.

    Example:
        >>> config = merge_session_configs(trainer.default_session_config(), my_config)
    """
    merged = tfv1.ConfigProto()
    merged.CopyFrom(base)
    if user is not None:
        merged.MergeFrom(user)
        for device, count in base.device_count.items():
            merged.device_count[device] = max(count, merged.device_count[device])
    return merged


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _onednn_enabled():
    from tensorflow.python.util import _pywrap_util_port
    return bool(_pywrap_util_port.IsMklEnabled())


def _gpus():
    return tf.config.list_physical_devices("GPU")


def _bf16_hardware():
    """Whether this CPU computes bfloat16 natively (AMX or AVX512-BF16); unknown counts as yes."""
    return not os.path.exists("/proc/cpuinfo") or bool(_cpu_flags() & set(_BF16_CPU_FLAGS))


def _without_slow_bf16_gradients():
    """The process's list of ops taken out of the mixed-precision rewrites, with the convolution
    gradients added (a list the user set is kept and extended)."""
    ops = [op for op in (value_before(_ALLOWLIST_REMOVE) or "").split(",") if op]
    return ",".join(ops + [op for op in _EMULATED_SLOW_BF16 if op not in ops])


def _scales_the_loss(opt):
    """Whether ``opt`` or an optimizer it wraps is a loss-scale optimizer (tfloop's or
    TensorFlow's)."""
    scalers = (LossScaleOptimizer, tfv1.mixed_precision.MixedPrecisionLossScaleOptimizer)
    return any(isinstance(o, scalers) for o in optimizer_chain(opt))


class Precision:
    """The precision and compilation options of one run, and what they change.

    Both work on the session, not on the model: the graph keeps float32 variables, costs and
    outputs, and TensorFlow's graph rewriters change what runs inside the step. The modes of
    ``mixed_precision`` (:data:`MIXED_PRECISION_MODES`; ``TrainConfig``, ``RunOptions``,
    ``PredictConfig`` and ``KerasModel`` take the same):

    - ``None``: float32; no rewrite.
    - ``"bfloat16"``: the oneDNN bfloat16 rewrite (``auto_mixed_precision_onednn_bfloat16``)
      turns CPU matmuls, convolutions and what lies between them to bfloat16. On a CPU without
      AMX or AVX512-BF16, TensorFlow's bfloat16 convolution gradients are emulated element by
      element (~50x slower than float32): there they stay float32 (on bfloat16 activations).
    - ``"float16"``: the float16 rewrite (in training, with the model's optimizer wrapped in a
      :class:`~tfloop.tfutils.loss_scale.LossScaleOptimizer`). On GPUs the rewrite is
      ``auto_mixed_precision``; on a machine without one it is ``auto_mixed_precision_cpu`` with
      its emulation turned off, so the CPU computes convolutions and matmuls in real float16
      (slowly). The emulation, TensorFlow's default there, only rounds float32 results to
      float16, and it crashes the process (a segfault in the rewriter) on any step that also
      fetches the shape of a convolution's input, e.g. an InferenceRunner's batch size.

    ``xla=True`` turns on XLA auto-clustering of the step (``global_jit_level`` ON_1, on CPU too
    through the session's ``cpu_global_jit``).

    The two settings above that are not session options, the ops kept out of the bfloat16
    rewrite and the float16 emulation, TensorFlow reads from the process environment only
    (``TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE``, extended, never replaced, and
    ``TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_EMULATE_FP16=0``), each time it rewrites a graph for
    a new kind of session call. :meth:`apply` does not touch them; :meth:`rewriter_environment`
    sets them while this precision's sessions run (trainers around ``initialize`` and
    ``main_loop``, predictors around each call) and gives the process its values back after
    (:func:`~tfloop.utils.scoped_env.scoped_environ`), so no later run, training or predictor,
    inherits them. Sessions of different precisions running at the same moment in two threads
    share the one environment: the values of the one that started last hold.

    Args:
        mixed_precision (str): one of the modes above.
        xla (bool): compile the step with XLA auto-clustering.

    Example:
        >>> precision = Precision("float16", xla=False)
        >>> config = precision.apply(default_session_config())
        >>> get_opt_fn = precision.optimizer_fn(model.get_optimizer)
        >>> with precision.rewriter_environment():
        ...     sess.run(train_op)
    """

    def __init__(self, mixed_precision=None, xla=False):
        self.mixed_precision = check_mixed_precision(mixed_precision)
        self.xla = _check_xla(xla)
        self._needs_environment = None     # found on first use: the hardware does not change

    @property
    def active(self):
        return self.mixed_precision is not None or self.xla

    def __repr__(self):
        return f"Precision(mixed_precision={self.mixed_precision!r}, xla={self.xla})"

    def prepare_graph(self, graph):
        """Set up ``graph`` before the model is built in it: in float16, moving averages skip the
        overflowing steps that loss scaling skips (:func:`average_finite_values_only`)."""
        if self.mixed_precision == "float16":
            average_finite_values_only(graph)

    def check_session_creator(self, session_creator):
        """Raise ValueError if this precision needs session options that ``session_creator``
        (not None) has no ``config`` for; return self."""
        if self.active and session_creator is not None and not hasattr(session_creator, "config"):
            raise ValueError(f"{self} sets session options, but session_creator="
                             f"{session_creator!r} has no config to set them in: use "
                             "NewSessionCreator(config=...), or TrainConfig's session_config=.")
        return self

    def apply(self, config):
        """A copy of ``config`` (a ``tf.compat.v1.ConfigProto``) with this precision's
        rewrites on; ``config`` and the process are left as they are (the environment the
        rewriter also reads: :meth:`rewriter_environment`)."""
        from tensorflow.core.protobuf import rewriter_config_pb2
        on = rewriter_config_pb2.RewriterConfig.ON
        config = merge_session_configs(config, None)
        rewrite = config.graph_options.rewrite_options
        if self.mixed_precision == "bfloat16":
            rewrite.auto_mixed_precision_onednn_bfloat16 = on
        elif self.mixed_precision == "float16" and _gpus():
            rewrite.auto_mixed_precision = on
        elif self.mixed_precision == "float16":
            rewrite.auto_mixed_precision_cpu = on
        if self.xla:
            options = config.graph_options.optimizer_options
            options.global_jit_level = tfv1.OptimizerOptions.ON_1
            options.cpu_global_jit = True
        return config

    def rewriter_environment(self):
        """A context manager: the environment variables the rewriter of this precision's
        sessions reads, set while the ``with`` block runs (see the class's doc); nothing to set
        for float32, XLA, bfloat16 on bfloat16 hardware and float16 on a GPU."""
        if self._needs_environment is None:
            self._needs_environment = self._rewriter_needs_environment()
        if not self._needs_environment:
            return contextlib.nullcontext()
        if self.mixed_precision == "bfloat16":
            return scoped_environ({_ALLOWLIST_REMOVE: _without_slow_bf16_gradients()})
        return scoped_environ({_EMULATE_FP16: "0"})

    def _rewriter_needs_environment(self):
        if self.mixed_precision == "bfloat16":
            return not _bf16_hardware()
        return self.mixed_precision == "float16" and not _gpus()

    def optimizer_fn(self, get_opt_fn):
        """``get_opt_fn`` whose optimizer is wrapped in a :class:`LossScaleOptimizer` for float16
        (once; an optimizer that is or wraps a loss-scale optimizer is kept)."""
        if self.mixed_precision != "float16":
            return get_opt_fn
        made = []

        @functools.wraps(get_opt_fn)
        def get_optimizer():
            if not made:
                opt = get_opt_fn()
                if isinstance(opt, tfv1.train.Optimizer) and not _scales_the_loss(opt):
                    opt = LossScaleOptimizer(opt)
                made.append(opt)
            return made[0]
        return get_optimizer

    def check_hardware(self):
        """Log what this machine makes of the options: warnings where they cannot help."""
        from tensorflow.python.util import _pywrap_util_port
        if self.xla and not _pywrap_util_port.IsBuiltWithXLA():
            raise ValueError("xla=True: this TensorFlow build has no XLA; use xla=False.")
        if self.mixed_precision == "float16" and not _gpus():
            logger.warning(
                "mixed_precision='float16' on a machine without a GPU: the step computes in "
                "float16 with loss scaling, but CPUs have no fast float16, so it is slower than "
                "float32. For speed on a CPU use mixed_precision='bfloat16' on CPUs with AMX or "
                "AVX512-BF16, else None.")
            emulate = os.environ.get(_EMULATE_FP16, "0")
            if emulate.lower() not in ("0", "false"):
                logger.warning(
                    f"mixed_precision='float16': {_EMULATE_FP16}={emulate} is replaced by 0 "
                    "while tfloop's float16 sessions run: TensorFlow's float16 emulation crashes "
                    "on steps that fetch an input's shape, so tfloop computes in real float16.")
        if self.mixed_precision == "bfloat16":
            self._check_bfloat16()

    def _check_bfloat16(self):
        if _gpus():
            logger.warning("mixed_precision='bfloat16': TensorFlow's bfloat16 graph rewrite "
                           "converts CPU ops only; on a GPU use mixed_precision='float16'.")
        if not _onednn_enabled():
            logger.warning(
                "mixed_precision='bfloat16': TensorFlow's oneDNN optimizations are off in this "
                "process (TF_ENABLE_ONEDNN_OPTS, read when TensorFlow is imported; off by "
                "default on CPUs without AVX512), so the bfloat16 rewrite does not run and "
                "training stays float32. Set TF_ENABLE_ONEDNN_OPTS=1 before importing "
                "TensorFlow to force it, or use mixed_precision=None.")
        elif not _bf16_hardware():
            logger.warning("mixed_precision='bfloat16': this CPU has neither AMX nor "
                           "AVX512-BF16, so bfloat16 is emulated and slower than float32 (the "
                           "convolutions' gradients stay float32, see "
                           f"{_ALLOWLIST_REMOVE}); use mixed_precision=None for speed.")
