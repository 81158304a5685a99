"""The weights a training ended with, kept in memory so that predicting needs no checkpoint.

The trainer's main loop reads them as it ends, however it ends (:class:`FinalWeights`);
``trainer.get_predictor`` after training builds the model again for inference in a graph and
session of its own and loads them (:class:`FinalWeightsGraph`), the way ``OfflinePredictor``
loads a checkpoint.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils.model_utils import read_model_weights
from tfloop.tfutils.predict_tower import (
    build_predict_tower,
    lookup_tensors,
    make_input_placeholders,
)
from tfloop.tfutils.predictor import OnlinePredictor
from tfloop.tfutils.tower import TowerFunc
from tfloop.utils import logger

__all__ = ["FinalWeights", "FinalWeightsGraph", "read_model_weights"]


def _assign_ops(graph, weights):
    """``(assign ops, feed dict)`` that give every global variable of ``graph`` its value in
    ``weights`` (values of the same variables, so of the same shape and dtype)."""
    variables = graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)
    missing = [v.op.name for v in variables if v.op.name not in weights]
    if missing:
        raise ValueError(
            f"get_predictor after training: the model built for inference has variable(s) "
            f"{', '.join(missing)} that the final weights of training do not hold (training had "
            f"{', '.join(sorted(weights)) or 'none'}). Create the same variables in training and "
            "inference, e.g. with tf.compat.v1.get_variable whatever the tower's is_training.")
    ops, feeds = [], {}
    with tf.name_scope("final_weights"):
        for variable in variables:
            value = tfv1.placeholder(variable.dtype.base_dtype, variable.shape)
            ops.append(variable.assign(value))
            feeds[value] = weights[variable.op.name]
    return ops, feeds


class FinalWeightsGraph:
    """The model's tower function built for inference in a graph of its own, on given weights.

    Tensors keep their training names (``"prob"``, ``"fc/W"``), as in ``OfflinePredictor``.

    Args:
        tower_func (TowerFunc): the trainer's tower function (only its function and input
            signature are used; its towers are left as they are).
        weights (dict): ``{variable name: value}``, e.g. :func:`read_model_weights`.
        session_creator: creates the session (``create_session(graph)``).
        device: where the tower goes (see ``tfutils.predict_tower.device_scope``).
        run_context (callable): makes a context manager entered around every run of the
            session, e.g. the training precision's ``rewriter_environment``.

    Example:
        >>> graph = FinalWeightsGraph(trainer.tower_func, trainer.final_weights,
        ...                           NewSessionCreator(), device=0)
        >>> prob, = graph.predictor(["x"], ["prob"])(batch)
    """

    def __init__(self, tower_func: TowerFunc, weights: dict, session_creator: Any,
                 device: Any, run_context: Callable[[], Any] | None = None) -> None:
        self._run_context = run_context or contextlib.nullcontext
        signature = tower_func.input_signature
        self.graph = tf.Graph()
        with self.graph.as_default():
            inputs = make_input_placeholders(signature)
            self.tower = build_predict_tower(TowerFunc(tower_func.tower_fn, signature), inputs,
                                             "", device)
            assign_ops, feeds = _assign_ops(self.graph, weights)
        with self._run_context():
            self.sess = session_creator.create_session(self.graph)
            self.sess.run(assign_ops, feeds)
        self.graph.finalize()

    def predictor(self, input_names: list, output_names: list) -> OnlinePredictor:
        """A predictor of ``output_names`` from ``input_names`` in this graph's session."""
        return OnlinePredictor(lookup_tensors(self.tower, list(input_names), "input_names"),
                               lookup_tensors(self.tower, list(output_names), "output_names"),
                               sess=self.sess, run_context=self._run_context)


class FinalWeights:
    """The trainer's part that keeps what a training leaves once ``train`` returns: the model's
    weights as training ended (finished, stopped, or interrupted with Ctrl-C; not after an
    error), read once as the main loop ends (before the session closes and before a cluster
    task says it is done) and held in memory as long as the trainer is. The trainer's
    ``final_weights``, ``training_ended`` and ``keep_final_weights`` are this part's;
    ``trainer.get_predictor`` after training predicts with them (:meth:`predictor`).

    Args:
        graph (tf.Graph): the training graph.
        loop (TrainLoop): the trainer's loop, which says how training ended.

    Attributes:
        keep (bool): the trainer's ``keep_final_weights``: set it to False before training to
            keep nothing (a model too large to hold a second time in host memory).

    Example:
        >>> trainer = SimpleTrainer()
        >>> launch_train_with_config(config, trainer)
        >>> prob, = trainer.get_predictor(["x"], ["prob"])(batch)
        >>> np.savez("weights.npz", **trainer.final_weights)
    """

    def __init__(self, graph: Any, loop: Any) -> None:
        self._graph = graph
        self._loop = loop
        self.keep = True
        self._weights: dict[str, np.ndarray] | None = None
        self._ended = False
        self._why_none = "training has not run"
        self._graphs: dict[Any, FinalWeightsGraph] = {}

    @property
    def weights(self) -> dict[str, np.ndarray] | None:
        """``{variable name: value}`` of the model's variables when training ended (the optimizer's
        slots left out), or None before training and when they were not kept. A ``session_init``
        for ``PredictConfig``, or for another training."""
        return self._weights

    @property
    def ended(self) -> bool:
        """Whether ``train`` has returned (or raised): the training session is closed."""
        return self._ended

    @contextlib.contextmanager
    def kept_from(self, sess: Any) -> Iterator[None]:
        """Around the main loop, inside it ``after_train``: read the final weights from ``sess``
        as the loop ends, however it ends, while the session and the cluster are still there."""
        try:
            yield
        finally:
            self._take(sess)

    def _take(self, sess: Any) -> None:
        error = self._loop.training_error
        if not self.keep:
            self._why_none = "trainer.keep_final_weights is False"
        elif error is not None and not isinstance(error, KeyboardInterrupt):
            self._why_none = (f"training failed ({type(error).__name__}: {error}), so its last "
                              "weights are not trusted")
        else:
            try:
                self._weights = read_model_weights(sess, self._graph)
            except (tf.errors.OpError, MemoryError) as e:
                self._why_none = f"reading them failed ({type(e).__name__}: {e})"
                logger.warning(f"The final weights are not kept for get_predictor: "
                               f"{self._why_none}.")

    def training_returned(self, nothing_trained: str | None = None) -> None:
        """``train`` returns, its session closed (or, ``nothing_trained`` saying why, never
        made)."""
        self._ended = True
        if nothing_trained is not None:
            self._why_none = nothing_trained

    def predictor(self, tower_func: TowerFunc, input_names: list, output_names: list,
                  device: Any, options: Any, session_config: Any) -> OnlinePredictor:
        """A predictor on the final weights, in a graph built once per device, its session made
        with the run's ``options`` (a ``RunOptions``) on ``session_config``."""
        if self._weights is None:
            raise RuntimeError(
                "get_predictor after training predicts with the weights training ended with, "
                f"which were not kept: {self._why_none}. Predict from a checkpoint "
                "instead: OfflinePredictor(PredictConfig(model=..., session_init=<a checkpoint of "
                "ModelSaver>, input_names=..., output_names=...)).")
        graph = self._graphs.get(device)
        if graph is None:
            creator = options.session_creator(None, session_config)
            graph = FinalWeightsGraph(tower_func, self._weights, creator, device,
                                      options.precision.rewriter_environment)
            self._graphs[device] = graph
            logger.detail("get_predictor: the model is built for inference in a graph of its own, "
                          "on the weights training ended with.")
        return graph.predictor(input_names, output_names)
