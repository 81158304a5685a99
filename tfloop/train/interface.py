"""launch_train_with_config: the one call that trains a TrainConfig with a trainer."""
from tfloop.tfutils.seed import seed_training, warn_unseeded_eager_shuffles
from tfloop.train.config import TrainConfig
from tfloop.train.precision import precision_session_creator
from tfloop.train.steps_per_run import set_steps_per_run
from tfloop.train.tower import TowerTrainer
from tfloop.utils import logger
from tfloop.utils.fs import display_path

__all__ = ["launch_train_with_config"]


def launch_train_with_config(config: TrainConfig, trainer: TowerTrainer) -> None:
    """Build ``config.model`` with ``trainer`` and train it.

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
    finished = getattr(config, "finished_epoch", None)
    if finished is not None:
        where = f"{finished} of {finished}" if finished == config.max_epoch else \
            f"{finished}, past max_epoch={config.max_epoch}"
        logger.info(f"{display_path(trainer.logdir)}: already finished at epoch "
                    f"{where}; raise max_epoch to train further.")
        return
    model = config.model
    trainer._model = model
    with trainer.graph.as_default():
        signature = model.get_input_signature()
    if config.steps_per_run is not None:
        set_steps_per_run(trainer, config.steps_per_run)
    seed = seed_training(trainer.graph, config.seed, config.deterministic)
    if config.precision.active:
        config.precision.check_hardware()
    config.precision.prepare_graph(trainer.graph)
    trainer.setup_graph(signature, config.data, model.build_graph,
                        config.precision.optimizer_fn(model.get_optimizer))
    warn_unseeded_eager_shuffles(trainer.graph, seed)
    session_creator = precision_session_creator(trainer, config.precision, config.session_creator,
                                                config.session_config)
    trainer.train_with_defaults(
        callbacks=config.callbacks, extra_callbacks=config.extra_callbacks,
        monitors=config.monitors, session_creator=session_creator,
        session_init=config.session_init, steps_per_epoch=config.steps_per_epoch,
        starting_epoch=config.starting_epoch, max_epoch=config.max_epoch)
