"""What the benchmarks share: the models, their synthetic data, and one runner per training method.

Every runner trains one model for ``warmup + timed`` steps and returns how long the timed steps
took (wall and process CPU time). Each runner builds its own graph and session, so a process
runs one method; the scripts start a fresh process per method and repeat.

Models (batch 64, plain SGD on a ``learning_rate`` variable, softmax cross-entropy, 10 classes):

* ``mlp``: 784-256-10 (ReLU), the issue's reference model.
* ``convnet``: 28x28x1 -> conv3x3(16) -> maxpool2 -> conv3x3(32) -> maxpool2 -> dense 10.
* ``tiny``: 32-16-10, for runs that need very many cheap steps (the memory benchmark).

Timing: a window opens when the second epoch starts (the first epoch is the warm-up) and closes
when training ends, so epoch-boundary work (saving, summaries, progress bar) is inside it; the
Keras and raw loops time the same steps. Work of callbacks wrapped in :class:`ExcludedFromTiming`
(the InferenceRunner of the typical list) is subtracted.
"""
import os
import resource
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tfv1 = tf.compat.v1

BATCH = 64
NUM_CLASSES = 10
DATA_BATCHES = 32
LEARNING_RATE = 0.01
SEED = 0


class ModelSpec:
    """One benchmark model: its input shape, its graph-mode cost, its Keras twin and step counts.

    Args:
        name (str): the model's name in the results.
        input_shape (tuple): one example's shape.
        layers (list): ``("dense", units, activation)``, ``("conv", filters, activation)``,
            ``("pool",)`` or ``("flatten",)``; the last dense layer gives the logits.
        steps_per_epoch (int), epochs (int): the default timed run (plus one warm-up epoch).
        quick (tuple): ``(steps_per_epoch, epochs)`` for ``--quick``.
    """

    def __init__(self, name, input_shape, layers, steps_per_epoch, epochs, quick):
        self.name = name
        self.input_shape = tuple(input_shape)
        self.layers = layers
        self.steps_per_epoch = steps_per_epoch
        self.epochs = epochs
        self.quick = quick

    def data(self):
        """Deterministic synthetic inputs and labels: ``DATA_BATCHES`` batches."""
        rng = np.random.RandomState(SEED)
        n = BATCH * DATA_BATCHES
        x = rng.rand(n, *self.input_shape).astype(np.float32)
        y = rng.randint(0, NUM_CLASSES, size=n).astype(np.int32)
        return x, y

    def build_cost(self, x, y):
        """The cost of the model in graph mode, with ``tf.compat.v1.get_variable`` variables."""
        h = x
        for i, layer in enumerate(self.layers):
            kind = layer[0]
            with tfv1.variable_scope(f"layer{i}"):
                if kind == "dense":
                    units, act = layer[1], layer[2]
                    w = tfv1.get_variable("W", [int(h.shape[-1]), units])
                    b = tfv1.get_variable("b", [units], initializer=tfv1.zeros_initializer())
                    h = tf.matmul(h, w) + b
                elif kind == "conv":
                    filters, act = layer[1], layer[2]
                    w = tfv1.get_variable("W", [3, 3, int(h.shape[-1]), filters])
                    b = tfv1.get_variable("b", [filters], initializer=tfv1.zeros_initializer())
                    h = tf.nn.bias_add(tf.nn.conv2d(h, w, 1, "SAME"), b)
                elif kind == "pool":
                    act = None
                    h = tf.nn.max_pool2d(h, 2, 2, "VALID")
                else:
                    act = None
                    h = tf.reshape(h, [-1, int(np.prod(h.shape[1:]))])
                if act == "relu":
                    h = tf.nn.relu(h)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h)
        return tf.reduce_mean(loss, name="cost")

    def keras_model(self):
        import keras
        layers = [keras.Input(self.input_shape)]
        for layer in self.layers:
            kind = layer[0]
            if kind == "dense":
                layers.append(keras.layers.Dense(layer[1], activation=layer[2]))
            elif kind == "conv":
                layers.append(keras.layers.Conv2D(layer[1], 3, padding="same", activation=layer[2]))
            elif kind == "pool":
                layers.append(keras.layers.MaxPooling2D(2))
            else:
                layers.append(keras.layers.Flatten())
        return keras.Sequential(layers)

    def schedule(self, quick):
        return self.quick if quick else (self.steps_per_epoch, self.epochs)


MODELS = {
    "mlp": ModelSpec("mlp", [784], [("dense", 256, "relu"), ("dense", NUM_CLASSES, None)],
                     steps_per_epoch=500, epochs=3, quick=(100, 2)),
    "convnet": ModelSpec("convnet", [28, 28, 1],
                         [("conv", 16, "relu"), ("pool",), ("conv", 32, "relu"), ("pool",),
                          ("flatten",), ("dense", NUM_CLASSES, None)],
                         steps_per_epoch=50, epochs=2, quick=(20, 2)),
    "tiny": ModelSpec("tiny", [32], [("dense", 16, "relu"), ("dense", NUM_CLASSES, None)],
                      steps_per_epoch=1000, epochs=4, quick=(200, 2)),
}


def dataset_fn(spec, repeat, pass_length=None):
    """A function building the training ``tf.data`` pipeline of ``spec`` (in the current graph).
    With ``pass_length``: a pipeline of unknown length (a ``filter`` that keeps every batch)
    whose pass is that many batches."""
    x, y = spec.data()

    def make():
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True)
        if pass_length is not None:
            return ds.repeat().take(pass_length).filter(lambda bx, by: True)
        return ds.repeat() if repeat else ds
    return make


def feed_batches(spec):
    x, y = spec.data()
    return [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, len(x), BATCH)]


def learning_rate_optimizer():
    lr = tfv1.get_variable("learning_rate", initializer=LEARNING_RATE, trainable=False)
    return tfv1.train.GradientDescentOptimizer(lr)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2.0 ** 20


class Window:
    """Wall and process CPU time of the timed steps, minus excluded work."""

    def __init__(self):
        self.start = self.cpu_start = None
        self.end = self.cpu_end = None
        self.excluded = self.cpu_excluded = 0.0

    def open(self):
        self.start, self.cpu_start = time.perf_counter(), time.process_time()

    def close(self):
        self.end, self.cpu_end = time.perf_counter(), time.process_time()

    def result(self, steps):
        if self.start is None or self.end is None:
            raise RuntimeError("The timing window was never opened and closed; did training stop "
                               "before the second epoch?")
        return {"steps": steps, "wall_s": self.end - self.start - self.excluded,
                "cpu_s": self.cpu_end - self.cpu_start - self.cpu_excluded,
                "peak_rss_mb": peak_rss_mb()}


# ---- raw TensorFlow loops ------------------------------------------------------------------------
def raw_graph(spec, feed, pass_length=None):
    graph = tf.Graph()
    with graph.as_default():
        if feed:
            x = tfv1.placeholder(tf.float32, [None] + list(spec.input_shape), name="input")
            y = tfv1.placeholder(tf.int32, [None], name="label")
            iterator = None
        else:
            make = dataset_fn(spec, repeat=True, pass_length=pass_length)
            iterator = tfv1.data.make_initializable_iterator(
                make() if pass_length is None else make().repeat())
            x, y = iterator.get_next()
        cost = spec.build_cost(x, y)
        train_op = learning_rate_optimizer().minimize(
            cost, global_step=tfv1.train.get_or_create_global_step())
        sess = tfv1.Session(graph=graph)
        sess.run([tfv1.global_variables_initializer(), tfv1.local_variables_initializer()])
        if iterator is not None:
            sess.run(iterator.initializer)
        graph.finalize()
    return sess, train_op, (x, y)


def run_raw(spec, steps_per_epoch, epochs, feed=False, callable_=False, unknown_length=False):
    """(1) ``sess.run(train_op)`` with tf.data in the graph, (2) the same fed by feed_dict, or
    with ``callable_`` a ``Session.make_callable(train_op)`` called in the loop; with
    ``unknown_length``, on the pipeline of unknown length of ``run_tfloop``'s, repeated."""
    sess, train_op, (x, y) = raw_graph(spec, feed,
                                       pass_length=steps_per_epoch if unknown_length else None)
    batches = feed_batches(spec) if feed else None
    step_fn = sess.make_callable(train_op) if callable_ else None
    window = Window()
    total = steps_per_epoch * (epochs + 1)
    for step in range(total):
        if step == steps_per_epoch:
            window.open()
        if feed:
            bx, by = batches[step % len(batches)]
            sess.run(train_op, feed_dict={x: bx, y: by})
        elif step_fn is not None:
            step_fn()
        else:
            sess.run(train_op)
    window.close()
    sess.close()
    return window.result(steps_per_epoch * epochs)


# ---- tfloop --------------------------------------------------------------------------------------
def tfloop_model(spec):
    """The model as a tfloop ModelDesc: the same cost, plus what a tfloop user typically adds (a
    moving average of the cost, updated every step, and a weight histogram fetched each epoch)."""
    import tfloop

    class BenchModel(tfloop.ModelDesc):
        def inputs(self):
            return [tf.TensorSpec([None] + list(spec.input_shape), tf.float32, "input"),
                    tf.TensorSpec([None], tf.int32, "label")]

        def build_graph(self, x, y):
            cost = spec.build_cost(x, y)
            tfloop.add_moving_summary(cost)
            tfloop.add_param_summary(("layer0/W", ["histogram", "rms"]))
            return cost

        def optimizer(self):
            return learning_rate_optimizer()
    return BenchModel()


def timing_callbacks(window):
    """The callbacks that open and close ``window``; they do nothing per step."""
    import tfloop

    class OpenWindow(tfloop.Callback):
        def _before_epoch(self):
            if self.epoch_num == self.trainer.loop.starting_epoch + 1:
                window.open()

    class CloseWindow(tfloop.Callback):
        def _after_train(self):
            window.close()
    return OpenWindow(), CloseWindow()


def excluded_from_timing(cb, window):
    """Wrap ``cb`` so that the time of its per-epoch work is left out of ``window``."""
    import tfloop

    class ExcludedFromTiming(tfloop.ProxyCallback):
        def _timed(self, fn):
            start, cpu = time.perf_counter(), time.process_time()
            try:
                fn()
            finally:
                window.excluded += time.perf_counter() - start
                window.cpu_excluded += time.process_time() - cpu

        def _before_epoch(self):
            self._timed(self.cb.before_epoch)

        def _after_epoch(self):
            self._timed(self.cb.after_epoch)

        def _trigger_epoch(self):
            self._timed(self.cb.trigger_epoch)
    return ExcludedFromTiming(cb)


def typical_callbacks(spec, window):
    """A typical user list: ModelSaver every epoch, a learning-rate schedule, validation."""
    import tfloop
    return [
        tfloop.ModelSaver(),
        tfloop.ScheduledHyperParamSetter("learning_rate",
                                         [(1, LEARNING_RATE), (3, LEARNING_RATE / 2)]),
        excluded_from_timing(tfloop.InferenceRunner(
            dataset_fn(spec, repeat=False), [tfloop.ScalarStats(["cost"])]), window),
    ]


def run_tfloop(spec, steps_per_epoch, epochs, callbacks="none", steps_per_run=1, feed=False,
               extra=(), unknown_length=None):
    """tfloop ``SimpleTrainer``: ``callbacks`` is ``"none"`` (no default callbacks or monitors),
    ``"default"`` (the defaults) or ``"typical"`` (defaults plus :func:`typical_callbacks`);
    ``extra`` callbacks come first in the list. ``unknown_length``: the data has no known length
    (passes of ``steps_per_epoch`` batches), with epochs of ``steps_per_epoch`` steps
    (``"fixed"``) or one pass each (``"passes"``, no ``steps_per_epoch``)."""
    import tfloop
    from tfloop.utils import logger
    logdir = tempfile.mkdtemp(prefix="tfloop-bench-")
    logger.set_logger_dir(os.path.join(logdir, "log"), action="keep")
    window = Window()
    opener, closer = timing_callbacks(window)
    user = list(extra) + [opener]
    if callbacks == "typical":
        user += typical_callbacks(spec, window)
    user.append(closer)
    data = tfloop.FeedInput(feed_batches(spec)) if feed else \
        tfloop.DatasetInput(dataset_fn(spec, repeat=False, pass_length=steps_per_epoch
                                       if unknown_length else None))
    kwargs = {}
    if callbacks == "none":
        kwargs = dict(extra_callbacks=[], monitors=[])
    if steps_per_run != 1:
        kwargs["steps_per_run"] = steps_per_run
    config = tfloop.TrainConfig(model=tfloop_model(spec), data=data, callbacks=user,
                                steps_per_epoch=None if unknown_length == "passes" else
                                steps_per_epoch, max_epoch=epochs + 1, **kwargs)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    logger.unset_logger_dir()
    return window.result(steps_per_epoch * epochs)


# ---- Keras 3 -------------------------------------------------------------------------------------
def run_keras(spec, steps_per_epoch, epochs):
    """(6) Keras 3 ``model.fit`` on the same layers, data and optimizer, default settings."""
    import keras
    window = Window()

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1:
                window.open()

        def on_train_end(self, logs=None):
            window.close()

    x, y = spec.data()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True).repeat()
    model = spec.keras_model()
    model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=epochs + 1, steps_per_epoch=steps_per_epoch, verbose=0,
              callbacks=[Timer()])
    result = window.result(steps_per_epoch * epochs)
    result["keras_jit_compile"] = bool(model.jit_compile)
    return result


def log(*args):
    print(*args, file=sys.stderr, flush=True)
