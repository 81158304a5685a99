"""Mixed precision and XLA for a training run: ``RunOptions(mixed_precision=..., xla=...)`` (or
``TrainConfig``'s) become :class:`~tfloop.tfutils.precision.Precision`, which says what each
option does; the trainer applies it (:class:`~tfloop.train.options.RunOptions`).
"""
from tfloop.tfutils.precision import (
    MIXED_PRECISION_MODES,
    Precision,
    check_mixed_precision,
    merge_session_configs,
)

__all__ = ["MIXED_PRECISION_MODES", "Precision", "check_mixed_precision", "merge_session_configs"]
