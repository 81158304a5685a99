"""What an export's signature holds: its inputs are what its outputs read.

By default (no ``input_names`` given) a serving signature takes the model's inputs that the
outputs depend on: a label that only the cost reads is left out, and the export's log says so.
Inputs given by name are taken as given; an output that depends on a model input among neither
them nor what they replace is an error naming both.
"""
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.utils import logger

__all__ = ["signature_key", "needed_placeholders", "choose_inputs"]

# The ops a signature must feed: a placeholder without a default value.
_FEED_REQUIRED = frozenset(["Placeholder", "PlaceholderV2"])


def signature_key(tensor):
    """The key of ``tensor`` in a signature: its op name, ``op_1`` for the second output."""
    op_name, _ = get_op_tensor_name(tensor.name)
    index = tensor.value_index
    return op_name if index == 0 else f"{op_name}_{index}"


def needed_placeholders(output, fed):
    """The placeholders (ops that must be fed) that computing ``output`` runs, when the tensors
    ``fed`` are fed (the ops behind them then do not run); in graph order.

    Args:
        output (tf.Tensor): the tensor computed.
        fed (list[tf.Tensor]): the tensors fed.
    """
    fed_names = {t.name for t in fed}
    seen, stack, found = set(), [output.op], []
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _FEED_REQUIRED:
            found.append(op)
            continue
        stack.extend(t.op for t in op.inputs if t.name not in fed_names)
        stack.extend(op.control_inputs)
    order = {op.name: i for i, op in enumerate(output.graph.get_operations())}
    return sorted(found, key=lambda op: order[op.name])


def _user_name(name):
    return get_op_tensor_name(name)[0]


def choose_inputs(who, placeholders, inputs, outputs, input_names, output_names, given):
    """The signature's inputs and the names of the model inputs left out of it.

    Args:
        who (str): the export method, for messages.
        placeholders (list[tf.Tensor]): the model's input placeholders.
        inputs (list[tf.Tensor]): the tensors ``input_names`` name (all the placeholders when
            the names were not given).
        outputs (list[tf.Tensor]): the output tensors.
        input_names, output_names (list[str]): the names as the user gave them.
        given (bool): whether ``input_names`` were given (else they are the model's inputs).

    Returns:
        tuple[list[tf.Tensor], list[str]]: the inputs of the signature, in the order given, and
        the names of the model's inputs left out (empty unless ``given`` is False).

    Raises:
        ValueError: an output needs a model input that is not among ``inputs``.
    """
    if not given:
        needed = {op.name for t in outputs for op in needed_placeholders(t, [])}
        kept = [t for t in inputs if t.op.name in needed]
        left_out = [_user_name(name) for t, name in zip(inputs, input_names)
                    if t.op.name not in needed]
        if left_out:
            logger.info(f"{who}: the input(s) {', '.join(left_out)} are left out of the "
                        f"signature: no output ({', '.join(output_names)}) depends on them. Give "
                        "input_names (--input-names) to keep them.")
        return kept, left_out
    fed = {t.op.name for t in inputs}
    for output, name in zip(outputs, output_names):
        missing = [op.name for op in needed_placeholders(output, inputs) if op.name not in fed]
        if missing:
            model_inputs = [p.op.name for p in placeholders]
            raise ValueError(
                f"{who}: the output {name!r} depends on the input {missing[0]!r}, which is not "
                f"among input_names {list(input_names)}. Add {missing[0]!r} to input_names "
                f"(--input-names), or leave input_names out to take every model input the "
                f"outputs need (the model's inputs: {', '.join(model_inputs)}).")
    return list(inputs), []
