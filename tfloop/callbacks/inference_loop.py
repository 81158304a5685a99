"""InferenceRunner: run inferencers over one full pass of validation data at each trigger.

The runners build their predict towers the way ``trainer.get_predictor`` does (one path,
:func:`tfloop.tfutils.predict_tower.build_predict_tower`): under
``TowerContext(is_training=False)``, sharing the training variables, with what the tower adds to
graph collections kept out of training.
"""
import itertools
import time

import tqdm

from tfloop.callbacks.base import Callback
from tfloop.callbacks.inference import Inferencer
from tfloop.compat import tf, tfv1
from tfloop.tfutils.hooked_session import HookedSession
from tfloop.tfutils.predict_tower import build_predict_tower
from tfloop.tfutils.tower import TowerFunc
from tfloop.utils import logger
from tfloop.utils.checks import check_callable, is_int

__all__ = ["InferenceRunnerBase", "InferenceRunner"]

class _PassInterrupted(Exception):
    """Training is stopping (a signal, a callback's request): the pass ends between batches."""


def _as_inference_input(data):
    """The InputSource for one finite pass over ``data`` per trigger."""
    # input/ sits above callbacks/base.py and imports it: loaded here, not with this module,
    # so that loading callbacks/ never needs input/.
    from tfloop.input import dataset as dataset_input
    from tfloop.input import feed as feed_input
    from tfloop.input import queue as queue_input
    from tfloop.input.base import InputSource

    if isinstance(data, dataset_input.DatasetInput):
        if data.repeat:
            raise ValueError(f"InferenceRunner runs exactly one pass over its input, but {data} "
                             "repeats: give DatasetInput(make_dataset, repeat=False), or just "
                             "make_dataset."
                             )
        return data
    if isinstance(data, feed_input.FeedInput):
        return data
    if type(data) is queue_input.QueueInput:
        # tensorpack's InferenceRunner(QueueInput(df)): one pass over df per trigger, read in
        # this thread (the datapoints and their order are the same).
        return feed_input.FeedInput(data.data)
    if isinstance(data, InputSource):
        raise TypeError("InferenceRunner needs an input with an end (a function building a "
                        "tf.data.Dataset, DatasetInput(..., repeat=False), FeedInput, "
                        f"QueueInput or an iterable of datapoints), got {data}.")
    if isinstance(data, tf.data.Dataset) or callable(data):
        return dataset_input.DatasetInput(data, repeat=False)
    try:
        iterator = iter(data)
    except TypeError:
        raise TypeError("InferenceRunner's input must be a function building a tf.data.Dataset, "
                        f"an InputSource, or an iterable of datapoints; got {data!r}.") \
            from None
    if iterator is data:
        raise TypeError(f"InferenceRunner's input {data!r} is a one-shot iterator, but every "
                        "trigger needs a new pass: give a list or another re-iterable object.")
    return feed_input.FeedInput(data)


def _is_dataset_input(source):
    from tfloop.input.dataset import DatasetInput  # see _as_inference_input
    return isinstance(source, DatasetInput)


def _depends_on(tensor, ops):
    seen = set()
    stack = [tensor.op]
    while stack:
        op = stack.pop()
        if op in ops:
            return True
        for dep in itertools.chain((t.op for t in op.inputs), op.control_inputs):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return False


class _InferencerHook:
    """Fetch one inferencer's tensors (and the batch size) with each inference run."""

    def __init__(self, inferencer, batch_size):
        self._inf = inferencer
        self._fetches = (batch_size, list(inferencer.fetch_tensors))

    def before_run(self, ctx):
        self._inf.before_batch()
        return tfv1.train.SessionRunArgs(fetches=self._fetches)

    def after_run(self, ctx, values):
        batch_size, results = values.results
        self._inf.on_fetches(results, int(batch_size))

    def __str__(self):
        return str(self._inf)


def check_inferencers(infs, who):
    if isinstance(infs, Inferencer):
        infs = [infs]
    infs = list(infs)
    for inf in infs:
        if not isinstance(inf, Inferencer):
            raise TypeError(f"{who} needs Inferencer objects (e.g. ScalarStats, "
                            f"ClassificationError), got {inf!r} ({type(inf).__name__}).")
    if not infs:
        raise ValueError(f"{who} needs at least one Inferencer.")
    return infs


def batch_size_of(inputs):
    """Elements in the batch: the leading dimension of the first input (1 for a scalar input)."""
    return tf.reduce_prod(tf.shape(inputs[0])[:1], name="batch_size")


class InferenceRunnerBase(Callback):
    """Base class of the inference runners: the input, the inferencers, the predict tower(s)
    and one pass per trigger; subclasses build the towers (``_build_towers``) and run a pass
    (``_run_pass``, returning the number of batches).

    Args:
        input: the validation data (see :class:`InferenceRunner`).
        infs (Inferencer or list[Inferencer]): what to compute.

    Example:
        >>> class MyRunner(InferenceRunnerBase):
        ...     def _build_towers(self, tower_func): ...
        ...     def _run_pass(self): ...
    """

    def __init__(self, input, infs, tower_name="InferenceTower", tower_func=None):
        self._input = _as_inference_input(input)
        self._reads_dataset = _is_dataset_input(self._input)
        self.infs = check_inferencers(infs, type(self).__name__)
        if not isinstance(tower_name, str) or not tower_name or "/" in tower_name:
            raise ValueError(f"tower_name must be a non-empty name without '/', got "
                             f"{tower_name!r}.")
        self._tower_name = tower_name
        self._tower_func = check_callable(tower_func, "tower_func", allow_none=True)

    def _get_tower_func(self):
        trainer_func = self.trainer.tower_func
        if isinstance(self._tower_func, TowerFunc):
            return self._tower_func
        if trainer_func is None:
            raise TypeError(f"{self} needs the model's tower function: use a tower trainer (e.g. "
                            "SimpleTrainer) or give tower_func= with a TowerFunc.")
        if self._tower_func is None:
            return trainer_func
        return TowerFunc(self._tower_func, trainer_func.input_signature)

    def _check_tower_names_free(self, tower_func, names):
        for name in names:
            taken = any(h.name == name for h in tower_func.towers) or any(
                op.name.startswith(name + "/") for op in self.graph.get_operations())
            if taken:
                raise ValueError(f"{self}: the graph already has a tower {name!r} (another "
                                 "InferenceRunner?); give each runner its own tower_name=.")

    def _build_tower(self, tower_func, inputs, tower_name, device):
        """One predict tower beside training, the same way ``trainer.get_predictor`` builds it."""
        tower = build_predict_tower(tower_func, inputs, tower_name, device, beside_training=True)
        training_inputs = {t.op for h in tower_func.towers.training() for t in h.inputs}
        self._training_inputs = training_inputs
        return tower

    def _check_fetches(self, inf, tensors, tower):
        for tensor in tensors:
            if not tensor.name.startswith(tower.ns_name + "/") and \
                    _depends_on(tensor, self._training_inputs):
                raise ValueError(f"{inf} fetches {tensor.name}, which is not in the inference "
                                 f"tower {tower.name!r} but in training (it depends on the "
                                 "training input).")

    def _setup_graph(self):
        tower_func = self._get_tower_func()
        if self._input.setup_done():
            raise ValueError(f"{self} needs an input source of its own, but {self._input} is "
                             "already set up (is it the training data too?).")
        self._build_towers(tower_func)

    def _build_towers(self, tower_func):
        raise TypeError(f"{type(self).__name__} must define _build_towers(tower_func).")

    def _run_pass(self):
        raise TypeError(f"{type(self).__name__} must define _run_pass().")

    def _progress_bar(self):
        return tqdm.tqdm(total=self._input.size(), desc=str(self), disable=None, leave=False,
                         dynamic_ncols=True)

    def _check_stop(self):
        """Raise ``_PassInterrupted`` when training is stopping: called before each batch, so
        that SIGTERM during a long pass stops it within one batch."""
        if self.trainer.stop_requested:
            raise _PassInterrupted()

    def _trigger(self):
        for inf in self.infs:
            inf.before_inference()
        start = time.perf_counter()
        try:
            batches = self._run_pass()
        except _PassInterrupted:
            seconds = time.perf_counter() - start
            logger.warning(f"{self}: the pass was interrupted after {seconds:.2f} s because "
                           f"training is stopping ({self.trainer.stop_reason}); its statistics "
                           "are left out.")
            return
        if batches == 0:
            raise ValueError(f"{self}: the input {self._input} gave no data in this pass.")
        stats = {}
        for inf in self.infs:
            for name, value in inf.after_inference().items():
                if name in stats:
                    raise ValueError(f"{self}: two inferencers put a stat named {name!r}; give "
                                     "them distinct names.")
                stats[name] = value
        logger.detail(f"{self}: {batches} batches in {time.perf_counter() - start:.2f} s.")
        for name, value in stats.items():
            self.trainer.monitors.put_scalar(name, value)

    def __str__(self):
        return f"{type(self).__name__}({self._tower_name!r})"

    __repr__ = __str__


class InferenceRunner(InferenceRunnerBase):
    """Run inferencers over one full pass of validation data at each trigger (every epoch by
    default), and put their statistics to the monitors. When training is asked to stop during
    a pass (SIGTERM, a callback's ``request_stop``), the pass ends before its next batch and
    puts no statistics.

    In ``setup_graph`` it builds a predict tower with the model's tower function under
    ``TowerContext(tower_name, is_training=False)`` — the path ``trainer.get_predictor`` takes:
    the tower shares the training variables (a tower that would create variables is an error),
    runs in inference mode (dropout off ...), and what it adds to graph collections (summaries,
    update ops) stays out of training. Each trigger runs the input once, to its end, with a
    session whose runs carry every inferencer's fetches; training steps fetch nothing more. A
    progress bar is shown on a terminal when the input's size is known. Schedule it with
    ``PeriodicTrigger`` for other periods.

    Args:
        input: the validation data: a ``tf.data.Dataset`` (built eagerly, or by a function,
            which is called in the training graph), ``DatasetInput(dataset, repeat=False)``, a
            ``FeedInput``, or a re-iterable of datapoints (e.g. a list of batches), each in the
            order of the model's ``inputs()``.
        infs (Inferencer or list[Inferencer]): what to compute.
        tower_name (str): the name scope of the predict tower; unique per runner.
        tower_func (callable): the tower function, taking the input tensors; the trainer's by
            default.
        device (int or str): GPU index for the tower (ignored without such a GPU; negative: CPU),
            a device string, or None to leave placement to TensorFlow.

    Example:
        >>> InferenceRunner(make_val_dataset, [
        ...     ClassificationError("wrong-top1", "val-error-top1"),
        ...     ClassificationError("wrong-top5", "val-error-top5")])
    """

    def __init__(self, input, infs, tower_name="InferenceTower", tower_func=None, device=0):
        super().__init__(input, infs, tower_name, tower_func)
        if not (device is None or isinstance(device, str) or is_int(device)):
            raise TypeError(f"device must be a GPU index, a device string or None, got "
                            f"{device!r}.")
        self._device = device
        self._hooked_sess = None

    def _build_towers(self, tower_func):
        self._check_tower_names_free(tower_func, [self._tower_name])
        self._input.setup(tower_func.input_signature)
        inputs = self._input.get_input_tensors()
        tower = self._build_tower(tower_func, inputs, self._tower_name, self._device)
        batch_size = batch_size_of(inputs)
        for inf in self.infs:
            inf.setup_graph(tower)
            self._check_fetches(inf, inf.fetch_tensors, tower)
        self._hooks = [_InferencerHook(inf, batch_size) for inf in self.infs]
        logger.detail(f"{self}: inference tower {self._tower_name!r} built for "
                    f"{', '.join(str(inf) for inf in self.infs)}.")

    def _before_train(self):
        self._hooked_sess = HookedSession(self.trainer.sess, self._hooks)

    def _feeds(self):
        if self._reads_dataset:
            self._input.initialize(self.trainer.sess)
            size = self._input.size()   # when known, no run is spent finding the end of the data
            return itertools.repeat(None) if size is None else itertools.repeat(None, size)
        return self._input.iter_feeds()

    def _run_pass(self):
        batches = 0
        ends_out_of_range = self._reads_dataset
        with self._progress_bar() as bar:
            for feed in self._feeds():
                self._check_stop()
                try:
                    self._hooked_sess.run(None, feed_dict=feed)
                except tf.errors.OutOfRangeError:
                    if ends_out_of_range:
                        break
                    raise
                batches += 1
                bar.update()
        return batches
