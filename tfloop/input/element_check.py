"""Dataset elements against the model's ``inputs()``: structure, dtypes and shapes.

Checked once, when the graph is built, from the dataset's ``element_spec``:

- the structure: a tuple (or list) in the order of ``inputs()``, a dict keyed by input name, or a
  single tensor for a single input; every component a dense tensor;
- the dtype: equal, or a safe cast (see :mod:`tfloop.input.casting`) that the graph applies after
  the iterator, with a note; floats for an integer input are cast after a run-time check that
  every value is a whole number the dtype holds, integers for a narrower integer input after a
  run-time check that every value is in its range; an unsafe cast is an error that shows the
  cast to write;
- the shape: compatible with the declared one. Where the dataset's shape is looser than the
  declared one (a generator with unknown dimensions, a batch that may be smaller), each batch is
  checked at run time by one ``EnsureShape`` op named after the input, so a batch of another
  shape stops training instead of being broadcast into a wrong result.
"""
import collections
import keyword

from tfloop.compat import tf
from tfloop.input.base import check_same_batch_size, describe_spec
from tfloop.input.casting import (
    INTEGRAL,
    NARROWING,
    SAFE,
    UNSAFE,
    cast_kind,
    integral_cast,
    range_checked_cast,
)
from tfloop.utils import logger

__all__ = ["ComponentPlan", "conform_tensor", "match_element_spec"]

ComponentPlan = collections.namedtuple(
    "ComponentPlan", ["want", "got", "cast", "check_shape", "integral", "narrowing"],
    defaults=[False, False])
ComponentPlan.__doc__ = """How one dataset component becomes one input tensor.

Fields: ``want`` (the input's TensorSpec), ``got`` (the component's TensorSpec), ``cast`` (the
dtype to cast to, or None), ``check_shape`` (whether its shape is checked at run time),
``integral`` (floats for an integer input: each value is checked to be whole and in range),
``narrowing`` (integers for a narrower integer input: each value is checked to be in range).
"""


# The casts the graph applies, with why, as the note about each says.
_WHY = {SAFE: "a safe cast", INTEGRAL: "each value checked to be a whole number it can hold",
        NARROWING: "each value checked to be in its range"}


def _shape_needs_check(got, want):
    """Whether a tensor of static shape ``got`` may have a shape that ``want`` refuses."""
    if want.rank is None:
        return False
    if got.rank is None:
        return True
    return any(w is not None and g is None for g, w in zip(got.as_list(), want.as_list()))


def _converted(value, got, want):
    if got == tf.string:
        return f"tf.strings.to_number({value}, tf.{want.name})"
    if want == tf.string:
        return f"tf.strings.as_string({value})"
    return f"tf.cast({value}, tf.{want.name})"


def _map_with_cast(keys, signature, index, got, want):
    """``ds = ds.map(...)`` that converts component ``index`` to ``want`` and keeps the others."""
    if keys is not None:
        key = keys[index]
        return f"ds = ds.map(lambda d: {{**d, {key!r}: {_converted(f'd[{key!r}]', got, want)}}})"
    names = []
    for i, spec in enumerate(signature):
        name = spec.name or ""
        usable = name.isidentifier() and not keyword.iskeyword(name) and name not in names
        names.append(name if usable else f"c{i}")
    if len(names) == 1:
        return f"ds = ds.map(lambda {names[0]}: {_converted(names[0], got, want)})"
    parts = [_converted(n, got, want) if i == index else n for i, n in enumerate(names)]
    return f"ds = ds.map(lambda {', '.join(names)}: ({', '.join(parts)}))"


def _components(spec, signature):
    """``(keys, component specs)`` of an element spec, in the order of ``signature``."""
    if isinstance(spec, dict):
        missing = [s.name for s in signature if s.name not in spec]
        if missing:
            raise ValueError(f"Dataset elements are dicts with keys {sorted(spec)} but inputs() "
                             f"needs {missing}.")
        keys = [s.name for s in signature]
        return keys, [spec[k] for k in keys]
    specs = list(spec) if isinstance(spec, (tuple, list)) else [spec]
    if len(specs) != len(signature):
        declared = ", ".join(describe_spec(s) for s in signature)
        raise ValueError(f"Dataset elements have {len(specs)} components but inputs() declares "
                         f"{len(signature)} ({declared}).")
    return None, specs


def match_element_spec(element_spec, signature, owner="DatasetInput"):
    """Check a dataset's ``element_spec`` against ``inputs()`` and plan each component.

    Logs a note for the safe casts and the run-time shape checks it plans.

    Args:
        element_spec: the dataset's ``element_spec``.
        signature (list[tf.TensorSpec]): the model's inputs.
        owner (str): who asks, for messages.

    Returns:
        (keys, plans): the dict keys to take the components by (None for a tuple), and one
        :class:`ComponentPlan` per input.

    Raises:
        ValueError: the structure, a dtype (an unsafe cast) or a shape does not fit.
        TypeError: a component is not a dense tensor.

    Example:
        >>> keys, plans = match_element_spec(dataset.element_spec, model.get_input_signature())
    """
    keys, specs = _components(element_spec, signature)
    plans = []
    for index, (got, want) in enumerate(zip(specs, signature)):
        label = repr(keys[index]) if keys is not None else str(index)
        if not isinstance(got, tf.TensorSpec):
            raise TypeError(f"Dataset component for input {describe_spec(want)} is {got}, not a "
                            f"dense tensor.")
        if not got.shape.is_compatible_with(want.shape):
            raise ValueError(
                f"Dataset component {label} has shape {got.shape}, which does not match input "
                f"{describe_spec(want)}: make the dataset give that shape, or change inputs().")
        kind = cast_kind(got.dtype, want.dtype)
        if kind == UNSAFE:
            raise ValueError(
                f"Dataset component {label} is {got.dtype.name}, which input "
                f"{describe_spec(want)} cannot take: {got.dtype.name} -> {want.dtype.name} is not "
                f"a safe cast. Convert it in the dataset if that is what you mean: "
                f"{_map_with_cast(keys, signature, index, got.dtype, want.dtype)}")
        if kind in _WHY:
            why = _WHY[kind]
            logger.info(
                f"{owner}: input {want.name or label} is {got.dtype.name} in the dataset and is "
                f"cast to {want.dtype.name} in the graph, as inputs() declares ({why}). To "
                f"skip the cast: {_map_with_cast(keys, signature, index, got.dtype, want.dtype)}")
        plans.append(ComponentPlan(want, got, want.dtype if kind in _WHY else None,
                                   _shape_needs_check(got.shape, want.shape), kind == INTEGRAL,
                                   kind == NARROWING))
    check_same_batch_size([got.shape.as_list() if got.shape.rank is not None else []
                           for got in specs], signature, f"{owner}: dataset elements")
    _note_shape_checks(plans, owner)
    return keys, plans


def _note_shape_checks(plans, owner):
    checked = [p for p in plans if p.check_shape]
    if not checked:
        return
    described = ", ".join(f"{p.want.name or '<unnamed>'} {p.want.shape} (dataset: {p.got.shape})"
                          for p in checked)
    batch_hint = ""
    if any(p.want.shape.rank and p.want.shape[0] is not None and
           (p.got.shape.rank is None or p.got.shape[0] is None) for p in checked):
        batch_hint = (" inputs() fixes the batch size: batch the dataset with "
                      "drop_remainder=True so that no smaller batch is left.")
    logger.info(f"{owner}: the dataset does not guarantee the shapes inputs() declares for "
                f"{described}; every batch is checked when it is read, and one of another shape "
                f"stops training with an error naming the input.{batch_hint}")


def conform_tensor(tensor, plan, owner="DatasetInput"):
    """The input tensor for a dataset component: cast, shape-checked or shaped, and named after
    the input (``x``, so callbacks find it by the input's name)."""
    spec = plan.want
    name = spec.name or None
    if plan.integral or plan.narrowing:
        checked_cast = integral_cast if plan.integral else range_checked_cast
        tensor = checked_cast(tensor, plan.cast, owner, describe_spec(spec),
                              name=None if plan.check_shape else name)
    elif plan.cast is not None:
        tensor = tf.cast(tensor, plan.cast, name=None if plan.check_shape else name)
    elif not plan.check_shape and name:
        tensor = tf.identity(tensor, name=name)
    if plan.check_shape:
        # One op per step: it raises "Shape of tensor ... [4,1] is not compatible with expected
        # shape [?,3]" in node <input name> when a batch has another shape.
        return tf.ensure_shape(tensor, spec.shape, name=name)
    tensor.set_shape(spec.shape)
    return tensor
