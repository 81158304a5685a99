"""InferenceRunner: run inferencers over one full pass of validation data at each trigger."""
import contextlib
import itertools
import time

import tqdm

from tfloop.callbacks.base import Callback
from tfloop.callbacks.inference import Inferencer
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource
from tfloop.input.dataset import DatasetInput
from tfloop.input.feed import FeedInput
from tfloop.tfutils.hooked_session import HookedSession
from tfloop.tfutils.tower import TowerContext, TowerFunc
from tfloop.utils import logger

__all__ = ["InferenceRunner"]

_EAGER_DATASET_ERROR = (
    "InferenceRunner got a tf.data.Dataset built outside tfloop's training graph (e.g. eagerly). "
    "Pass the function that builds it instead: InferenceRunner(make_dataset, [...]).")

# What an inference tower may add to graph collections: its variables (none are expected) and what
# session creation and checkpoints need. Everything else it adds (summaries, update ops, moving
# averages, losses) is dropped, so that no training-time callback ever fetches an inference tensor.
_KEPT_COLLECTIONS = frozenset([
    tfv1.GraphKeys.GLOBAL_VARIABLES, tfv1.GraphKeys.LOCAL_VARIABLES,
    tfv1.GraphKeys.TRAINABLE_VARIABLES, tfv1.GraphKeys.MODEL_VARIABLES,
    tfv1.GraphKeys.METRIC_VARIABLES, tfv1.GraphKeys.TABLE_INITIALIZERS,
    tfv1.GraphKeys.RESOURCES, tfv1.GraphKeys.LOCAL_RESOURCES, tfv1.GraphKeys.SAVEABLE_OBJECTS,
    tfv1.GraphKeys.ASSET_FILEPATHS, tfv1.GraphKeys.COND_CONTEXT, tfv1.GraphKeys.WHILE_CONTEXT,
])


def _built_eagerly(dataset):
    variant = getattr(dataset, "_variant_tensor", None)
    try:
        variant.graph
    except AttributeError:
        return True
    return False


def _as_inference_input(data):
    """The InputSource for one finite pass over ``data`` per trigger."""
    if isinstance(data, DatasetInput):
        if data.repeat:
            raise ValueError("InferenceRunner runs exactly one pass over its input, but {} "
                             "repeats: give DatasetInput(make_dataset, repeat=False), or just "
                             "make_dataset."
                             .format(data))
        return data
    if isinstance(data, FeedInput):
        return data
    if isinstance(data, InputSource):
        raise TypeError("InferenceRunner needs an input with an end (a function building a "
                        "tf.data.Dataset, DatasetInput(..., repeat=False), FeedInput or an "
                        "iterable of datapoints), got {}.".format(data))
    if isinstance(data, tf.data.Dataset):
        if _built_eagerly(data):
            raise ValueError(_EAGER_DATASET_ERROR)
        return DatasetInput(data, repeat=False)
    if callable(data):
        return DatasetInput(data, repeat=False)
    try:
        iterator = iter(data)
    except TypeError:
        raise TypeError("InferenceRunner's input must be a function building a tf.data.Dataset, "
                        "an InputSource, or an iterable of datapoints; got {!r}.".format(data)) \
            from None
    if iterator is data:
        raise TypeError("InferenceRunner's input {!r} is a one-shot iterator, but every trigger "
                        "needs a new pass: give a list or another re-iterable object.".format(data))
    return FeedInput(data)


def _device_scope(device):
    if device is None:
        return contextlib.nullcontext()
    if isinstance(device, str):
        return tf.device(device)
    if device < 0:
        return tf.device("/cpu:0")
    if device < len(tf.config.list_physical_devices("GPU")):
        return tf.device("/gpu:{}".format(device))
    return contextlib.nullcontext()


@contextlib.contextmanager
def _training_collections_guarded(graph):
    before = {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}
    yield
    dropped = []
    for key in graph.get_all_collection_keys():
        old = before.get(key, [])
        if key not in _KEPT_COLLECTIONS and len(graph.get_collection(key)) != len(old):
            graph.get_collection_ref(key)[:] = old
            dropped.append(str(key))
    if dropped:
        logger.info("The inference tower's additions to collections {} are left out of training."
                    .format(", ".join(sorted(dropped))))


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
        return tfv1.train.SessionRunArgs(fetches=self._fetches)

    def after_run(self, ctx, values):
        batch_size, results = values.results
        self._inf.on_fetches(results, int(batch_size))

    def __str__(self):
        return str(self._inf)


class InferenceRunner(Callback):
    """Run inferencers over one full pass of validation data at each trigger (every epoch by
    default), and put their statistics to the monitors.

    In ``setup_graph`` it builds a predict tower with the model's tower function under
    ``TowerContext(tower_name, is_training=False)``: the tower shares the training variables (a
    tower that would create variables is an error), runs in inference mode (dropout off ...), and
    what it adds to graph collections (summaries, update ops) stays out of training. Each trigger
    runs the input once, to its end, with a session whose runs carry every inferencer's fetches;
    training steps fetch nothing more. A progress bar is shown on a terminal when the input's size
    is known. Schedule it with ``PeriodicTrigger`` for other periods.

    Args:
        input: the validation data: a function that builds a ``tf.data.Dataset`` (called in the
            training graph; a dataset built eagerly cannot be used), ``DatasetInput(fn,
            repeat=False)``, a ``FeedInput``, or a re-iterable of datapoints (e.g. a list of
            batches), each in the order of the model's ``inputs()``.
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
        self._input = _as_inference_input(input)
        if isinstance(infs, Inferencer):
            infs = [infs]
        infs = list(infs)
        for inf in infs:
            if not isinstance(inf, Inferencer):
                raise TypeError("InferenceRunner needs Inferencer objects (e.g. ScalarStats, "
                                "ClassificationError), got {!r} ({}).".format(
                                    inf, type(inf).__name__))
        if not infs:
            raise ValueError("InferenceRunner needs at least one Inferencer.")
        if not isinstance(tower_name, str) or not tower_name or "/" in tower_name:
            raise ValueError("tower_name must be a non-empty name without '/', got {!r}.".format(
                tower_name))
        if tower_func is not None and not callable(tower_func):
            raise TypeError("tower_func must be callable, got {!r}.".format(tower_func))
        if not (device is None or isinstance(device, str) or
                (isinstance(device, int) and not isinstance(device, bool))):
            raise TypeError("device must be a GPU index, a device string or None, got {!r}.".format(
                device))
        self.infs = infs
        self._tower_name = tower_name
        self._tower_func = tower_func
        self._device = device
        self._hooked_sess = None

    def _get_tower_func(self):
        trainer_func = getattr(self.trainer, "tower_func", None)
        if isinstance(self._tower_func, TowerFunc):
            return self._tower_func
        if trainer_func is None:
            raise TypeError("{} needs the model's tower function: use a tower trainer (e.g. "
                            "SimpleTrainer) or give tower_func= with a TowerFunc.".format(self))
        if self._tower_func is None:
            return trainer_func
        return TowerFunc(self._tower_func, trainer_func.input_signature)

    def _check_tower_name_free(self, tower_func):
        prefix = self._tower_name + "/"
        taken = any(h.name == self._tower_name for h in tower_func.towers) or any(
            op.name.startswith(prefix) for op in self.graph.get_operations())
        if taken:
            raise ValueError("{}: the graph already has a tower {!r} (another InferenceRunner?); "
                             "give each runner its own tower_name=.".format(self, self._tower_name))

    def _setup_graph(self):
        tower_func = self._get_tower_func()
        self._check_tower_name_free(tower_func)
        if self._input.setup_done():
            raise ValueError("{} needs an input source of its own, but {} is already set up (is it "
                             "the training data too?).".format(self, self._input))
        self._input.setup(tower_func.input_signature)
        inputs = self._input.get_input_tensors()
        variables_before = set(self.graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES))
        with _training_collections_guarded(self.graph), _device_scope(self._device), \
                TowerContext(self._tower_name, is_training=False):
            tower_func(*inputs)
        new_variables = [v.name for v in self.graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)
                         if v not in variables_before]
        if new_variables:
            raise ValueError("Building the inference tower {!r} created new variables {}: create "
                             "variables with tf.compat.v1.get_variable so that towers share them."
                             .format(self._tower_name, new_variables))
        tower = tower_func.towers[-1]
        # Elements in the batch: the leading dimension of the first input (1 for a scalar input).
        batch_size = tf.reduce_prod(tf.shape(inputs[0])[:1], name="batch_size")
        training_inputs = {t.op for h in tower_func.towers.training() for t in h.inputs}
        for inf in self.infs:
            inf.setup_graph(tower)
            for tensor in inf.fetch_tensors:
                if not tensor.name.startswith(tower.ns_name + "/") and \
                        _depends_on(tensor, training_inputs):
                    raise ValueError("{} fetches {}, which is not in the inference tower {!r} but "
                                     "in training (it depends on the training input).".format(
                                         inf, tensor.name, self._tower_name))
        self._hooks = [_InferencerHook(inf, batch_size) for inf in self.infs]
        logger.info("{}: inference tower {!r} built for {}.".format(
            self, self._tower_name, ", ".join(str(inf) for inf in self.infs)))

    def _before_train(self):
        self._hooked_sess = HookedSession(self.trainer.sess, self._hooks)

    def _feeds(self):
        if isinstance(self._input, DatasetInput):
            self.trainer.sess.run(self._input.iterator.initializer)
            return itertools.repeat(None)
        return self._input.iter_feeds()

    def _run_pass(self):
        batches = 0
        ends_out_of_range = isinstance(self._input, DatasetInput)
        with tqdm.tqdm(total=self._input.size(), desc=str(self), disable=None, leave=False,
                       dynamic_ncols=True) as bar:
            for feed in self._feeds():
                try:
                    self._hooked_sess.run(None, feed_dict=feed)
                except tf.errors.OutOfRangeError:
                    if ends_out_of_range:
                        break
                    raise
                batches += 1
                bar.update()
        return batches

    def _trigger(self):
        for inf in self.infs:
            inf.before_inference()
        start = time.perf_counter()
        batches = self._run_pass()
        if batches == 0:
            raise ValueError("{}: the input {} gave no data in this pass.".format(
                self, self._input))
        stats = {}
        for inf in self.infs:
            for name, value in inf.after_inference().items():
                if name in stats:
                    raise ValueError("{}: two inferencers put a stat named {!r}; give them "
                                     "distinct names.".format(self, name))
                stats[name] = value
        logger.info("{}: {} batches in {:.2f} s.".format(self, batches,
                                                          time.perf_counter() - start))
        for name, value in stats.items():
            self.trainer.monitors.put_scalar(name, value)

    def __str__(self):
        return "InferenceRunner({!r})".format(self._tower_name)

    __repr__ = __str__
