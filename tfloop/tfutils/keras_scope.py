"""Keras 3 layers inside tfloop towers: shared graph variables, stable names, the training flag.

Every tower (``TowerContext``) runs inside a :class:`KerasTowerScope`, which the tower enters
itself, whatever was imported. Keras 3 reads and writes its
variables through a "stateless scope" when one is active; this scope answers those reads with
``tf.compat.v1`` graph variables of its own, so that Keras layers behave like tfloop's layers:

* **Variables** are created with ``tf.compat.v1.get_variable`` in the current variable scope, so an
  inference tower or a parameter-server tower reuses the training variables and a replicated tower
  gets its own ``tower<i>/`` copy. A layer built eagerly (e.g. a whole ``keras.Model``) starts from
  its current weights; a layer first built in the tower uses its own initializer.
* **Names** do not depend on Keras' process-wide automatic numbering: within one tower, every
  layer gets the name Keras would give it in a fresh process — its own name with an automatic
  ``_<n>`` suffix dropped, numbered again in order of first use (``dense``, ``dense_1``, …). The
  same script therefore writes the same checkpoint names in any process and in any graph.
* **Trainable**: a variable is trainable when Keras says so and the layer using it is trainable.
* **Updates** a layer makes in ``call`` (batch-norm moving statistics, a dropout layer's random
  seed) become ``assign`` ops in ``UPDATE_OPS`` of the first training tower, run each step by
  ``RunUpdateOps``; other towers' updates are dropped, as for :func:`tfloop.models.BatchNorm`
  (their dropout seeds are offset so that they still draw differently at every step).
* **Training flag**: a layer called without ``training=`` gets the tower's ``is_training``.

Example:
    >>> class Model(ModelDesc):
    ...     def build_graph(self, x, y):
    ...         h = keras.layers.Dense(32, activation="relu")(x)    # variable "dense/kernel"
    ...         h = keras.layers.Dropout(0.5)(h)    # active in training towers only
    ...         ...
"""
import re
from typing import Optional

import keras
from keras.src.backend.common import global_state
from keras.src.backend.common.stateless_scope import StatelessScope
from keras.src.layers.layer import CallContext
from keras.src.utils.naming import to_snake_case
from tensorflow.python.eager import context as eager_context

from tfloop.compat import tf, tfv1

__all__ = ["KerasTowerScope"]

_NUMBERED = re.compile(r"^(.+)_([0-9]+)$")
_SEED_STATE = "seed_generator_state"


def _automatic_prefixes():
    """The prefixes Keras names objects with automatically (``dense`` for ``Dense``, ...)."""
    prefixes = {"variable", "seed_generator"}
    pending = [keras.Operation]
    while pending:
        cls = pending.pop()
        prefixes.add(to_snake_case(cls.__name__))
        pending.extend(cls.__subclasses__())
    return prefixes


class _CanonicalNames:
    """Maps Keras variable paths to names that depend only on the order of first use."""

    def __init__(self):
        self._canonical = {(): ()}
        self._children = {}
        self._prefixes = _automatic_prefixes()

    def _base(self, component):
        match = _NUMBERED.match(component)
        if match is None:
            return component
        if match.group(1) not in self._prefixes:
            self._prefixes = _automatic_prefixes()  # a layer class defined since
        return match.group(1) if match.group(1) in self._prefixes else component

    def name(self, path):
        components = tuple(path.split("/"))
        for i in range(1, len(components) + 1):
            key = components[:i]
            if key in self._canonical:
                continue
            parent = self._canonical[key[:-1]]
            taken = self._children.setdefault(parent, set())
            base = self._base(key[-1])
            name, n = base, 0
            while name in taken:
                n += 1
                name = f"{base}_{n}"
            taken.add(name)
            self._canonical[key] = parent + (name,)
        return "/".join(self._canonical[components])


class _TowerCallContext(CallContext):
    """Keras' call context for a whole tower: a top-level layer call without ``training=`` gets
    the tower's flag; nested calls inherit from their caller as usual."""

    def __init__(self, training):
        super().__init__(entry_layer=None)
        self._tower_training = training

    def get_value(self, arg_name, default=None):
        if arg_name == "training" and not global_state.get_global_attribute("name_scope_stack"):
            return self._tower_training
        return super().get_value(arg_name, default)


def _frozen_by_caller():
    """Whether a Keras layer calling from the current name scope is not trainable."""
    stack = global_state.get_global_attribute("name_scope_stack") or []
    return any(isinstance(s.caller, keras.layers.Layer) and not s.caller.trainable for s in stack)


class KerasTowerScope(StatelessScope):
    """The Keras state of one tower: its graph variables, updates and losses.

    Entered by every ``TowerContext``; users do not create it. Inside a tower,
    ``KerasTowerScope.current()`` returns it.

    Args:
        tower: the ``TowerContext`` being built.

    Attributes:
        losses (list[tf.Tensor]): losses Keras layers added with ``add_loss`` in this tower.
        variables (dict[str, tf.Variable]): the graph variable of each Keras variable path used.

    Example:
        >>> with TowerContext("", is_training=True):
        ...     y = keras.layers.Dense(3)(x)
        ...     names = sorted(KerasTowerScope.current().variables)   # dense/bias, dense/kernel
    """

    def __init__(self, tower) -> None:
        super().__init__(collect_losses=True, initialize_variables=False)
        self.tower = tower
        self.graph = tfv1.get_default_graph()
        self.variables: dict[str, tf.Variable] = {}
        self._resolved: dict[int, tuple] = {}
        self._current: dict[int, tf.Tensor] = {}
        self._names = _CanonicalNames()
        self._saved_call_context = None

    @staticmethod
    def current() -> Optional["KerasTowerScope"]:
        """The scope of the tower being built, or None outside any tower."""
        scope = global_state.get_global_attribute("stateless_scope")
        return scope if isinstance(scope, KerasTowerScope) else None

    @property
    def _is_main(self):
        return self.tower.is_main_training_tower

    def __enter__(self):
        self._saved_call_context = global_state.get_global_attribute("current_call_ctx")
        global_state.set_global_attribute("current_call_ctx",
                                          _TowerCallContext(self.tower.is_training))
        return super().__enter__()

    def __exit__(self, *exc):
        global_state.set_global_attribute("current_call_ctx", self._saved_call_context)
        return super().__exit__(*exc)

    def graph_variable(self, variable: keras.Variable) -> tf.Variable | None:
        """The graph variable this tower uses for the Keras ``variable``, or None if unused."""
        entry = self._resolved.get(id(variable))
        return entry[1] if entry is not None else None

    def get_current_value(self, variable):
        key = id(variable)
        if key in self._current:
            return self._current[key]
        graph_var = self._resolve(variable)
        if variable.name == _SEED_STATE and not self._is_main:
            return self._seed_for_tower(graph_var)
        return graph_var

    def add_update(self, update):
        variable, value = update
        graph_var = self._resolve(variable)
        value = tf.cast(value, graph_var.dtype)
        if self._is_main:
            name = f"{graph_var.op.name.rsplit('/', 1)[-1]}_update"
            tfv1.add_to_collection(tfv1.GraphKeys.UPDATE_OPS,
                                   graph_var.assign(value, read_value=False, name=name))
        self._current[id(variable)] = value

    def _seed_for_tower(self, graph_var):
        """A seed state read by a tower other than the first training tower. Its updates are
        dropped, so a training tower (another device, or the in-graph loop of
        ``steps_per_run``) offsets the state by its index and by a number drawn at each
        execution: its random draws differ from the first tower's and from one step to the
        next."""
        value = tf.convert_to_tensor(graph_var)
        if not self.tower.is_training:
            return value
        offset = tf.stack([tf.constant(self.tower.index, value.dtype),
                           tfv1.random_uniform([], maxval=2 ** 31 - 1, dtype=value.dtype)])
        return value + offset

    def _first_tower_variable(self, name):
        """The first training tower's variable for ``name`` in a replica's variable scope."""
        scope = tfv1.get_variable_scope().name
        prefix = f"{self.tower.vs_name}/"
        if not self.tower.vs_name or not (scope + "/").startswith(prefix):
            return None
        full = f"{scope}/{name}"[len(prefix):]
        return next((v for v in self.graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)
                     if v.op.name == full), None)

    def _resolve(self, variable):
        key = id(variable)
        if key in self._resolved:
            return self._resolved[key][1]
        name = self._names.name(variable.path)
        if name in self.variables:
            raise ValueError(
                f"Two Keras variables in one tower both map to the name {name!r} (Keras paths "
                f"{variable.path!r} and another): give the layers distinct names, e.g. "
                f"keras.layers.Dense(10, name='fc2').")
        trainable = bool(variable.trainable) and not _frozen_by_caller()
        seed_of_replica = variable.name == _SEED_STATE and not self._is_main
        graph_var = self._first_tower_variable(name) if seed_of_replica else None
        if graph_var is None:
            graph_var = self._get_variable(variable, name, trainable)
        self._resolved[key] = (variable, graph_var)
        self.variables[name] = graph_var
        return graph_var

    def _get_variable(self, variable, name, trainable):
        initializer = self._initializer(variable)
        try:
            return tfv1.get_variable(name, shape=tuple(variable.shape),
                                     dtype=tf.as_dtype(variable._dtype), initializer=initializer,
                                     trainable=trainable)
        except ValueError as error:
            fix = ("This tower reuses the variables of the training tower: build the same layers "
                   "in every tower." if tfv1.get_variable_scope().reuse is True else
                   "Give Keras layers names that differ from other variables of the model.")
            raise ValueError(
                f"The Keras variable {variable.path!r} cannot be created as graph variable "
                f"{name!r} in tower {self.tower.name!r}: {error} {fix}") from None

    @staticmethod
    def _initializer(variable):
        """The initial value of the graph variable: the Keras variable's current value when it
        has one (a layer built eagerly), else its own initializer."""
        if variable._value is None:
            initializer = variable._initializer
            return lambda shape, dtype=None, partition_info=None: initializer(
                tuple(shape), dtype=variable._dtype)
        return tfv1.constant_initializer(_initial_value(variable))


def _initial_value(variable):
    """The value of a Keras variable created eagerly, or the initial value of one that Keras
    created in a graph (a layer made under ``graph.as_default()``, outside any tower)."""
    try:
        with eager_context.eager_mode():
            return variable._value.numpy()
    except (NotImplementedError, ValueError, TypeError):
        pass
    graph_var = variable._value
    try:
        with tfv1.Session(graph=graph_var.graph) as sess:
            return sess.run(graph_var.initial_value)
    except (AttributeError, tf.errors.OpError) as error:
        raise ValueError(
            f"The Keras variable {variable.path!r} has no value tfloop can read ({error}). "
            f"Create the layer eagerly (e.g. in the model's __init__) or inside "
            f"build_graph.") from None
