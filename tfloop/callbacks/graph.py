"""Callbacks that run graph ops: on a schedule, or along with every training step. tensorpack's
module of that name also holds the tensor dumps and the numeric checks, re-exported here."""
from tfloop.callbacks.base import Callback
from tfloop.callbacks.dump import DumpParamAsImage, DumpTensor, DumpTensorAsImage, DumpTensors
from tfloop.callbacks.nan import CheckNumerics
from tfloop.callbacks.schedule import Schedule
from tfloop.compat import tf, tfv1
from tfloop.utils import logger

__all__ = ["RunOp", "RunUpdateOps", "ProcessTensors", "CheckNumerics", "DumpTensors",
           "DumpTensor", "DumpTensorAsImage", "DumpParamAsImage"]


class RunOp(Callback):
    """Run an op before training, on each trigger, and/or along with every step.

    Args:
        op (callable or tf.Operation or str): a function that creates the op (called in
            ``setup_graph``), an op, or an op name.
        run_before (bool): run it once in ``before_train``.
        run_as_trigger (bool): run it on each ``trigger()`` (every epoch by default).
        run_step (bool): run it along with every training step (no extra session run).
        verbose (bool): log each time it runs outside the step.

    Example:
        >>> RunOp(lambda: tf.compat.v1.assign(ema_decay, 0.99), run_before=True,
        ...       run_as_trigger=False)
    """

    _chief_only = False

    def __init__(self, op, run_before=True, run_as_trigger=True, run_step=False, verbose=False):
        self.setup_func = op if callable(op) and not isinstance(op, (tf.Operation, tf.Tensor)) \
            else None
        self._op_given = op
        self.run_before = run_before
        self.run_as_trigger = run_as_trigger
        self.run_step = run_step
        self.when = Schedule(fetches=bool(run_step))
        self.verbose = verbose

    def _setup_graph(self):
        if self.setup_func is not None:
            self._op = self.setup_func()
        elif isinstance(self._op_given, str):
            self._op = self.get_tensors_maybe_in_tower([self._op_given])[0]
        else:
            self._op = self._op_given
        if isinstance(self._op, tf.Tensor):
            self._op = self._op.op
        if not isinstance(self._op, tf.Operation):
            raise TypeError(f"RunOp needs an op; the setup function returned {self._op!r}.")
        self._run_args = tfv1.train.SessionRunArgs(fetches=self._op)
        # The setup function may turn run_step off (RunUpdateOps on an empty collection).
        self.when = self.when.replace(fetches=bool(self.run_step))

    def _run(self):
        if self.verbose:
            logger.info(f"Running op {self._op.name} ...")
        self.trainer.sess.run(self._op)

    def _before_train(self):
        if self.run_before:
            self._run()

    def _trigger(self):
        if self.run_as_trigger:
            self._run()

    def _before_run(self, ctx):
        if self.run_step:
            return self._run_args
        return None


class RunUpdateOps(RunOp):
    """Run the ops in a collection (``UPDATE_OPS`` by default, e.g. batch-norm statistics) along
    with every training step. Does nothing when the collection is empty.

    Example:
        >>> RunUpdateOps()      # in the default callbacks already
    """

    def __init__(self, collection=None):
        self._collection = collection or tfv1.GraphKeys.UPDATE_OPS
        super().__init__(self._make_op, run_before=False, run_as_trigger=False, run_step=True)

    @property
    def collection(self):
        """The collection of ops this callback runs."""
        return self._collection

    def _make_op(self):
        ops = tfv1.get_collection(self._collection)
        self.run_step = bool(ops)
        if ops:
            logger.info(f"Running {len(ops)} op(s) of collection {self._collection} with every "
                        "step.")
        return tf.group(*ops, name="update_ops")


class ProcessTensors(Callback):
    """Fetch tensors along with every step and pass their values to a function.

    Args:
        names (list[str]): tensor names (in the graph or the training tower).
        fn (callable): ``fn(*values)``; called after each step with that step's values.

    Example:
        >>> ProcessTensors(["cost"], lambda cost: print("cost", cost))
    """

    def __init__(self, names, fn):
        if isinstance(names, str):
            raise TypeError(f"ProcessTensors takes a list of names, got the string {names!r}.")
        self._names = list(names)
        self._fn = fn

    def _setup_graph(self):
        self._fetches = tfv1.train.SessionRunArgs(
            fetches=self.get_tensors_maybe_in_tower(self._names))

    def _before_run(self, ctx):
        return self._fetches

    def _after_run(self, ctx, values):
        self._fn(*values.results)
