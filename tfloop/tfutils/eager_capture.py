"""A tensor or variable made before training (at module level, before
``launch_train_with_config``) and used in a graph that tfloop builds: TensorFlow's "Attempting to
capture an EagerTensor without building a function" or "must be from the same graph", explained.

tfloop builds each trainer's and predictor's graph in a ``tf.Graph`` of its own and never turns
eager execution off for the process: what a script makes before training is an eager object (or,
with eager execution turned off, belongs to TensorFlow's default graph), which the trainer's graph
cannot hold. tensorpack 0.11 on TensorFlow 2 fails on the eager object too.
"""
import contextlib

__all__ = ["explain_eager_capture"]

# TensorFlow's messages for a tensor of another graph, or an eager one, used in a graph.
_TF_MESSAGES = ("Attempting to capture an EagerTensor without building a function",
                "must be from the same graph as")


@contextlib.contextmanager
def explain_eager_capture(what):
    """Turn TensorFlow's error for a tensor made outside the graph being built into one saying
    where it came from and what to change.

    Args:
        what (str): what builds the graph, e.g. ``"The model (build_graph, optimizer())"``.

    Raises:
        RuntimeError: ``what`` used a tensor or variable made outside the graph.

    Example:
        >>> with explain_eager_capture("The model (build_graph, optimizer())"):
        ...     train_op = build_training_graph()
    """
    try:
        yield
    except (RuntimeError, ValueError) as e:
        if not any(message in str(e) for message in _TF_MESSAGES):
            raise
        said = str(e).strip().rstrip(".")
        raise RuntimeError(
            f"{what} used a tensor or variable made outside tfloop's graph, e.g. at module level "
            f"or before launch_train_with_config (TensorFlow: {said}). tfloop builds the graph "
            "in a tf.Graph of its own, so it cannot hold it. Make it while the graph is built: a "
            "variable in build_graph() or in optimizer() (e.g. tf.compat.v1.get_variable("
            "'learning_rate', initializer=0.1, trainable=False)), a tensor in build_graph() or "
            "in a callback's _setup_graph(). See docs/migrating.md, 'Variables made before "
            "training'.") from None
