"""DataParallelInferenceRunner: one inference pass per trigger, batches spread over devices."""
from tfloop.callbacks.inference_loop import InferenceRunnerBase, batch_size_of
from tfloop.compat import tf
from tfloop.utils import logger
from tfloop.utils.checks import is_int

__all__ = ["DataParallelInferenceRunner"]


def _check_gpus(gpus):
    if is_int(gpus):
        if gpus < 1:
            raise ValueError(f"DataParallelInferenceRunner: gpus must be >= 1, got {gpus}.")
        return list(range(gpus))
    if isinstance(gpus, str) or not hasattr(gpus, "__iter__"):
        raise TypeError("DataParallelInferenceRunner: gpus must be a list of GPU indices or "
                        f"device strings, got {gpus!r}.")
    gpus = list(gpus)
    if not gpus:
        raise ValueError("DataParallelInferenceRunner: gpus is empty.")
    for g in gpus:
        if not (isinstance(g, str) or is_int(g)):
            raise TypeError(f"DataParallelInferenceRunner: gpus items must be GPU indices or "
                            f"device strings, got {g!r}.")
    return gpus


class DataParallelInferenceRunner(InferenceRunnerBase):
    """Like :class:`InferenceRunner`, with one predict tower per device: each session call runs
    consecutive batches on the towers in parallel; the inferencers see every batch once, in the
    order of the data, so the statistics equal a single tower's.

    The towers are named ``<tower_name><i>`` and built the way ``trainer.get_predictor`` builds
    its tower. At the end of a pass, a last round with fewer batches than towers runs only the
    towers it needs. A ``tf.data`` input of unknown length runs one tower per call (no batch is
    lost at its end).

    Args:
        input: as for :class:`InferenceRunner`.
        infs (Inferencer or list[Inferencer]): what to compute.
        gpus (int or list): the towers' devices: GPU indices (ignored without such a GPU) or
            device strings (``"/cpu:1"``); an int N means GPUs 0..N-1.
        tower_name (str): prefix of the towers' names.
        tower_func (callable): the tower function; the trainer's by default.

    Example:
        >>> DataParallelInferenceRunner(make_val_dataset, [ScalarStats("cost")], gpus=[0, 1])
    """

    def __init__(self, input, infs, gpus, tower_name: str = "InferenceTower", tower_func=None):
        super().__init__(input, infs, tower_name, tower_func)
        self._devices = _check_gpus(gpus)
        self._tower_names = [f"{tower_name}{i}" for i in range(len(self._devices))]

    def _build_towers(self, tower_func):
        self._check_tower_names_free(tower_func, self._tower_names)
        self._input.setup(tower_func.input_signature)
        self._tower_inputs, self._tower_fetches = [], []
        inputs = []
        for name, device in zip(self._tower_names, self._devices):
            # Tower i takes its batch after tower i-1 took its own: batches stay in data order.
            with tf.control_dependencies(inputs):
                inputs = self._input.get_input_tensors()
            tower = self._build_tower(tower_func, inputs, name, device)
            fetches = [batch_size_of(inputs)]
            for inf in self.infs:
                if not self._tower_fetches:
                    inf.setup_graph(tower)
                    tensors = inf.fetch_tensors
                else:
                    tensors = [inf._lookup(tower, n) for n in inf.get_fetches()]
                self._check_fetches(inf, tensors, tower)
                fetches.append(tensors)
            self._tower_inputs.append(inputs)
            self._tower_fetches.append(fetches)
        logger.detail(f"{self}: inference towers {self._tower_names} built on {self._devices} for "
                    f"{', '.join(str(inf) for inf in self.infs)}.")

    def _run_towers(self, count, feed=None):
        """Run the first ``count`` towers once and hand each inferencer its results, in order."""
        for _ in range(count):
            for inf in self.infs:
                inf.before_batch()
        values = self.trainer.sess.run(self._tower_fetches[:count], feed_dict=feed)
        for tower_values in values:
            batch_size, results = int(tower_values[0]), tower_values[1:]
            for inf, inf_results in zip(self.infs, results):
                inf.on_fetches(inf_results, batch_size)

    def _rounds(self, total):
        towers = len(self._devices)
        while total > 0:
            count = min(towers, total)
            yield count
            total -= count

    def _run_pass(self):
        if self._reads_dataset:
            return self._run_dataset_pass()
        return self._run_feed_pass()

    def _run_dataset_pass(self):
        self._input.initialize(self.trainer.sess)
        size = self._input.size()
        batches = 0
        with self._progress_bar() as bar:
            if size is not None:
                for count in self._rounds(size):
                    self._check_stop()
                    self._run_towers(count)
                    batches += count
                    bar.update(count)
                return batches
            while True:
                self._check_stop()
                try:
                    self._run_towers(1)
                except tf.errors.OutOfRangeError:
                    return batches
                batches += 1
                bar.update()

    def _run_feed_pass(self):
        source = self._input.placeholders
        towers = len(self._devices)
        batches, group = 0, []
        with self._progress_bar() as bar:
            for feed in self._input.iter_feeds():
                group.append(feed)
                if len(group) == towers:
                    self._check_stop()
                    batches += self._run_feed_group(group, source)
                    bar.update(len(group))
                    group = []
            if group:
                self._check_stop()
                batches += self._run_feed_group(group, source)
                bar.update(len(group))
        return batches

    def _run_feed_group(self, group, source):
        feed = {}
        for feed_i, inputs in zip(group, self._tower_inputs):
            feed.update({tensor: feed_i[ph] for ph, tensor in zip(source, inputs)})
        self._run_towers(len(group), feed)
        return len(group)
