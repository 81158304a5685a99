"""auto_reuse_variable_scope, under_name_scope, under_variable_scope and cached_name_scope."""
import pytest

from tfloop.compat import tf, tfv1
from tfloop.tfutils.scope_utils import (
    auto_reuse_variable_scope,
    cached_name_scope,
    under_name_scope,
    under_variable_scope,
)


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_auto_reuse_shares_variables_per_variable_scope(graph):
    @auto_reuse_variable_scope
    def layer(x):
        return x * tfv1.get_variable("W", [], initializer=tfv1.ones_initializer())

    layer(1.0)
    layer(2.0)
    with tfv1.variable_scope("other"):
        layer(3.0)
        layer(4.0)
    assert [v.op.name for v in tfv1.global_variables()] == ["W", "other/W"]


def test_auto_reuse_starts_afresh_in_a_new_graph(graph):
    @auto_reuse_variable_scope
    def layer():
        return tfv1.get_variable("W", [])

    layer()
    with tf.Graph().as_default():
        layer()
        assert [v.op.name for v in tfv1.global_variables()] == ["W"]


def test_under_name_scope_uses_the_function_name_the_decorator_or_the_call(graph):
    @under_name_scope()
    def rms(x):
        return tf.sqrt(x, name="out")

    @under_name_scope("fixed")
    def other(x):
        return tf.sqrt(x, name="out")

    assert rms(tf.constant(4.0)).op.name == "rms/out"
    assert other(tf.constant(4.0)).op.name == "fixed/out"
    assert rms(tf.constant(4.0), name_scope="mine").op.name == "mine/out"
    assert rms(tf.constant(4.0), name_scope="mine").op.name == "mine/out_1"


def test_under_name_scope_warns_when_the_name_is_taken(graph, log_warnings):
    @under_name_scope()
    def f(x):
        return tf.identity(x, name="out")

    with tfv1.name_scope(None):
        tf.constant(1.0, name="taken")
    assert f(tf.constant(1.0), name_scope="taken").op.name == "taken_1/out"
    assert log_warnings == ["f was called with name_scope='taken' but runs under 'taken_1': the "
                            "name 'taken' is taken."]


def test_under_variable_scope(graph):
    @under_variable_scope()
    def head():
        return tfv1.get_variable("W", [])

    assert head().op.name == "head/W"


def test_cached_name_scope_reenters_the_same_scope(graph):
    with cached_name_scope("summaries") as first:
        a = tf.constant(1.0, name="a")
    with tfv1.name_scope("tower0"):
        with cached_name_scope("summaries") as second:
            b = tf.constant(1.0, name="b")
        with cached_name_scope("inner", top_level=False) as nested:
            c = tf.constant(1.0, name="c")
    assert first == second == "summaries/"
    assert (a.op.name, b.op.name, c.op.name) == ("summaries/a", "summaries/b", "tower0/inner/c")
    assert nested == "tower0/inner/"
