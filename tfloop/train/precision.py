"""Mixed precision and XLA for a training run: the session a trainer creates gets the rewrites of
``TrainConfig(mixed_precision=..., xla=...)`` (:class:`~tfloop.tfutils.precision.Precision`, which
also says what each option does).
"""
from tfloop.tfutils.precision import (
    MIXED_PRECISION_MODES,
    Precision,
    check_mixed_precision,
    merge_session_configs,
)
from tfloop.tfutils.sesscreate import NewSessionCreator, default_session_config

__all__ = ["MIXED_PRECISION_MODES", "Precision", "check_mixed_precision", "merge_session_configs",
           "precision_session_creator", "precision_session_config"]


def precision_session_creator(trainer, precision, session_creator=None, session_config=None):
    """The session creator a run uses: the user's ``session_creator`` (its ``config`` with the
    precision's rewrites), or a :class:`NewSessionCreator` whose config is the trainer's default
    config merged with ``session_config`` and the precision's rewrites; None when nothing needs
    changing (the trainer then uses its default). Trainers that make their own sessions
    (distributed ones) read ``trainer.precision`` through :func:`precision_session_config`.

    Example:
        >>> creator = precision_session_creator(trainer, Precision("bfloat16"), None, my_config)
    """
    trainer.precision = precision
    if getattr(trainer, "server", None) is not None:  # it refuses session options of its own
        return session_creator or (NewSessionCreator(config=session_config)
                                   if session_config is not None else None)
    if session_creator is not None:
        if precision.check_session_creator(session_creator).active:
            session_creator.config = precision.apply(session_creator.config or
                                                      default_session_config())
        return session_creator
    if session_config is None and not precision.active:
        return None
    base = getattr(trainer, "default_session_config", default_session_config)()
    return NewSessionCreator(config=precision.apply(merge_session_configs(base, session_config)))


def precision_session_config(trainer, config):
    """``config`` with the rewrites of ``trainer.precision`` (set by launch_train_with_config)."""
    precision = getattr(trainer, "precision", None)
    return precision.apply(config) if precision is not None and precision.active else config
