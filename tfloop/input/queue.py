"""QueueInput: a loader thread prepares Python data while the model trains (and
:class:`~tfloop.input.batch_queue.BatchQueueInput`, its variant for single examples).

The loader thread iterates the data and checks each datapoint against ``inputs()``. By default
it enqueues them into a TensorFlow ``FIFOQueue`` with session calls of its own and the step
dequeues inside the graph, so the step feeds nothing and keeps its ``make_callable`` fast path
(this also works inside ``steps_per_run`` loops). With ``queue=<int>`` it keeps them in a bounded
Python buffer instead and each step feeds the next ones to placeholders. The queue is the default
because it measured faster (``bench/python_loader.py --bursts``). Before each step the
training thread waits, in Python where Ctrl-C, SIGTERM and the loader's errors reach it, until
the datapoints of the step are ready, so a step never blocks inside TensorFlow.
"""
from tfloop.callbacks.base import Callback, StopTraining
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource
from tfloop.input.loader import (
    LoaderThread,
    StopWaiting,
    check_iterable,
    close_data,
    component_plan,
    data_length,
    datapoint_components,
    ready_components,
    reset_data,
)
from tfloop.tfutils.fed_callable import fed_callable
from tfloop.utils import logger
from tfloop.utils.checks import is_int
from tfloop.utils.coerce import tensorpack_keywords

__all__ = ["QueueInput"]

STOP_TIMEOUT_S = 10.0
STARVING_FRACTION = 0.5
# The component a datapoint of data of unknown length carries: whether it ends its pass.
_PASS_END_SPEC = tf.TensorSpec([], tf.bool, "pass_end")


class _QueueFeeder(Callback):
    """Starts and stops the loader thread, waits for each step's datapoints, reports the queue's
    fill level and saves the position of the next datapoint to train (for a resumed run)."""

    _chief_only = False

    def __init__(self, source):
        self._source = source
        self._thread = None
        self._start_index = 0
        self._consumed = 0
        self._need = 1
        self._starving_said = False
        self._reset_epoch_stats()

    def _reset_epoch_stats(self):
        self._steps = 0
        self._queued_sum = 0
        self._empty_steps = 0
        self._wait_s = 0.0

    def _setup_graph(self):
        self._need = self._source.dequeues_per_run(self.trainer.steps_per_run)

    def _before_train(self):
        source = self._source
        reset_data(source.data)
        if self._start_index:
            logger.info(f"{source} resumes at datapoint {self._start_index} of its data.")
        # Epochs that are passes: each pass in whole steps, every datapoint with its flag.
        passes = self.trainer.epochs_are_passes and source.marks_pass_ends()
        self._thread = LoaderThread(source.data, str(source), source.prepare,
                                    put=source.make_enqueue(self.trainer.sess, passes),
                                    capacity=source.capacity, start_index=self._start_index,
                                    stop_errors=(tf.errors.CancelledError, RuntimeError),
                                    pass_groups=self._need if passes else None)
        self._thread.start()

    def _before_epoch(self):
        self._reset_epoch_stats()

    def _should_stop(self):
        return self.trainer.stop_requested

    def _before_run(self, ctx):
        thread = self._thread
        queued = thread.produced - thread.reserved
        self._steps += 1
        self._queued_sum += queued
        if queued < self._need:
            self._empty_steps += 1
        feed, waited = self.take(self._need)
        self._wait_s += waited
        if feed:
            return tfv1.train.SessionRunArgs(fetches=None, feed_dict=feed)

    def take(self, count):
        """Wait until ``count`` datapoints are ready for one session call; returns the feed_dict
        of that call (empty when the graph dequeues them) and the seconds waited."""
        thread = self._thread
        try:
            if self._source.capacity is None:
                return None, thread.reserve(count, self._should_stop)
            items, waited = thread.take(count, self._should_stop)
        except StopWaiting:
            raise StopTraining(f"a stop was requested while waiting for {self._source}'s "
                               f"data") from None
        return self._source.feed_for(items), waited

    def _after_run(self, ctx, values):
        self._consumed += self._need

    def skip_to_next_pass(self, sess):
        """Take and drop datapoints until one that ends its pass (see
        :meth:`QueueInput.skip_to_next_pass`)."""
        last = False
        while not last:
            feed, _ = self.take(1)
            last = self._source.take_pass_flag(sess, feed)
            self._consumed += 1

    def _after_epoch(self):
        if not self._steps:
            return
        self.trainer.monitors.put_scalar(f"{self._source.name}/queue_size",
                                         self._queued_sum / self._steps)
        empty = self._empty_steps / self._steps
        if empty > STARVING_FRACTION and not self._starving_said:
            self._starving_said = True
            logger.warning(
                f"{self._source}: the queue was empty before {empty:.0%} of the steps of epoch "
                f"{self.epoch_num}; training waited {self._wait_s:.2f} s for data. The loader is "
                f"slower than training: see 'A starving loader' in docs/data.md (said once; the "
                f"statistic {self._source.name}/queue_size tracks it every epoch).")

    def _after_train(self):
        thread = self._thread
        if thread is None:
            return
        self._source.close_queue(self.trainer.sess)
        if not thread.stop(STOP_TIMEOUT_S):
            logger.warning(f"{self._source}'s loader thread did not end within {STOP_TIMEOUT_S:.0f}"
                           f" s of the end of training (the data's iterator is blocked); it is a "
                           f"daemon thread and ends with the process.")
        close_data(self._source.data, str(self._source))

    def _state_dict(self):
        if self._thread is None:
            return None
        pass_num, index = self._thread.position(self._consumed)
        return {"pass": pass_num, "index": index, "consumed": self._consumed}

    def _load_state_dict(self, state):
        self._start_index = int(state["index"])

    def __str__(self):
        return f"QueueFeeder[{self._source}]"


class QueueInput(InputSource):
    """Prefetch datapoints from Python data with a background thread while the model trains.

    The loader thread iterates ``df`` again and again (calling ``df.reset_state()`` first when it
    has one) and checks every datapoint against ``inputs()``. By default it enqueues them into a
    TensorFlow queue and the step dequeues inside the graph (which works with ``steps_per_run``
    > 1 too); with ``queue=<int>`` they wait in a Python buffer of that size and each step feeds
    the next one to placeholders named like the inputs. This is the default for a Python iterable
    given as ``TrainConfig(data=...)``.

    - An exception of the data (or a datapoint that does not fit ``inputs()``) is re-raised in
      the training thread with its own traceback and a note naming the datapoint.
    - The thread ends with training (its end, ``StopTraining``, an error, Ctrl-C or SIGTERM).
    - Each epoch puts the statistic ``QueueInput/queue_size`` (the mean number of datapoints
      ready before a step), and warns once when the queue was empty before most steps of an
      epoch: the loader is too slow.
    - With :class:`~tfloop.train.config.AutoResumeTrainConfig`, a resumed run continues at the
      datapoint after the last one trained (datapoints prefetched but not trained are read
      again): exact when ``df`` yields the same datapoints in the same order each time.

    Args:
        df: a DataFlow or any re-iterable of datapoints (a list, an object with ``__iter__``);
            each datapoint is a list/tuple in the order of ``inputs()`` or a dict keyed by input
            name. Its ``len()``, when known, is the default ``steps_per_epoch``; without one,
            each epoch is one pass over it (each datapoint carries, in the queue or the buffer,
            whether it ends its pass; a ``queue`` of your own cannot carry it, and then
            ``steps_per_epoch`` is needed).
        queue (tf.queue.QueueBase, callable or int): None (a ``FIFOQueue`` of 50 datapoints);
            a TensorFlow queue with the dtypes of ``inputs()``, or a function that builds one
            (called inside the training graph); or an int: feed from a Python buffer of that
            many datapoints.

    Example:
        >>> batches = [(x[i:i + 64], y[i:i + 64]) for i in range(0, len(x), 64)]
        >>> TrainConfig(model=MyModel(), data=QueueInput(batches), max_epoch=5)
    """

    name = "QueueInput"
    default_capacity = 50
    # Whether the data comes in passes (a stream of its own never ends one).
    has_passes = True

    @tensorpack_keywords(ds="df")
    def __init__(self, df, queue=None):
        self.data = check_iterable(df, type(self).__name__)
        own_queue = queue is None
        if own_queue:
            queue = self._default_queue
        self.capacity = None
        if is_int(queue):
            if queue < 1:
                raise ValueError(f"{self.name}'s buffer size must be >= 1, got {queue}.")
            self.capacity = int(queue)
        elif not (callable(queue) or isinstance(queue, tfv1.QueueBase)):
            raise TypeError(f"{self.name}'s queue must be a buffer size (int), a "
                            f"tf.queue.QueueBase or a function that builds one, got {queue!r}.")
        self._queue_arg = queue
        self._own_queue = own_queue
        self._marks_passes = False
        self._pass_end_flags = []
        self.queue = None
        self._dequeue_calls = []
        self._tower_placeholders = []
        self._feeder = _QueueFeeder(self)

    # ---- graph -----------------------------------------------------------------------------------
    def _component_specs(self, input_signature):
        """The spec of one prepared datapoint's components."""
        return list(input_signature)

    def _setup(self, input_signature):
        self._graph = tfv1.get_default_graph()
        self._specs = self._component_specs(input_signature)
        self._plan = component_plan(self._specs)
        # Data of unknown length in a queue of tfloop's own (or fed): each datapoint carries
        # whether it ends its pass, for epochs that are passes.
        self._marks_passes = self.has_passes and data_length(self.data) is None and (
            self.capacity is not None or self._own_queue)
        if self.capacity is not None:
            return
        specs = self._specs + ([_PASS_END_SPEC] if self._marks_passes else [])
        with tf.name_scope(self.name):
            self._placeholders = [tfv1.placeholder(s.dtype, s.shape, name=f"enqueue_{i}")
                                  for i, s in enumerate(specs)]
            self.queue = self._make_queue(specs)
            self._enqueue_op = self.queue.enqueue(self._placeholders, name="enqueue")
            self._close_op = self.queue.close(cancel_pending_enqueues=True, name="close")
            if self._marks_passes:
                self._skip_flag = self.queue.dequeue(name="skip")[-1]

    def _make_queue(self, specs):
        queue = self._queue_arg
        if self._own_queue:
            return self._default_queue(specs)
        if callable(queue) and not isinstance(queue, tfv1.QueueBase):
            queue = queue()
            if not isinstance(queue, tfv1.QueueBase):
                raise TypeError(f"{self.name}'s queue function returned {queue!r}, not a "
                                f"tf.queue.QueueBase.")
        if queue.queue_ref.graph is not self._graph:
            raise ValueError(f"{self.name}'s queue {queue.name} was built outside tfloop's "
                             f"training graph. Pass a function that builds it instead: "
                             f"{self.name}(df, queue=lambda: tf.queue.FIFOQueue(...)).")
        want = [s.dtype for s in specs]
        if list(queue.dtypes) != want:
            raise ValueError(f"{self.name}'s queue {queue.name} has dtypes "
                             f"{[d.name for d in queue.dtypes]}, but inputs() needs "
                             f"{[d.name for d in want]}.")
        return queue

    def _default_queue(self, specs):
        return tfv1.FIFOQueue(self.default_capacity, [s.dtype for s in specs], name="queue")

    def _get_input_tensors(self):
        in_step = tfv1.get_default_graph() is self._graph   # not in a steps_per_run loop
        self._dequeue_calls.append(in_step)
        if self.capacity is not None:
            # Each tower gets placeholders of its own, named like the inputs.
            placeholders = [tfv1.placeholder(s.dtype, s.shape, name=s.name or f"input{i}")
                            for i, s in enumerate(self.input_signature)]
            if self._marks_passes:
                placeholders.append(tfv1.placeholder(tf.bool, [], name="pass_end"))
            self._tower_placeholders.append(placeholders)
            tensors = list(placeholders)
        else:
            with tf.device("/cpu:0"), tf.name_scope(self.name):
                tensors = self._dequeue()
        if self._marks_passes:
            last = tensors.pop()
            if in_step:
                self._pass_end_flags.append(last if last.shape.rank == 0 else
                                            tf.reduce_any(last))
        if self.capacity is not None:
            return tensors
        out = []
        for tensor, spec in zip(tensors, self.input_signature):
            tensor.set_shape(spec.shape)
            out.append(tf.identity(tensor, name=spec.name) if spec.name else tensor)
        return out

    def _dequeue(self):
        tensors = self.queue.dequeue(name="dequeue")
        return [tensors] if isinstance(tensors, tf.Tensor) else list(tensors)

    def dequeues_per_run(self, steps_per_run):
        """Datapoints one training session call takes: one per call of
        :meth:`get_input_tensors`, and ``steps_per_run - 1`` for a call inside its loop."""
        per_datapoint = self._datapoints_per_dequeue()
        return sum((1 if outside else steps_per_run - 1) * per_datapoint
                   for outside in self._dequeue_calls)

    def _datapoints_per_dequeue(self):
        return 1

    def _get_callbacks(self):
        return [self._feeder]

    def take_feed(self):
        """Wait (in the training thread) for the datapoints of one session call of one's own
        that takes them, e.g. to fill a :class:`StagingInput`; returns its feed_dict (empty when
        the graph dequeues them)."""
        feed, _ = self._feeder.take(self.dequeues_per_run(1))
        return feed or {}

    def feed_for(self, items):
        """The feed_dict giving each tower's placeholders one of ``items`` (an item of epochs
        that are passes is ``(components, last)``)."""
        feed = {}
        for placeholders, values in zip(self._tower_placeholders, items):
            if isinstance(values, tuple):
                values = list(values[0]) + [values[1]]
            feed.update(zip(placeholders, values))
        return feed

    # ---- the loader thread's side ----------------------------------------------------------------
    def prepare(self, dp, index):
        """Datapoint ``index`` as a list of arrays checked against the inputs."""
        components = ready_components(dp, self._plan)
        if components is None:
            components = datapoint_components(dp, self._specs, f"{self.name} datapoint {index}")
        return components

    def make_enqueue(self, sess, passes=False):
        """The loader thread's ``put(item)`` into the TensorFlow queue (a session call of its
        own, blocking while the queue is full), or None when datapoints are buffered. The item
        is a datapoint's components, or ``(components, last)`` with ``passes`` (epochs that are
        passes: see :class:`~tfloop.input.loader.LoaderThread`'s ``pass_groups``)."""
        if self.capacity is not None:
            return None
        # A callable of its own, run in the loader thread: Session.run's Python work (and two
        # thread switches into TensorFlow's pool) would hold the GIL the step needs.
        enqueue = fed_callable(sess, self._placeholders, [self._enqueue_op],
                               in_caller_thread=True)
        if passes:
            return lambda item: enqueue(*item[0], item[1])
        if self._marks_passes:
            return lambda components: enqueue(*components, False)
        return lambda components: enqueue(*components)

    def take_pass_flag(self, sess, feed):
        """Take one datapoint (reserved from the loader; ``feed``: the buffered one, as a
        feed_dict) and return whether it ends its pass."""
        if self.capacity is None:
            return bool(sess.run(self._skip_flag))
        return bool(feed[self._tower_placeholders[0][-1]])

    def close_queue(self, sess):
        """Close the TensorFlow queue, cancelling a blocked enqueue of the loader thread."""
        if self.queue is None:
            return
        try:
            sess.run(self._close_op)
        except (tf.errors.OpError, RuntimeError) as e:
            logger.warning(f"{self} could not close its queue: {type(e).__name__}: {e}")

    def setup_state(self):
        """None: the position (the datapoint after the last one trained) is the state of the
        feeder callback."""
        return None

    def size(self):
        return data_length(self.data)

    def marks_pass_ends(self):
        """Whether the data has no length and the queue is tfloop's own (or the Python
        buffer): each datapoint then carries whether it ends its pass."""
        return self._marks_passes

    def pass_end_flags(self):
        return list(self._pass_end_flags)

    def skip_to_next_pass(self, sess):
        """Take and drop the rest of the current pass's datapoints."""
        if not self._marks_passes:
            super().skip_to_next_pass(sess)
        self._feeder.skip_to_next_pass(sess)

    def __str__(self):
        return self.name
