"""FeedfreePredictor: predict from an input pipeline inside the graph, one batch per call."""
from tfloop.input.dataset import DatasetInput
from tfloop.input.dummy import DummyConstantInput
from tfloop.predict.config import PredictConfig
from tfloop.predict.offline import check_config
from tfloop.tfutils.predict_tower import build_predict_tower, lookup_tensors
from tfloop.tfutils.predictor import PredictorBase

__all__ = ["FeedfreePredictor"]


class FeedfreePredictor(PredictorBase):
    """A predictor whose inputs come from an in-graph input source: each call takes the next
    batch of it and returns the outputs of ``config.output_names``; nothing is fed.

    Args:
        config (PredictConfig): the model, the outputs and what to load; its ``input_names`` are
            not used (the input source provides the model's inputs).
        input_source (DatasetInput or DummyConstantInput): where the batches come from. A
            ``DatasetInput(..., repeat=False)`` raises ``tf.errors.OutOfRangeError`` at its end.

    Example:
        >>> predictor = FeedfreePredictor(config, DatasetInput(make_test_dataset, repeat=False))
        >>> prob, = predictor()      # the first batch's outputs
    """

    def __init__(self, config: PredictConfig, input_source):
        check_config(config, "FeedfreePredictor")
        if not isinstance(input_source, (DatasetInput, DummyConstantInput)):
            raise TypeError("FeedfreePredictor reads from an in-graph input (DatasetInput, "
                            f"DummyConstantInput), got {input_source!r}; for numpy batches or "
                            "other iterables use SimpleDatasetPredictor.")
        if input_source.setup_done():
            raise ValueError(f"FeedfreePredictor needs an input source of its own; {input_source} "
                             "is already set up.")
        self.config = config
        self.return_input = config.return_input
        self.graph = config._maybe_create_graph()
        with self.graph.as_default():
            input_source.setup(config.input_signature)
            inputs = input_source.get_input_tensors()
            tower = build_predict_tower(config.tower_func, inputs, "")
            self.output_tensors = lookup_tensors(tower, config.output_names, "output_names")
        self.input_source = input_source
        self.sess = config._create_session(self.graph)
        if isinstance(input_source, DatasetInput):
            input_source.initialize(self.sess)
        if config.create_graph:
            self.graph.finalize()
        self._callable = self.sess.make_callable(self.output_tensors)

    def __call__(self):
        """The outputs of the next batch of the input source."""
        with self.config.precision.rewriter_environment():
            outputs = self._callable()
        return ((), outputs) if self.return_input else outputs
