"""launch_train_with_config: the one call that trains a TrainConfig with a trainer."""
from tfloop.tfutils.precision import merge_session_configs
from tfloop.tfutils.sesscreate import NewSessionCreator
from tfloop.train.config import AutoResumeTrainConfig, TrainConfig
from tfloop.train.tower import TowerTrainer

__all__ = ["launch_train_with_config"]


def launch_train_with_config(config: TrainConfig, trainer: TowerTrainer) -> None:
    """Build ``config.model`` with ``trainer`` and train it: the trainer takes the config's
    :class:`RunOptions` and, for a resumed run, the checkpoint it continues (an
    :class:`AutoResumeTrainConfig` finds it in the trainer's run directory).

    Example:
        >>> launch_train_with_config(TrainConfig(model=MyModel(), data=data, max_epoch=5),
        ...                          SimpleTrainer())
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"launch_train_with_config needs a TrainConfig, got {config!r}.")
    if not isinstance(trainer, TowerTrainer):
        raise TypeError("launch_train_with_config needs a tfloop trainer (e.g. SimpleTrainer()), "
                        f"got {trainer!r}.")
    if config.model is None or config.data is None:
        raise ValueError("TrainConfig needs model= and data= to be launched.")
    if config.logdir is not None:
        trainer.logdir = config.logdir
    if isinstance(config, AutoResumeTrainConfig):
        config.resume_in(trainer.run_logdir)       # the checkpoint is the run's own
    trainer.set_options(config.options)
    trainer.setup_model(config.model, config.data)
    session_creator = config.session_creator
    if config.session_config is not None:
        session_creator = NewSessionCreator(config=merge_session_configs(
            trainer.default_session_config(), config.session_config))
    trainer.train_with_defaults(
        callbacks=config.callbacks, extra_callbacks=config.extra_callbacks,
        monitors=config.monitors, session_creator=session_creator,
        session_init=config.session_init, steps_per_epoch=config.steps_per_epoch,
        # A resumed run starts where its checkpoint says (the trainer reads it).
        starting_epoch=config.starting_epoch if config.resume_from is None else 1,
        max_epoch=config.max_epoch, resume_from=config.resume_from)
