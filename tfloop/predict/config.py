"""PredictConfig: how to build a predict graph and what to load into it."""
import os
from collections.abc import Callable
from typing import Any

from tfloop.compat import tf, tfv1
from tfloop.model_desc import ModelDescBase
from tfloop.tfutils.precision import Precision
from tfloop.tfutils.predict_tower import check_session_init_complete
from tfloop.tfutils.sesscreate import NewSessionCreator, default_session_config
from tfloop.tfutils.sessinit import SmartInit
from tfloop.tfutils.tower import TowerFunc
from tfloop.utils.coerce import tensorpack_keywords

__all__ = ["PredictConfig"]


def _name_list(names, what):
    if isinstance(names, str):
        raise TypeError(f"PredictConfig: {what} must be a list of tensor names, got the string "
                        f"{names!r}; write [{names!r}].")
    try:
        names = list(names)
    except TypeError:
        raise TypeError(f"PredictConfig: {what} must be a list of tensor names, got {names!r}.") \
            from None
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise TypeError(f"PredictConfig: {what} must hold non-empty tensor names, got {bad!r}.")
    return names


def _tower_of(model, tower_func, input_signature):
    """``(input signature, TowerFunc)`` from PredictConfig's ``model=`` or ``tower_func=``."""
    if model is not None:
        if not isinstance(model, ModelDescBase):
            raise TypeError(f"PredictConfig: model must be a ModelDesc, got {model!r}.")
        if tower_func is not None or input_signature is not None:
            raise ValueError("PredictConfig: give model=, or tower_func= (with "
                             "input_signature=), not both.")
        signature = model.get_input_signature()
        return signature, TowerFunc(model.build_graph, signature)
    if isinstance(tower_func, TowerFunc):
        return tower_func.input_signature, tower_func
    if callable(tower_func):
        if input_signature is None:
            raise ValueError("PredictConfig: a plain tower_func needs input_signature=[...] "
                             "(a list of tf.TensorSpec).")
        signature = list(input_signature)
        return signature, TowerFunc(tower_func, signature)
    raise ValueError("PredictConfig needs model= (a ModelDesc) or tower_func=, got "
                     f"model={model!r}, tower_func={tower_func!r}.")


def _session_creator(session_creator):
    """``session_creator``, checked, or a NewSessionCreator for None."""
    if session_creator is None:
        return NewSessionCreator()
    if not hasattr(session_creator, "create_session"):
        raise TypeError("PredictConfig: session_creator must have create_session(graph) "
                        f"(e.g. NewSessionCreator), got {session_creator!r}.")
    return session_creator


class PredictConfig:
    """Everything a predictor needs: the model's tower function, what to load, inputs and outputs.

    Args:
        model (ModelDescBase): the model; its ``build_graph`` is the tower function.
        tower_func (callable or TowerFunc): instead of ``model``: a tower function, with
            ``input_signature`` unless it is a ``TowerFunc``.
        input_signature (list[tf.TensorSpec]): the inputs of a plain ``tower_func``.
        input_names (list[str]): the tensors to feed, in call order: the model's inputs by
            default; any tensor of the predict graph may be fed (e.g. an intermediate feature).
            Left out, a serving export (``ModelExporter.export_serving``) takes only the model
            inputs its outputs depend on.
        output_names (list[str]): the tensors to fetch, in output order (required).
        session_creator (NewSessionCreator): creates the session; tfloop's default config.
        session_init: what to load, anything the trainer accepts: a ``SessionInit``
            (``SmartInit``, ``SaverRestore``, ...), a checkpoint path, a log directory (its
            latest checkpoint), a ``.npz`` file or a dict ``{variable name: value}``. None keeps
            the initial values (a warning is logged).
        return_input (bool): predictors return ``(inputs, outputs)``.
        create_graph (bool): build in a new graph (else in the default graph).
        mixed_precision (str): one of :data:`~tfloop.tfutils.precision.MIXED_PRECISION_MODES`
            (:class:`~tfloop.tfutils.precision.Precision`): predict with the rewrite
            ``TrainConfig`` uses for training (``docs/performance.md``); inputs, outputs
            and the loaded variables stay float32.
        xla (bool): compile the prediction with XLA auto-clustering.

    Attributes:
        input_names_given (bool): whether ``input_names`` were given (else they are the model's
            inputs).

    Example:
        >>> config = PredictConfig(model=MyModel(), session_init="train_log/mnist",
        ...                        input_names=["image"], output_names=["prob"])
        >>> prob, = OfflinePredictor(config)(images)
    """

    @tensorpack_keywords(inputs_desc="input_signature")
    def __init__(self, model: ModelDescBase | None = None,
                 tower_func: Callable[..., Any] | None = None,
                 input_signature: list | None = None, input_names: list | None = None,
                 output_names: list | None = None, session_creator: Any = None,
                 session_init: Any = None, return_input: bool = False,
                 create_graph: bool = True, mixed_precision: str | None = None,
                 xla: bool = False) -> None:
        self.input_signature, self.tower_func = _tower_of(model, tower_func, input_signature)
        if output_names is None:
            raise ValueError("PredictConfig needs output_names=[...]: the tensors to predict.")
        self.output_names = _name_list(output_names, "output_names")
        if not self.output_names:
            raise ValueError("PredictConfig: output_names is empty; name at least one tensor.")
        self.input_names_given = input_names is not None
        if input_names is None:
            input_names = [s.name for s in self.input_signature]
        self.input_names = _name_list(input_names, "input_names")
        self.session_creator = _session_creator(session_creator)
        self.precision = Precision(mixed_precision, xla).check_session_creator(
            self.session_creator)
        if self.precision.active:
            self.session_creator.config = self.precision.apply(
                self.session_creator.config or default_session_config())
        if isinstance(session_init, (str, os.PathLike)) and not os.fspath(session_init):
            raise ValueError("PredictConfig: session_init is an empty path.")
        self.session_init = SmartInit(session_init)
        self.return_input = bool(return_input)
        self.create_graph = bool(create_graph)

    def _maybe_create_graph(self):
        return tf.Graph() if self.create_graph else tfv1.get_default_graph()

    def _create_session(self, graph):
        """Set up ``session_init`` in ``graph``, check it fills every variable of the model,
        create the session and load the values."""
        with graph.as_default():
            self.session_init.setup_graph()
            check_session_init_complete(self.session_init, graph)
        with self.precision.rewriter_environment():
            sess = self.session_creator.create_session(graph)
            self.session_init.init(sess)
        return sess
