"""Towers: one call of the model's tower function, on one device, for training or inference.

The trainer never calls ``build_graph`` directly: it wraps it in a :class:`TowerFunc`, and every
call happens inside a :class:`TowerContext`. That way a multi-device trainer calls the same function
once per device, an ``InferenceRunner`` builds a predict tower that shares the training variables,
and callbacks find any tower's tensors by name through :class:`TowerTensorHandle`.
"""
import inspect

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import UnknownNameError, get_op_or_tensor_by_name
from tfloop.utils.checks import check_callable, check_positive_int
from tfloop.utils.coerce import tensorpack_int, tensorpack_keywords

__all__ = ["TowerContext", "get_current_tower_context", "TowerFunc", "TowerTensorHandle",
           "TowerTensorHandles", "BaseTowerContext", "TowerFuncWrapper"]

_CURRENT_TOWER = []


class TowerContext:
    """The context in which a tower function runs: its name, and whether it trains.

    Args:
        tower_name (str): the name scope of the tower's ops; ``""`` for the single training tower.
        is_training (bool): whether the tower builds the training graph (dropout on, batch
            statistics updated) or an inference graph.
        vs_name (str): variable scope for the tower's variables; ``""`` shares the global scope.
            Later training towers reuse variables (``reuse=True``); so do inference towers in a
            graph that already has trainable variables (e.g. beside the training tower). An
            inference tower in a fresh graph (a predictor's) creates them.
        index (int): the tower's position among the training towers (0: the first, which owns
            summaries and update ops).
        total (int): how many training towers the trainer builds (keyword only; 1 by default,
            as for a single tower). Layers that combine the towers (``BatchNorm`` with
            ``sync_statistics``) read it; when it is above 1, ``index`` must be below it.

    Example:
        >>> with TowerContext("", is_training=True):
        ...     cost = model.build_graph(*inputs)
    """

    def __init__(self, tower_name, is_training, vs_name="", index=0, *, total: int = 1):
        check_positive_int(total, f"TowerContext {tower_name!r}: total (the number of training "
                                  "towers)")
        if total > 1 and not 0 <= index < total:
            raise ValueError(f"TowerContext {tower_name!r}: index {index!r} is not the index of "
                             f"one of total={total} towers (0 to {total - 1}).")
        self.name = tower_name
        self.is_training = bool(is_training)
        self.vs_name = vs_name
        self.index = index
        self.total = total
        self._contexts = []

    @property
    def is_main_training_tower(self):
        """Whether this is the first training tower: summaries and update ops belong to it only."""
        return self.is_training and self.index == 0

    @property
    def has_own_variables(self):
        """Whether this tower creates variables (first training tower, or a replica's own scope)."""
        return self.is_main_training_tower or (self.is_training and bool(self.vs_name))

    @property
    def ns_name(self):
        return self.name

    def __enter__(self):
        if _CURRENT_TOWER:
            raise ValueError(f"TowerContext {self.name!r} cannot be nested in TowerContext "
                             f"{_CURRENT_TOWER[-1].name!r}.")
        _CURRENT_TOWER.append(self)
        reuse = not self.has_own_variables
        if self.vs_name:
            self._contexts.append(tfv1.variable_scope(self.vs_name, reuse=tfv1.AUTO_REUSE
                                                      if reuse else None))
        elif reuse:
            fresh_inference_graph = not self.is_training and not tfv1.get_collection(
                tfv1.GraphKeys.TRAINABLE_VARIABLES)
            self._contexts.append(tfv1.variable_scope(
                tfv1.get_variable_scope(),
                reuse=tfv1.AUTO_REUSE if fresh_inference_graph else True))
        if self.name:
            self._contexts.append(tf.name_scope(self.name + "/"))
        # Keras 3 layers built in the tower get graph variables with stable names. Imported here,
        # where every tower is built, so that importing tfloop.tfutils does not load Keras.
        from tfloop.tfutils.keras_scope import KerasTowerScope
        self._contexts.append(KerasTowerScope(self))
        for ctx in self._contexts:
            ctx.__enter__()
        return self

    def __exit__(self, *exc):
        _CURRENT_TOWER.pop()
        for ctx in reversed(self._contexts):
            ctx.__exit__(*exc)
        self._contexts = []
        return False

    def __repr__(self):
        return f"TowerContext({self.name!r}, is_training={self.is_training})"


class TrainTowerContext(TowerContext):
    """tensorpack's context of a training tower: ``TowerContext(ns_name, is_training=True,
    ...)``, which tensorpack's custom trainers (and ones copied from them) build directly.

    Example:
        >>> with TrainTowerContext("tower1", vs_name="tower1", index=1, total=2):
        ...     cost = model.build_graph(*inputs)
    """

    def __init__(self, ns_name, vs_name="", index=0, total=1):
        super().__init__(ns_name, True, vs_name, tensorpack_int(index, "TrainTowerContext: index"),
                         total=tensorpack_int(total, "TrainTowerContext: total"))


class PredictTowerContext(TowerContext):
    """tensorpack's context of an inference tower: ``TowerContext(ns_name, is_training=False,
    vs_name)``.

    Example:
        >>> with PredictTowerContext(""):
        ...     model.build_graph(*inputs)
    """

    def __init__(self, ns_name, vs_name=""):
        super().__init__(ns_name, False, vs_name)


def get_current_tower_context():
    """The :class:`TowerContext` being built, or ``None`` outside any tower."""
    return _CURRENT_TOWER[-1] if _CURRENT_TOWER else None


class TowerTensorHandle:
    """What one tower built: its context, input tensors, outputs, and any tensor by name.

    Example:
        >>> handle = trainer.towers.training()[0]
        >>> logits = handle["logits"]      # the tensor "logits:0" of that tower
    """

    def __init__(self, ctx, inputs, outputs, graph, input_signature=None):
        self._ctx = ctx
        self._graph = graph
        self.inputs = list(inputs)
        self.outputs = outputs
        self.input_names = [t.name for t in self.inputs]
        # The model's input names (``inputs()``) mean this tower's inputs, whatever the tensors
        # fed to the tower are called (a dataset's outputs, placeholders of another tower).
        self._inputs_by_name = {} if input_signature is None else {
            spec.name: tensor for spec, tensor in zip(input_signature, self.inputs)
            if spec.name and isinstance(tensor, tf.Tensor)}

    @property
    def name(self):
        return self._ctx.name

    @property
    def ns_name(self):
        return self._ctx.ns_name

    @property
    def is_training(self):
        return self._ctx.is_training

    @property
    def index(self):
        return self._ctx.index

    def get_tensor(self, name):
        """The tensor ``name`` of this tower: one of the model's input names (``"label"`` or
        ``"label:0"``) means the tower's own input; other names are looked up inside the tower's
        name scope first, then in the whole graph.

        Raises:
            UnknownNameError: the name is neither in this tower nor in the graph.
        """
        as_input = self._inputs_by_name.get(name[:-2] if name.endswith(":0") else name)
        if as_input is not None:
            return as_input
        candidates = []
        if self.ns_name:
            candidates.append(self.ns_name + "/" + name)
        candidates.append(name)
        for candidate in candidates:
            try:
                return get_op_or_tensor_by_name(candidate, self._graph)
            except UnknownNameError:
                continue
        raise UnknownNameError(f"No tensor named {name!r} in tower {self.name!r} or in the graph.")

    def get_tensors(self, names):
        return [self.get_tensor(n) for n in names]

    __getitem__ = get_tensor

    def __repr__(self):
        return f"TowerTensorHandle({self.name!r}, is_training={self.is_training})"


class TowerTensorHandles:
    """The list of towers a :class:`TowerFunc` built, with filters by role."""

    def __init__(self, handles):
        self._handles = list(handles)

    def training(self):
        return TowerTensorHandles([h for h in self._handles if h.is_training])

    def inference(self):
        return TowerTensorHandles([h for h in self._handles if not h.is_training])

    def __getitem__(self, key):
        if isinstance(key, int):
            return self._handles[key]
        for h in self._handles:
            if h.name == key:
                return h
        raise KeyError(f"No tower named {key!r}; towers: {[h.name for h in self._handles]}.")

    def __len__(self):
        return len(self._handles)

    def __iter__(self):
        return iter(self._handles)


class TowerFunc:
    """Wrap a tower function (e.g. ``ModelDesc.build_graph``) so each call is recorded as a tower.

    Args:
        tower_fn (callable): takes the input tensors positionally, returns the tower's output
            (the cost, for a training tower).
        input_signature (list[tf.TensorSpec]): the inputs' specs, in call order.

    Example:
        >>> tower_func = TowerFunc(model.build_graph, model.get_input_signature())
        >>> with TowerContext("", is_training=True):
        ...     cost = tower_func(*input_tensors)
        >>> tower_func.towers.training()[0]["cost"]
    """

    @tensorpack_keywords(inputs_desc="input_signature")
    def __init__(self, tower_fn, input_signature):
        check_callable(tower_fn, "The tower function")
        self._tower_fn = tower_fn
        self.input_signature = list(input_signature)
        self._handles = []
        self._check_arity()

    def _check_arity(self):
        try:
            sig = inspect.signature(self._tower_fn)
        except (TypeError, ValueError):
            return
        try:
            sig.bind(*self.input_signature)
        except TypeError:
            raise TypeError("The tower function "
                            f"{getattr(self._tower_fn, '__qualname__', self._tower_fn)} takes {sig}"
                            f" but the model declares {len(self.input_signature)} inputs ("
                            f"{', '.join(s.name or '?' for s in self.input_signature)}).") from None

    def __call__(self, *inputs):
        ctx = get_current_tower_context()
        if ctx is None:
            raise ValueError("A tower function must be called inside a TowerContext.")
        output = self._tower_fn(*inputs)
        self._handles.append(TowerTensorHandle(ctx, inputs, output, tfv1.get_default_graph(),
                                               self.input_signature))
        return output

    @property
    def towers(self):
        """:class:`TowerTensorHandles` of every tower built so far, in build order."""
        return TowerTensorHandles(self._handles)

    @property
    def tower_fn(self):
        """The wrapped function, e.g. to build the model again in another graph with a
        ``TowerFunc`` of its own (whose towers are recorded apart from these)."""
        return self._tower_fn


# tensorpack's names: the base class of its tower contexts, and TowerFunc's former name.
BaseTowerContext = TowerContext
TowerFuncWrapper = TowerFunc
