"""as_run_args: what a callback's _before_run returns, as the SessionRunArgs of the step."""
import collections

import numpy as np
import pytest
from support import dataset_fn, make_regression_data, train_linear

import tfloop
from tfloop import Callback
from tfloop.callbacks.run_args import as_run_args
from tfloop.compat import tf, tfv1


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0, name="cost")
        tf.constant(2.0, name="accuracy")
        tf.no_op(name="update")
    return g


def test_nothing_to_run_is_none(graph):
    assert as_run_args(None, graph, "Cb") is None


def test_names_are_looked_up_in_lists_tuples_and_dicts(graph):
    cost, acc = graph.get_tensor_by_name("cost:0"), graph.get_tensor_by_name("accuracy:0")
    update = graph.get_operation_by_name("update")
    assert as_run_args(["cost", acc], graph, "Cb").fetches == [cost, acc]
    assert as_run_args(["cost:0", "update"], graph, "Cb").fetches == [cost, update]
    assert as_run_args({"a": ["accuracy"]}, graph, "Cb").fetches == {"a": [acc]}
    args = as_run_args(tfv1.train.SessionRunArgs(["cost"], {acc: 3.0}), graph, "Cb")
    assert (args.fetches, args.feed_dict) == ([cost], {acc: 3.0})


def test_a_resolved_answer_is_passed_on_without_a_copy(graph):
    fetches = [graph.get_tensor_by_name("cost:0")]
    assert as_run_args(fetches, graph, "Cb").fetches is fetches
    given = tfv1.train.SessionRunArgs(fetches)
    assert as_run_args(given, graph, "Cb") is given


def test_something_unfetchable_names_the_callback(graph):
    with pytest.raises(TypeError, match=r"^Cb._before_run returned 1\.5 \(float\); return None, "
                                        r"a tensor/op/name"):
        as_run_args(["cost", [1.5]], graph, "Cb")


Pair = collections.namedtuple("Pair", ["cost", "step"])


def test_containers_keep_their_types_names_resolved_inside(graph):
    cost, acc = graph.get_tensor_by_name("cost:0"), graph.get_tensor_by_name("accuracy:0")
    update = graph.get_operation_by_name("update")
    fetches = as_run_args(
        [Pair("cost", acc), ("update",), collections.OrderedDict(b="cost", a=[("accuracy",)]),
         collections.defaultdict(list, {"u": "update"})], graph, "Cb").fetches
    assert fetches == [Pair(cost, acc), (update,),
                       collections.OrderedDict(b=cost, a=[(acc,)]), {"u": update}]
    assert [type(f) for f in fetches] == [Pair, tuple, collections.OrderedDict,
                                          collections.defaultdict]
    assert list(fetches[2]) == ["b", "a"] and fetches[3].default_factory is list
    assert type(fetches[2]["a"][0]) is tuple


def _structure_of(value):
    """The containers (their exact types, a named tuple's fields) and leaf values of a result."""
    if isinstance(value, tfv1.SparseTensorValue):
        return "sparse", [np.asarray(v).tolist() for v in value]
    if isinstance(value, dict):
        return type(value), [(k, _structure_of(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return type(value), getattr(value, "_fields", None), [_structure_of(v) for v in value]
    return "leaf", None if value is None else np.asarray(value).tolist()


class StructureFetcher(Callback):
    """Asks for the structure ``make(self)`` at every step (of its constants ``one`` = 1.0 and
    ``two`` = 2, which it gives by name, a sparse tensor and an op), optionally with RunOptions,
    and keeps the results ``after_run`` got."""

    _chief_only = False

    def __init__(self, make, options=None):
        self.make = make
        self.options = options
        self.got = []

    def _setup_graph(self):
        self.one = tf.constant(1.0)
        self.two = tf.constant(2).name
        self.sparse = tf.SparseTensor(indices=[[0, 1]], values=[7], dense_shape=[2, 2])
        self.nothing = tf.no_op()

    def _before_run(self, ctx):
        fetches = self.make(self)
        if self.options is None:
            return fetches
        return tfv1.train.SessionRunArgs(fetches, options=self.options)

    def _after_run(self, ctx, values):
        self.got.append(values.results)


SPARSE = tfv1.SparseTensorValue([[0, 1]], [7], [2, 2])
STRUCTURES = {
    "named tuple": (lambda cb: Pair(cb.one, cb.two), Pair(1.0, 2)),
    "tuple": (lambda cb: (cb.one, cb.two), (1.0, 2)),
    "ordered dict": (lambda cb: collections.OrderedDict(z=cb.one, a=cb.two),
                     collections.OrderedDict(z=1.0, a=2)),
    "nested mix": (lambda cb: {"p": [Pair(cb.one, (cb.sparse, cb.nothing))],
                               "o": collections.OrderedDict(s=(cb.two,))},
                   {"p": [Pair(1.0, (SPARSE, None))], "o": collections.OrderedDict(s=(2,))}),
    "list and dict": (lambda cb: [cb.one, {"s": cb.two}], [1.0, {"s": 2}]),
}


@pytest.mark.parametrize("path", ["cached callable", "feeds", "run options"])
def test_after_run_gets_its_results_in_the_structure_it_asked_for(path):
    """Through a training: the cached callable (a dataset, nothing fed), Session.run with feeds
    (FeedInput) and Session.run with RunOptions all answer in the structure asked for."""
    options = tfv1.RunOptions(report_tensor_allocations_upon_oom=True) \
        if path == "run options" else None
    fetchers = {name: StructureFetcher(make, options) for name, (make, _) in STRUCTURES.items()}
    x, y = make_regression_data(12)
    data = None if path == "feeds" else tfloop.DatasetInput(dataset_fn(x, y, 4))
    train_linear(list(fetchers.values()), data=data, max_epoch=2)
    for name, fetcher in fetchers.items():
        expected = _structure_of(STRUCTURES[name][1])
        assert [_structure_of(got) for got in fetcher.got] == [expected] * 6, name
    assert fetchers["named tuple"].got[-1].step == 2
