"""add_moving_summary, add_tensor_summary and add_param_summary on real graphs."""
import logging

import numpy as np
import pytest
from support import expected_ema

import tfloop
from tfloop import TowerContext, add_moving_summary, add_param_summary, add_tensor_summary
from tfloop.compat import tf, tfv1
from tfloop.tfutils.summary import MOVING_SUMMARY_OPS_KEY


def run_merged(graph, sess, feed=None):
    with graph.as_default():
        merged = tfv1.summary.merge_all()
    summary = tfv1.Summary.FromString(sess.run(merged, feed))
    return {v.tag: v for v in summary.value}


def test_moving_average_is_bias_corrected_and_updated_by_each_evaluation():
    graph = tf.Graph()
    with graph.as_default():
        x = tfv1.placeholder(tf.float32, [], name="cost")
        count = tfv1.placeholder(tf.int32, [], name="count")
        averages = add_moving_summary(x, [count], decay=0.5)
        assert graph.get_collection(MOVING_SUMMARY_OPS_KEY) == averages
        assert [a.op.name for a in averages] == ["EMA/cost", "EMA/count"]
        assert all(not v.trainable for v in tfv1.global_variables())
        init = tfv1.global_variables_initializer()
    values = [4.0, 2.0, 3.0, -1.0]
    with tfv1.Session(graph=graph) as sess:
        sess.run(init)
        got = [sess.run(averages, {x: v, count: int(v)}) for v in values]
    np.testing.assert_allclose([g[0] for g in got], expected_ema(values, 0.5), rtol=1e-6)
    np.testing.assert_allclose([g[1] for g in got], expected_ema([int(v) for v in values], 0.5),
                               rtol=1e-6)


def test_moving_average_variables_initialize_without_the_model_inputs():
    graph = tf.Graph()
    with graph.as_default():
        x = tfv1.placeholder(tf.float32, [], name="x")
        with tf.control_dependencies([tfv1.assert_positive(x)]):
            average = add_moving_summary(tf.identity(x, name="cost"))[0]
        init = tfv1.global_variables_initializer()
    with tfv1.Session(graph=graph) as sess:
        sess.run(init)
        assert sess.run(average, {x: 3.0}) == pytest.approx(3.0)


def test_only_the_main_training_tower_gets_moving_averages():
    graph = tf.Graph()
    with graph.as_default():
        with TowerContext("tower0", is_training=True, index=0):
            main = add_moving_summary(tf.constant(1.0, name="cost"))
        with TowerContext("tower1", is_training=True, index=1):
            assert add_moving_summary(tf.constant(1.0, name="cost")) == []
        with TowerContext("pred", is_training=False):
            assert add_moving_summary(tf.constant(1.0, name="cost")) == []
        assert [t.op.name for t in graph.get_collection(MOVING_SUMMARY_OPS_KEY)] == ["EMA/cost"]
        assert main[0].op.name == "EMA/cost"


def test_moving_summary_rejects_bad_input():
    graph = tf.Graph()
    with graph.as_default():
        cost = tf.constant(1.0, name="cost")
        with pytest.raises(ValueError, match="scalar tensors; vec:0 has shape"):
            add_moving_summary(tf.zeros([3], name="vec"))
        with pytest.raises(ValueError, match="decay must be a number in"):
            add_moving_summary(cost, decay=1.0)
        with pytest.raises(TypeError, match="takes scalar tensors, got 0.5"):
            add_moving_summary(0.5)
        add_moving_summary(cost)
        with pytest.raises(ValueError, match="named 'cost' already exists"):
            add_moving_summary(cost)


def test_tensor_summary_statistics():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([[0.0, 3.0], [0.0, -4.0]], name="act")
        ops = add_tensor_summary(x, ["histogram", "sparsity", "mean", "rms"])
        assert len(ops) == 4
    with tfv1.Session(graph=graph) as sess:
        values = run_merged(graph, sess)
    assert sorted(values) == ["act-histogram", "act-mean", "act-rms", "act-sparsity"]
    assert values["act-sparsity"].simple_value == pytest.approx(0.5)
    assert values["act-mean"].simple_value == pytest.approx(-0.25)
    assert values["act-rms"].simple_value == pytest.approx(np.sqrt(25 / 4))
    assert values["act-histogram"].histo.num == 4


def test_scalar_type_summarizes_a_scalar_under_tensorpacks_tag():
    # tensorpack: add_tensor_summary(x, ['scalar']) is tf.summary.scalar('<name>-summary', x).
    graph = tf.Graph()
    with graph.as_default():
        loss = tf.constant(2.5, name="loss")
        steps = tf.constant(7, name="steps")
        add_tensor_summary(loss, ["scalar", "rms"])
        add_tensor_summary(steps, ["scalar"], name="count")
        with pytest.raises(ValueError, match=r"'scalar' summarizes a scalar tensor, and vec:0 "
                                             r"has shape \(2,\); use 'mean'"):
            add_tensor_summary(tf.constant([1.0, 2.0], name="vec"), ["scalar"])
    with tfv1.Session(graph=graph) as sess:
        values = run_merged(graph, sess)
    assert sorted(values) == ["count-summary", "loss-rms", "loss-summary"]
    assert values["loss-summary"].simple_value == 2.5
    assert values["count-summary"].simple_value == 7.0


def test_tensor_summary_in_towers_and_bad_types():
    graph = tf.Graph()
    with graph.as_default():
        with TowerContext("tower0", is_training=True, index=0):
            x = tf.constant([1.0], name="logits")
            assert [op.name for op in add_tensor_summary(x, "mean")] == ["logits-mean:0"]
        with TowerContext("tower1", is_training=True, index=1):
            assert add_tensor_summary(tf.constant([1.0]), ["mean"]) == []
        with pytest.raises(ValueError,
                           match="histogram, mean, rms, scalar, sparsity; got \\['median'\\]"):
            add_tensor_summary(x, ["median"])
        with pytest.raises(TypeError, match="needs a tf.Tensor"):
            add_tensor_summary([1.0], ["mean"])


class _Messages(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_param_summary_matches_whole_variable_names():
    graph = tf.Graph()
    handler = _Messages()
    logging.getLogger("tfloop").addHandler(handler)
    try:
        with graph.as_default():
            tfv1.get_variable("w", initializer=tf.constant([1.0, -1.0]))
            tfv1.get_variable("w2", initializer=tf.constant([2.0]))
            tfv1.get_variable("fc/b", initializer=tf.constant([0.0, 0.0, 3.0]))
            tfv1.get_variable("step", initializer=0, trainable=False)
            add_param_summary(("w", ["histogram"]), (".*/b", ["sparsity", "histogram"]),
                              ("w", ["rms"]), ("conv.*", ["mean"]))
            init = tfv1.global_variables_initializer()
        with tfv1.Session(graph=graph) as sess:
            sess.run(init)
            values = run_merged(graph, sess)
    finally:
        logging.getLogger("tfloop").removeHandler(handler)
    assert sorted(values) == ["param-summary/fc/b-histogram", "param-summary/fc/b-sparsity",
                              "param-summary/w-histogram", "param-summary/w-rms"]
    assert values["param-summary/fc/b-sparsity"].simple_value == pytest.approx(2 / 3)
    assert values["param-summary/w-rms"].simple_value == pytest.approx(1.0)
    assert handler.messages == ["add_param_summary: regex 'conv.*' matches no trainable variable; "
                                "they are: w, w2, fc/b."]


def test_param_summary_rejects_bad_pairs_and_skips_other_towers():
    graph = tf.Graph()
    with graph.as_default():
        tfv1.get_variable("w", [2])
        with pytest.raises(ValueError, match="takes \\(regex, types\\) pairs"):
            add_param_summary("w")
        with pytest.raises(ValueError, match="invalid regex 'w\\('"):
            add_param_summary(("w(", ["mean"]))
        with TowerContext("pred", is_training=False):
            assert add_param_summary(("w", ["mean"])) == []
        assert tfv1.get_collection(tfv1.GraphKeys.SUMMARIES) == []


def test_public_names():
    assert tfloop.add_moving_summary is add_moving_summary
    assert tfloop.MOVING_SUMMARY_OPS_KEY == "MOVING_SUMMARY_OPS"


def test_activation_summary_adds_sparsity_rms_histogram_in_the_main_tower(log_warnings):
    from tfloop.tfutils.summary import add_activation_summary
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([[0.0, 3.0], [0.0, 4.0]], name="act")
        with TowerContext("", is_training=True):
            ops = add_activation_summary(x)
        with TowerContext("tower1", is_training=True, index=1):
            assert add_activation_summary(x) == []
        assert add_activation_summary(tf.constant(1.0, name="scalar")) == []
    assert len(ops) == 3
    with tfv1.Session(graph=graph) as sess:
        values = run_merged(graph, sess)
    assert sorted(values) == ["act-histogram", "act-rms", "act-sparsity"]
    assert values["act-sparsity"].simple_value == 0.5
    np.testing.assert_allclose(values["act-rms"].simple_value, np.sqrt(25 / 4), rtol=1e-6)
    assert log_warnings == ["add_activation_summary: scalar:0 has rank 0; activations of rank >= 2 "
                            "are summarized, use add_tensor_summary for others."]
