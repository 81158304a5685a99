"""What a training step's graph computes: ancestors, the gradients' path, colocation, and the
variable reads a tensor adds to the training op."""
import pytest

from tfloop.compat import tf, tfv1
from tfloop.tfutils.step_graph import (
    ancestors,
    colocate_gradients,
    ops_between,
    variable_reads_beyond,
)


def variable(name, shape=(3,)):
    return tfv1.get_variable(name, list(shape), initializer=tfv1.zeros_initializer())


def test_ancestors_follow_data_and_control_inputs():
    with tf.Graph().as_default():
        a = tf.constant(1.0, name="a")
        b = tf.identity(a, name="b")
        with tf.control_dependencies([b]):
            c = tf.constant(2.0, name="c")
        d = tf.add(c, 1.0, name="d")
        assert {op.name for op in ancestors([d])} == {"a", "b", "c", "d", "d/y"}
        assert {op.name for op in ancestors([d], control_inputs=False)} == {"c", "d", "d/y"}
        assert {op.name for op in ancestors([b.op, c])} == {"a", "b", "c"}


def test_ops_between_are_those_the_gradients_go_through():
    with tf.Graph().as_default():
        w, other = variable("w"), variable("other")
        s = tfv1.placeholder(tf.float32, [], name="s")
        cost = tf.reduce_sum(w * s, name="cost") + tf.reduce_sum(other)
        between = {op.name for op in ops_between([w], cost)}
        assert {"w", "mul", "cost"} <= between
        assert not {"s", "other", "Sum"} & between      # other's branch is not w's path
        assert ops_between([variable("unused")], cost) == set()


def test_gradients_are_colocated_only_when_the_model_placed_an_op_on_their_path():
    with tf.Graph().as_default():
        w, v = variable("w"), variable("v")
        plain = tf.reduce_sum(w * 2.0)
        assert colocate_gradients(plain, [w]) is False
        with tf.device("/cpu:0"):
            placed = tf.reduce_sum(v * 2.0)
        assert colocate_gradients(placed, [v]) is True
        # A placed op that the gradients with respect to w do not go through does not count.
        assert colocate_gradients(plain + placed, [w]) is False


def test_a_cost_linear_in_the_variables_reads_them_beyond_the_update():
    with tf.Graph().as_default():
        w = variable("w")
        s = tfv1.placeholder(tf.float32, [], name="s")
        cost = tf.reduce_sum(w * s, name="cost")
        train_op = tfv1.train.GradientDescentOptimizer(0.1).minimize(cost)
        assert [op.name for op in variable_reads_beyond(cost, train_op)] == ["mul"]


def test_a_loss_whose_gradient_needs_its_inputs_reads_nothing_beyond_the_update():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 3])
        y = tfv1.placeholder(tf.float32, [None])
        w = variable("w", (3, 1))
        cost = tf.reduce_mean(tf.square(tf.squeeze(tf.matmul(x, w), 1) - y))
        train_op = tfv1.train.GradientDescentOptimizer(0.1).minimize(cost)
        assert variable_reads_beyond(cost, train_op) == []


def test_a_reference_variable_read_counts_too():
    with tf.Graph().as_default():
        w = tfv1.Variable(tf.zeros([3]), use_resource=False, name="w")
        s = tfv1.placeholder(tf.float32, [], name="s")
        cost = tf.reduce_sum(w * s)
        train_op = tfv1.train.GradientDescentOptimizer(0.1).minimize(cost)
        assert [op.type for op in variable_reads_beyond(cost, train_op)] == ["Mul"]


def test_bad_targets_are_a_type_error():
    with pytest.raises(TypeError, match="tf.Tensor, tf.Variable or tf.Operation, got 3"):
        ancestors([3])
