"""StagingInput: copy the next step's inputs to the device while the current step runs."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource
from tfloop.input.queue import QueueInput
from tfloop.utils.checks import check_int

__all__ = ["StagingInput"]

_FEED_OP_TYPES = ("Placeholder", "PlaceholderWithDefault")


class _StageNext(Callback):
    """Fills the staging areas before training; every step then stages the next inputs."""

    _chief_only = False

    def __init__(self, source):
        self._source = source

    def _before_train(self):
        source = self._source
        take_feed = getattr(source.input, "take_feed", None)
        for _ in range(source.nr_stage):
            feed = take_feed() if take_feed is not None else None
            self.trainer.sess.run(source.stage_ops, feed_dict=feed or None)

    def _before_run(self, ctx):
        return self._source.stage_ops

    def __str__(self):
        return f"StageNext[{self._source}]"


class StagingInput(InputSource):
    """Wrap an input source so that each step's inputs were put into a staging area on the
    device during the step before: the host-to-device copy overlaps the previous step.

    Each training step runs, in its one session call, the ops that take the inputs of this step
    from the staging area and the ops that put the inputs of a later step into it; before
    training the area is filled with ``nr_stage`` steps' inputs. Datapoints keep their order. On
    a CPU-only machine the staging area holds tensors already in host memory, so it changes
    nothing but costs next to nothing either.

    The wrapped source is a :class:`QueueInput` (its fed datapoints are staged) or one that makes
    its tensors inside the graph (:class:`DatasetInput`, ...); not a :class:`FeedInput`.
    ``steps_per_run`` > 1 is not supported. Resuming is exact with a :class:`QueueInput` (staged
    datapoints count as not trained); a ``DatasetInput``'s position is not saved through it.

    Args:
        input (InputSource): the source to wrap.
        nr_stage (int): how many steps' inputs are staged ahead.
        device (str): the device of the staging areas; by default the device where each tower
            asks for its inputs.

    Example:
        >>> TrainConfig(model=MyModel(), data=StagingInput(QueueInput(df)), max_epoch=10)
    """

    def __init__(self, input, nr_stage=1, device=None):
        if not isinstance(input, InputSource):
            raise TypeError(f"StagingInput wraps an InputSource (QueueInput, DatasetInput, ...), "
                            f"got {input!r}.")
        self.input = input
        self.nr_stage = check_int(nr_stage, "StagingInput's nr_stage", at_least=1)
        self.device = device
        self.stage_ops = []
        self._input_callbacks = []

    def setup_state(self):
        """The wrapped :class:`QueueInput`'s answer (its feeder counts staged datapoints as not
        trained); any other source's position is ahead by the staged steps: not saved."""
        if isinstance(self.input, QueueInput):
            return self.input.setup_state()
        return super().setup_state()

    def _setup(self, input_signature):
        self._graph = tfv1.get_default_graph()
        self._input_callbacks = self.input.setup(input_signature,
                                                 batches_per_step=self.batches_per_step)
        self._pass_end_flags = []

    def _get_input_tensors(self):
        if tfv1.get_default_graph() is not self._graph:
            raise ValueError("StagingInput cannot be used with steps_per_run > 1: each session "
                             "call stages the inputs of one step only. Use steps_per_run=1, or "
                             "the wrapped input source alone.")
        # The wrapped source's tensors get scoped names: the staged ones take the inputs' names.
        with tf.name_scope("StagingInput"):
            inputs = self.input.get_input_tensors()
        # Data of unknown length: a batch's pass-end flag is staged with it.
        flag = self.input.pass_end_flags()[-1:] if self.input.marks_pass_ends() else []
        fed = [t.name for t in inputs if t.op.type in _FEED_OP_TYPES]
        if fed and not hasattr(self.input, "take_feed"):
            raise ValueError(f"StagingInput needs a QueueInput or an input source that makes its "
                             f"tensors in the graph (DatasetInput, ...); {self.input} feeds "
                             f"{', '.join(fed)}. Use QueueInput(data) instead of FeedInput(data).")
        graph = tfv1.get_default_graph()
        with tf.device(self.device), tf.name_scope("StagingInput"):
            area = graph.unique_name("StagingInput/area", mark_as_used=True)
            dtypes = [t.dtype for t in inputs + flag]
            self.stage_ops.append(tf.raw_ops.Stage(values=inputs + flag, shared_name=area,
                                                   name="stage"))
            staged = tf.raw_ops.Unstage(dtypes=dtypes, shared_name=area, name="unstage")
        if flag:
            self._pass_end_flags.append(staged.pop())
        out = []
        for tensor, original, spec in zip(staged, inputs, self.input_signature):
            tensor.set_shape(original.shape)
            out.append(tf.identity(tensor, name=spec.name) if spec.name else tensor)
        return out

    def _get_callbacks(self):
        return list(self._input_callbacks) + [_StageNext(self)]

    def size(self):
        return self.input.size()

    def is_empty(self):
        return self.input.is_empty()

    def is_infinite(self):
        return self.input.is_infinite()

    def describe_pipeline(self):
        return self.input.describe_pipeline()

    def marks_pass_ends(self):
        return self.input.marks_pass_ends()

    def pass_end_flags(self):
        return list(self._pass_end_flags)

    def skip_to_next_pass(self, sess):
        raise ValueError(f"{self} cannot drop the rest of a pass: the batches it staged are "
                         "ahead of the step. With shards of different lengths in a cluster, give "
                         "steps_per_epoch, or use the wrapped input without StagingInput.")

    def __str__(self):
        return f"StagingInput({self.input})"
