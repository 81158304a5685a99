"""HookedSession: one session call per run, each hook gets exactly its own results, and the cached
callables never answer for another fetch structure."""
import collections
import collections.abc

import numpy as np
import pytest
from support import (
    FINAL_WEIGHTS_READ,
    LinearModel,
    RecordingCallback,
    RunCounter,
    batches,
    dataset_fn,
    expected_ema,
    make_regression_data,
    record_session_calls,
)
from tensorflow.core.protobuf import config_pb2

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils.hooked_session import HookedSession, fetch_key

SessionRunArgs = tfv1.train.SessionRunArgs


class Graph:
    """A counter the main fetch increments, and constants a, b, c = 1, 2, 3 and a sparse tensor
    to fetch."""

    def __init__(self):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.counter = tfv1.get_variable("counter", initializer=0, dtype=tf.int32,
                                             use_resource=True)
            self.step = self.counter.assign_add(1).op
            self.a, self.b, self.c = (tf.constant(v, name=n) for v, n in ((1, "a"), (2, "b"),
                                                                            (3, "c")))
            self.x = tfv1.placeholder(tf.float32, [None], name="x")
            self.double_x = 2.0 * self.x
            self.sparse = tf.SparseTensor(indices=[[0, 1]], values=[7], dense_shape=[2, 2])
            init = tfv1.global_variables_initializer()
        self.sess = tfv1.Session(graph=self.graph)
        self.sess.run(init)
        self.graph.finalize()
        self.session_calls = []
        record_session_calls(self.sess, self.session_calls)

    def count(self):
        return int(self.sess.run(self.counter))


class ScriptedHook:
    """Returns ``answers[i]`` from its i-th ``before_run`` and records every result it gets."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.results = []
        self.calls = 0

    def before_run(self, ctx):
        answer = self.answers[self.calls % len(self.answers)]
        self.calls += 1
        return answer() if callable(answer) else answer

    def after_run(self, ctx, values):
        self.results.append(values.results)


def as_python(value):
    if isinstance(value, dict):
        return {k: as_python(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(as_python(v) for v in value)
    return None if value is None else np.asarray(value).tolist()


def test_each_hook_gets_its_own_results_whatever_it_returns_from_step_to_step():
    g = Graph()
    shared = [g.a]
    changing = ScriptedHook([
        SessionRunArgs([g.a]),
        lambda: SessionRunArgs([g.b]),              # a new list every step
        None,
        SessionRunArgs({"first": g.c, "second": [g.a, g.b]}),
        SessionRunArgs(g.b),
        SessionRunArgs(fetches=None),
    ])
    steady = ScriptedHook([SessionRunArgs(shared)])
    silent = ScriptedHook([None])
    hooked = HookedSession(g.sess, [changing, steady, silent])
    for _ in range(12):
        assert hooked.run(g.step) is None
    assert g.count() == 12
    expected = [[1], [2], None, {"first": 3, "second": [1, 2]}, 2, None] * 2
    assert [as_python(r) for r in changing.results] == expected
    assert [as_python(r) for r in steady.results] == [[1]] * 12
    assert silent.results == [None] * 12


def test_a_list_mutated_in_place_is_fetched_as_it_is_now():
    g = Graph()
    fetches = [g.a]
    args = SessionRunArgs(fetches)

    def mutate_then_return():
        fetches[0] = {0: g.a, 1: g.b, 2: g.c}[len(hook.results) % 3]
        return args
    hook = ScriptedHook([mutate_then_return])
    hooked = HookedSession(g.sess, [hook])
    for _ in range(9):
        hooked.run(g.step)
    assert [as_python(r) for r in hook.results] == [[1], [2], [3]] * 3


def test_a_structure_gets_a_callable_on_its_second_run_and_keeps_it():
    g = Graph()
    hook = ScriptedHook([SessionRunArgs([g.a]), SessionRunArgs([g.a]), SessionRunArgs([g.b])])
    hooked = HookedSession(g.sess, [hook])
    for _ in range(9):
        hooked.run(g.step)
    # [a], [a], [b], [a], [a], [b], ...: [a] gets its callable on step 2, [b] on step 6.
    assert g.session_calls == ["run", "make_callable", "callable", "run", "callable", "callable",
                               "make_callable", "callable", "callable", "callable", "callable"]
    assert hooked.num_callables == 2
    assert [as_python(r) for r in hook.results] == [[1], [1], [2]] * 3


def test_the_main_fetch_result_comes_back_and_main_fetches_are_part_of_the_structure():
    g = Graph()
    hooked = HookedSession(g.sess, [ScriptedHook([SessionRunArgs([g.c])])])
    answers = [as_python(hooked.run([g.step, g.a] if i % 2 else [g.step, g.b]))
               for i in range(6)]
    assert answers == [[None, 2], [None, 1]] * 3
    assert hooked.num_callables == 2
    assert g.count() == 6


def test_with_few_callables_allowed_the_oldest_is_released_and_results_stay_right():
    g = Graph()
    hook = ScriptedHook([SessionRunArgs([g.a]), SessionRunArgs([g.b]), SessionRunArgs([g.c])])
    hooked = HookedSession(g.sess, [hook], max_callables=1)
    for _ in range(12):
        hooked.run(g.step)
    assert hooked.num_callables == 1
    assert [as_python(r) for r in hook.results] == [[1], [2], [3]] * 4
    assert g.count() == 12


def test_max_callables_zero_always_uses_session_run():
    g = Graph()
    hooked = HookedSession(g.sess, [ScriptedHook([SessionRunArgs([g.a])])], max_callables=0)
    for _ in range(3):
        hooked.run(g.step)
    assert g.session_calls == ["run"] * 3
    assert hooked.num_callables == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_bad_max_callables_is_refused(bad):
    g = Graph()
    with pytest.raises(ValueError, match="max_callables must be an int >= 0, got"):
        HookedSession(g.sess, [], max_callables=bad)


def test_feeds_go_through_session_run_with_the_values_of_each_step():
    g = Graph()
    values = iter([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])
    feeder = ScriptedHook([lambda: SessionRunArgs([g.double_x], feed_dict={g.x: next(values)})])
    hooked = HookedSession(g.sess, [feeder])
    for _ in range(3):
        hooked.run(g.step)
    assert [as_python(r) for r in feeder.results] == [[[2.0, 4.0]], [[6.0]], [[8.0, 10.0, 12.0]]]
    assert g.session_calls == ["run"] * 3


def test_two_hooks_feeding_the_same_tensor_is_an_error():
    g = Graph()
    one = ScriptedHook([SessionRunArgs(None, feed_dict={g.x: [1.0]})])
    two = ScriptedHook([SessionRunArgs(None, feed_dict={g.x: [2.0]})])
    with pytest.raises(ValueError, match="feeds x:0 which is already fed"):
        HookedSession(g.sess, [one, two]).run(g.step)


def test_run_options_use_session_run_and_reach_every_hook():
    g = Graph()
    tracer = ScriptedHook([SessionRunArgs([g.a], options=tfv1.RunOptions(
        trace_level=tfv1.RunOptions.FULL_TRACE))])
    seen = []

    class Watcher(ScriptedHook):
        def after_run(self, ctx, values):
            seen.append((values.results, values.options.trace_level,
                         len(values.run_metadata.step_stats.dev_stats) > 0))
    hooked = HookedSession(g.sess, [tracer, Watcher([None])])
    hooked.run(g.step)
    hooked.run(g.step)
    assert seen == [(None, tfv1.RunOptions.FULL_TRACE, True)] * 2
    assert g.session_calls == ["run", "run"]


def test_a_stop_request_is_seen_after_the_run():
    g = Graph()

    class Stopper(ScriptedHook):
        def after_run(self, ctx, values):
            if len(self.results) == 1:
                ctx.request_stop()
            self.results.append(values.results)
    hooked = HookedSession(g.sess, [Stopper([None])])
    hooked.run(g.step)
    assert not hooked.stop_requested
    hooked.run(g.step)
    assert hooked.stop_requested


def test_fetch_key_tells_structures_apart():
    g = Graph()
    assert fetch_key([g.a, [g.b]]) == fetch_key([g.a, [g.b]])
    assert fetch_key([g.a]) != fetch_key((g.a,))
    assert fetch_key([g.a]) != fetch_key(g.a)
    assert fetch_key([g.a, g.b]) != fetch_key([g.b, g.a])
    assert fetch_key({"x": g.a}) == fetch_key({"x": g.a})
    assert fetch_key({"x": g.a}) != fetch_key({"y": g.a})
    assert fetch_key(["a:0"]) == fetch_key(["a:0"])
    assert fetch_key([[g.a], [g.b]]) != fetch_key([[g.a, g.b]])


class NamesCallback(tfloop.Callback):
    def __init__(self, answer):
        self.answer = answer

    def _before_run(self, ctx):
        return self.answer


def test_callbacks_pass_resolved_fetches_on_without_copying_them():
    graph = tf.Graph()
    with graph.as_default():
        t = tf.constant(1.0, name="t")
    resolved = SessionRunArgs([t])
    cb = NamesCallback(resolved)
    cb.graph = graph
    assert cb.before_run(None) is resolved
    plain = [t]
    cb.answer = plain
    assert cb.before_run(None).fetches is plain
    cb.answer = ["t:0", t]
    assert cb.before_run(None).fetches == [t, t]
    cb.answer = SessionRunArgs({"t": "t"})
    assert cb.before_run(None).fetches == {"t": t}


class SummarizedLinear(LinearModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfloop.add_moving_summary(cost)
        tfv1.summary.scalar("cost_summary", cost)
        return cost


def test_training_makes_one_session_call_per_step_with_the_default_callbacks(logdir):
    log = []
    x, y = make_regression_data(12)
    counter = RunCounter()
    recorder = RecordingCallback("r", log, fetches=["cost"])
    config = tfloop.TrainConfig(model=SummarizedLinear(), data=tfloop.DatasetInput(
        dataset_fn(x, y, 4)), callbacks=[counter, recorder], max_epoch=3)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    assert trainer.global_step == 9
    # Steps 3, 6 and 9 also fetch the summaries; each structure gets its callable on its 2nd run.
    assert counter.calls == ["run", "make_callable", "callable", "run", "callable", "callable",
                             "make_callable"] + ["callable"] * 4 + ["run"] * FINAL_WEIGHTS_READ
    # Every value that rode along is right: the costs of plain SGD on the same batches, their
    # moving average and the summaries of each epoch's last step.
    w = np.zeros((3, 1), np.float32)
    costs = []
    for _ in range(3):
        for bx, by in batches(x, y, 4):
            pred = (bx @ w)[:, 0]
            costs.append(float(np.mean((pred - by) ** 2)))
            w = w - 0.1 * (2.0 / len(bx)) * bx.T @ (pred - by)[:, None]
    got = [entry[5][0] for entry in log if entry[1] == "after_run"]
    np.testing.assert_allclose(got, costs, rtol=1e-5)
    averages = expected_ema(costs, 0.95)
    history = trainer.monitors.get_history("cost")
    assert [s for s, _ in history] == [3, 6, 9]
    np.testing.assert_allclose([v for _, v in history], averages[2::3], rtol=1e-4)
    summaries = trainer.monitors.get_history("cost_summary")
    assert [s for s, _ in summaries] == [3, 6, 9]
    np.testing.assert_allclose([v for _, v in summaries], costs[2::3], rtol=1e-5)


def _types_and_values(value):
    """The containers (their exact types) and the values of a run's result."""
    if isinstance(value, collections.abc.Mapping):
        return type(value), {k: _types_and_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value), [_types_and_values(v) for v in value]
    if isinstance(value, tf.compat.v1.SparseTensorValue):
        return type(value), [np.asarray(v).tolist() for v in value]
    return type(value), None if value is None else np.asarray(value).tolist()


class Frozen(collections.abc.Mapping):
    """A read-only mapping that is not a dict, made from ``(key, value)`` pairs."""

    def __init__(self, pairs):
        self._items = dict(pairs)

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


class Names(list):
    """A list subclass (Session.run answers it with a plain list)."""


def _recording(make_callable, made):
    """``make_callable`` (or ``_make_callable_from_options``) that first appends the fetches (the
    options) it is given to ``made``."""
    def recorded(fetches):
        made.append(fetches)
        return make_callable(fetches)
    return recorded


def test_a_cached_callable_gives_what_session_run_gives_for_every_kind_of_structure():
    Pair = collections.namedtuple("Pair", ["first", "second"])
    g = Graph()
    # each one with how its leaves are fetched: by TensorFlow's own callable (tensors and
    # operations only), flat by make_callable, or left to TensorFlow's fetch handling
    structures = [
        ([g.a, [g.b, (g.c, g.a)], {"k": g.b, 3: [g.c]}], "native"),
        ({"op": g.step, "name": "a:0", "again": [g.a, g.a]}, "flat"),
        ((Pair(g.a, g.b), collections.OrderedDict(x=g.c, a=Pair(g.b, [g.step]))), "native"),
        ({"d": collections.defaultdict(int, z=g.a), "l": Names([g.b, g.c])}, "native"),
        ([g.sparse, {"s": g.sparse}, Pair(g.sparse, g.a)], "flat"),
        ([[], {}, (), collections.OrderedDict()], "native"),
        ([g.a, Frozen([("b", g.b), ("c", (g.c,))])], "structured"),
    ]
    for structure, how in structures:
        hook = ScriptedHook([SessionRunArgs(structure)])
        hooked = HookedSession(g.sess, [hook])
        made = []
        make_callable, from_options = g.sess.make_callable, g.sess._make_callable_from_options
        g.sess.make_callable = _recording(make_callable, made)
        g.sess._make_callable_from_options = _recording(from_options, made)
        for _ in range(3):
            hooked.run(g.step)
        g.sess.make_callable, g.sess._make_callable_from_options = make_callable, from_options
        assert hooked.num_callables == 1
        [fetched] = made
        if how == "native":
            assert isinstance(fetched, config_pb2.CallableOptions), structure
        else:
            leaves = (tf.Tensor, tf.Operation, tf.SparseTensor, str)
            assert all(isinstance(f, leaves) for f in fetched) == (how == "flat"), structure
        expected = _types_and_values(g.sess.run([g.step, structure])[1])
        assert [_types_and_values(r) for r in hook.results] == [expected] * 3
        if isinstance(structure, dict) and "d" in structure:
            assert hook.results[-1]["d"].default_factory is int
