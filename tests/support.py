"""Shared test helpers: a tiny model, its data, a callback that records every hook call, and
timeouts scaled for a loaded machine (``timeout_support``)."""
import os
import time

import numpy as np
from timeout_support import TIMEOUT_SCALE, scaled_timeout  # noqa: F401 (the helpers' home)

import tfloop
from tfloop import Callback, ModelDesc
from tfloop.compat import tf, tfv1

RNG_SEED = 0
TRUE_W = np.array([[1.0], [-2.0], [0.5]], dtype=np.float32)


def make_regression_data(n=24, seed=RNG_SEED):
    """Inputs ``x`` (n, 3) and targets ``y = x @ TRUE_W`` (n,), float32."""
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 3).astype(np.float32)
    y = (x @ TRUE_W)[:, 0]
    return x, y


def batches(x, y, batch_size):
    return [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, len(x), batch_size)]


def dataset_fn(x, y, batch_size):
    """A function that builds the same batches as :func:`batches` as a tf.data pipeline."""
    return lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)


def expected_ema(values, decay):
    """Bias-corrected exponential moving average after each value."""
    biased, averages = 0.0, []
    for t, v in enumerate(values, start=1):
        biased = decay * biased + (1 - decay) * v
        averages.append(biased / (1 - decay ** t))
    return averages


class LinearModel(ModelDesc):
    """y ~ x @ w, mean squared error, plain SGD: deterministic and fast."""

    def __init__(self, lr=0.1):
        self.lr = lr

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w = tfv1.get_variable("w", [3, 1], initializer=tfv1.zeros_initializer())
        pred = tf.squeeze(tf.matmul(x, w), 1, name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(self.lr)


class PredictLinearModel(ModelDesc):
    """For predictors: ``pred = x @ w`` and ``err = pred - y`` (w from ``session_init``)."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w = tfv1.get_variable("w", [3, 1])
        pred = tf.squeeze(tf.matmul(x, w), 1, name="pred")
        tf.identity(pred - y, name="err")


class LRModel(LinearModel):
    """LinearModel whose optimizer reads a ``learning_rate`` variable (``lr`` at start), created
    in the variable scope ``scope``."""

    def __init__(self, lr=0.1, scope=""):
        super().__init__(lr)
        self.scope = scope

    def optimizer(self):
        with tfv1.variable_scope(self.scope):
            lr = tfv1.get_variable("learning_rate", initializer=self.lr, trainable=False)
        return tfv1.train.GradientDescentOptimizer(lr)


class LRRecorder(Callback):
    """The learning rate each step trained with (``lrs``), fetched along with the step."""

    def __init__(self, name="learning_rate:0"):
        self.name = name
        self.lrs = []
        self._epochs = []

    def _setup_graph(self):
        self.var = [v for v in tfv1.global_variables() if v.name == self.name][0]

    def _before_run(self, ctx):
        return [self.var]

    def _after_run(self, ctx, values):
        self.lrs.append(float(values.results[0]))
        self._epochs.append(self.epoch_num)

    def per_epoch(self):
        """The learning rate of each epoch, rounded to 6 digits; it must not change within one."""
        by_epoch = {}
        for epoch, lr in zip(self._epochs, self.lrs):
            by_epoch.setdefault(epoch, set()).add(round(lr, 6))
        assert all(len(lrs) == 1 for lrs in by_epoch.values()), by_epoch
        return [lrs.pop() for lrs in by_epoch.values()]


class StepValues(Callback):
    """Fetch tensor ``name`` with every step; ``values`` holds each step's value, passed through
    ``convert`` when given (e.g. ``StepValues("cost", float)``)."""

    _chief_only = False

    def __init__(self, name, convert=None):
        self.name = name
        self.convert = convert
        self.values = []

    def _setup_graph(self):
        self.tensor = self.get_tensors_maybe_in_tower([self.name])[0]

    def _before_run(self, ctx):
        return self.tensor

    def _after_run(self, ctx, values):
        self.values.append(values.results if self.convert is None else self.convert(values.results))


class RecordingCallback(Callback):
    """Records every hook call as ``(name, hook, epoch, global_step, local_step, extra)`` into a
    shared list, so tests can compare the exact sequence of calls of several callbacks."""

    _chief_only = False

    def __init__(self, name, log, fetches=None, feed=None):
        self.name = name
        self.log = log
        self._fetch_names = fetches
        self._feed = feed

    def _record(self, hook, extra=None):
        trainer = self.trainer
        self.log.append((self.name, hook, trainer.epoch_num, trainer.global_step,
                         trainer.local_step, extra))

    def _setup_graph(self):
        self.log.append((self.name, "setup_graph"))
        if self._feed is not None:
            self._feed_tensor = self.get_tensors_maybe_in_tower([self._feed[0]])[0]

    def _before_train(self):
        self._record("before_train")

    def _after_train(self):
        self._record("after_train")

    def _before_epoch(self):
        self._record("before_epoch")

    def _after_epoch(self):
        self._record("after_epoch")

    def _before_run(self, ctx):
        self._record("before_run")
        if self._feed is not None:
            return tfv1.train.SessionRunArgs(fetches=self._fetch_names,
                                             feed_dict={self._feed_tensor: self._feed[1]})
        return self._fetch_names

    def _after_run(self, ctx, values):
        results = values.results
        if isinstance(results, list):
            results = [np.asarray(r).tolist() for r in results]
        self._record("after_run", results)

    def _trigger_step(self):
        self._record("trigger_step")

    def _trigger(self):
        self._record("trigger")


def record_session_calls(sess, calls):
    """Make every call into ``sess`` append what it was to ``calls``: ``"run"``,
    ``"make_callable"`` (``make_callable``, or TensorFlow's callable made from options without
    feeds, as the training step's), or ``"callable"`` (a call of a callable that ``sess`` made)."""
    run, make_callable = sess.run, sess.make_callable
    from_options = sess._make_callable_from_options

    def counted_run(*args, **kwargs):
        calls.append("run")
        return run(*args, **kwargs)

    def counted(fn):
        def counted_callable(*args):
            calls.append("callable")
            return fn(*args)
        calls.append("make_callable")
        return counted_callable

    def counted_from_options(options):
        if options.feed:            # an input's enqueue (fed_callable), not a training step
            return from_options(options)
        return counted(from_options(options))
    sess.run = counted_run
    sess.make_callable = lambda *args, **kwargs: counted(make_callable(*args, **kwargs))
    sess._make_callable_from_options = counted_from_options


# The session run with which ``train`` reads the final weights as the main loop ends (after every
# ``after_train``; ``trainer.final_weights``), counted by :class:`RunCounter`.
FINAL_WEIGHTS_READ = 1


class RunCounter(Callback):
    """Records every call into the trainer's session from ``before_train`` on (``calls``, see
    :func:`record_session_calls`), the read of the final weights included
    (:data:`FINAL_WEIGHTS_READ`); ``runs`` counts those that ran the graph."""

    _chief_only = False

    def __init__(self):
        self.calls = []

    @property
    def runs(self):
        return sum(1 for call in self.calls if call != "make_callable")

    def _before_train(self):
        record_session_calls(self.trainer.sess, self.calls)


def train_linear(callbacks=(), data=None, steps_per_epoch=None, max_epoch=2, monitors=(),
                 extra_callbacks=(), trainer=None, model=None, **config_kwargs):
    """Train :class:`LinearModel` on 12 datapoints in batches of 4 (3 steps per epoch)."""
    x, y = make_regression_data(12)
    if data is None:
        data = tfloop.FeedInput(batches(x, y, 4))
    config = tfloop.TrainConfig(model=model or LinearModel(), data=data,
                                callbacks=list(callbacks), monitors=list(monitors),
                                extra_callbacks=list(extra_callbacks),
                                steps_per_epoch=steps_per_epoch, max_epoch=max_epoch,
                                **config_kwargs)
    trainer = trainer or tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer


class LearningRateLog(tfloop.MonitorBase):
    """``(global_step, value)`` of every ``learning_rate`` scalar put, rounded to 6 digits."""

    def __init__(self):
        self.seen = []

    def process_scalar(self, name, value):
        if name == "learning_rate":
            self.seen.append((self.global_step, round(value, 6)))


def train_recording_lr(callbacks, max_epoch, **kwargs):
    """Train LRModel with ``callbacks``: the learning rate of each epoch, and what was put."""
    recorder, log = LRRecorder(), LearningRateLog()
    train_linear(list(callbacks) + [recorder], model=LRModel(), max_epoch=max_epoch,
                 monitors=[log], **kwargs)
    return recorder.per_epoch(), log.seen


class Flow:
    """A DataFlow by duck typing (``__iter__``, ``__len__``, ``reset_state``) counting its resets
    and passes; optionally without a length, slow, or raising at one datapoint."""

    def __init__(self, items, delay=0.0, fail_at=None, length=True):
        self.items, self.delay, self.fail_at, self.length = items, delay, fail_at, length
        self.resets = 0
        self.passes = 0

    def reset_state(self):
        self.resets += 1

    def __len__(self):
        if not self.length:
            raise NotImplementedError()
        return len(self.items)

    def __iter__(self):
        self.passes += 1
        for i, item in enumerate(self.items):
            if self.delay:
                time.sleep(self.delay)
            if i == self.fail_at:
                produce_broken_datapoint(i)
            yield item


def produce_broken_datapoint(i):
    raise KeyError(f"record {i} is missing")


def check_generated_section(path, begin, end, content, test_file):
    """Assert that the file ``path`` holds ``content`` between the ``begin`` and ``end`` marker
    lines (a table a test generates); with ``$TFLOOP_WRITE_MIGRATING`` set, write it there
    instead. ``test_file`` is named in the message as the way to regenerate it."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start, stop = text.index(begin) + len(begin) + 1, text.index(end)
    if os.environ.get("TFLOOP_WRITE_MIGRATING"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text[:start] + content + text[stop:])
        return
    assert text[start:stop] == content, (
        f"{os.path.basename(path)}'s section after {begin!r} is stale: run "
        f"TFLOOP_WRITE_MIGRATING=1 python -m pytest {test_file}")
