"""as_run_args: what a callback's _before_run returns, as the SessionRunArgs of the step."""
import pytest

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
    assert as_run_args(("cost:0", "update"), graph, "Cb").fetches == [cost, update]
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
