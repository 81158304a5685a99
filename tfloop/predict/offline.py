"""OfflinePredictor: a predict graph of its own, built from a PredictConfig."""
from tfloop.predict.config import PredictConfig
from tfloop.tfutils.predict_tower import (
    build_predict_tower,
    lookup_tensors,
    make_input_placeholders,
)
from tfloop.tfutils.predictor import OnlinePredictor

__all__ = ["OfflinePredictor", "build_predict_graph"]


def check_config(config, who):
    if not isinstance(config, PredictConfig):
        raise TypeError(f"{who} needs a PredictConfig, got {config!r}.")
    return config


def build_predict_graph(config: PredictConfig, tower_name: str = "", device=None,
                        input_signature: list | None = None) -> tuple:
    """Build one predict tower of ``config`` in the default graph (placeholders as inputs).

    Returns:
        tuple: the input tensors and output tensors named by the config, in that tower.
    """
    signature = input_signature or config.input_signature
    placeholders = make_input_placeholders(signature, tower_name)
    tower = build_predict_tower(config.tower_func, placeholders, tower_name, device)
    return (lookup_tensors(tower, config.input_names, "input_names"),
            lookup_tensors(tower, config.output_names, "output_names"))


class OfflinePredictor(OnlinePredictor):
    """A predictor with a graph and session of its own, built and loaded from a config.

    The model's tower function is called once under ``TowerContext("", is_training=False)`` on
    placeholders, so tensors keep the names they have in training (``"prob"``, ``"fc/W"``). Call it
    on numpy batches of any size; several threads may call it at once.

    Args:
        config (PredictConfig): the model, the names and what to load.

    Example:
        >>> predictor = OfflinePredictor(PredictConfig(
        ...     model=MyModel(), session_init="train_log/mnist",   # its latest checkpoint
        ...     input_names=["image"], output_names=["prob"]))
        >>> prob, = predictor(images)
    """

    def __init__(self, config: PredictConfig) -> None:
        check_config(config, "OfflinePredictor")
        self.config = config
        self.graph = config._maybe_create_graph()
        with self.graph.as_default():
            inputs, outputs = build_predict_graph(config)
        sess = config._create_session(self.graph)
        if config.create_graph:
            self.graph.finalize()
        super().__init__(inputs, outputs, config.return_input, sess,
                         run_context=config.precision.rewriter_environment)
