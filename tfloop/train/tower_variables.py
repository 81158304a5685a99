"""Where data-parallel towers keep their variables: each tower's own copies (named
``tower<i>/...``, matched to tower 0's and kept out of checkpoints) or one set of variables placed
over parameter devices (:class:`ParameterPlacer`). The multi-device trainers (``multigpu.py``,
``async_multigpu.py``) and the cluster trainers (``distributed.py``) build on both."""
import re

from tfloop.compat import tf, tfv1

__all__ = ["COPY_PREFIX", "ParameterPlacer", "localize_copies", "match_tower_copies",
           "tower_of_copy"]

# A variable copy of tower i > 0.
COPY_PREFIX = re.compile(r"^tower([1-9][0-9]*)/")
# Ops that create variables (and tables): these go to the parameter device.
_VARIABLE_OPS = frozenset(["Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable",
                           "MutableHashTable", "MutableHashTableV2", "MutableHashTableOfTensors",
                           "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                           "MutableDenseHashTableV2"])


def match_tower_copies(tower_variables):
    """Align each tower's variables with tower 0's by name (``tower<i>/`` prefix removed).

    Returns:
        list[list[tf.Variable]]: ``result[i][j]`` is tower ``i``'s copy of tower 0's variable ``j``.
    """
    first = tower_variables[0]
    result = [list(first)]
    for i, variables in enumerate(tower_variables[1:], start=1):
        prefix = f"tower{i}/"
        by_name = {v.op.name[len(prefix):]: v for v in variables if v.op.name.startswith(prefix)}
        names = {v.op.name for v in first}
        extra = sorted(v.op.name for v in variables if not v.op.name.startswith(prefix) or
                       v.op.name[len(prefix):] not in names)
        missing = [v.op.name for v in first if v.op.name not in by_name]
        if missing or extra:
            raise ValueError(
                f"Tower {i} did not create its own copy of every variable of tower 0 (missing: "
                f"{missing or 'none'}; unexpected: {extra or 'none'}). Create variables with "
                "tf.compat.v1.get_variable inside the tower function, and the same ones in every "
                "call.")
        result.append([by_name[v.op.name] for v in first])
    return result


def localize_copies(graph, created_before):
    """Move every global variable named ``tower<i>/...`` (i > 0) that is not in ``created_before``
    to ``LOCAL_VARIABLES`` (out of checkpoints and of the trainable/model collections).

    Returns:
        list[tuple[tf.Variable, list[tf.Variable]]]: (tower 0's global variable, its copies).
    """
    keys = tfv1.GraphKeys
    global_vars = graph.get_collection_ref(keys.GLOBAL_VARIABLES)
    earlier = {id(v) for v in created_before}
    copies = [v for v in global_vars if COPY_PREFIX.match(v.op.name) and id(v) not in earlier]
    moved = {id(v) for v in copies}
    for key in (keys.GLOBAL_VARIABLES, keys.TRAINABLE_VARIABLES, keys.MODEL_VARIABLES):
        ref = graph.get_collection_ref(key)
        ref[:] = [v for v in ref if id(v) not in moved]
    sources = {v.op.name: v for v in graph.get_collection(keys.GLOBAL_VARIABLES)}
    pairs = {}
    for copy in copies:
        graph.add_to_collection(keys.LOCAL_VARIABLES, copy)
        source = sources.get(COPY_PREFIX.sub("", copy.op.name, count=1))
        if source is None:
            raise ValueError(f"The tower variable {copy.op.name} has no counterpart in tower 0.")
        pairs.setdefault(source.op.name, (source, []))[1].append(copy)
    return [pairs[name] for name in sorted(pairs)]


def tower_of_copy(variable):
    """The tower index ``i`` of a variable copy named ``tower<i>/...`` (i > 0), else None."""
    match = COPY_PREFIX.match(variable.op.name)
    return int(match.group(1)) if match else None


class ParameterPlacer:
    """Puts each new variable on the parameter device with the fewest bytes so far."""

    def __init__(self, devices):
        self.devices = list(devices)
        self.loads = [0] * len(devices)
        self._chosen = {}

    def device_for(self, op):
        if op.name not in self._chosen:  # nested device functions see an op more than once
            shape = tf.TensorShape(op.get_attr("shape")) if "shape" in op.node_def.attr else None
            size = shape.num_elements() if shape is not None and shape.is_fully_defined() else 1
            size *= tf.as_dtype(op.get_attr("dtype")).size if "dtype" in op.node_def.attr else 1
            index = self.loads.index(min(self.loads))
            self.loads[index] += max(size, 1)
            self._chosen[op.name] = self.devices[index]
        return self._chosen[op.name]

    def device_function(self, worker_device):
        worker = tf.DeviceSpec.from_string(worker_device)

        def place(op):
            if op.type in _VARIABLE_OPS:
                return self.device_for(op)
            return worker.make_merged_spec(tf.DeviceSpec.from_string(op.device or "")).to_string()
        return place
