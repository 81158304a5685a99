"""Gradient processors: the variables after one SGD step, recomputed with numpy."""
import numpy as np
import pytest

from tfloop.compat import tf, tfv1
from tfloop.tfutils import gradproc
from tfloop.tfutils.optimizer import apply_grad_processors
from tfloop.tfutils.summary import MOVING_SUMMARY_OPS_KEY

W0 = np.array([1.0, -2.0, 3.0], np.float32)
B0 = np.array([0.5, 0.25], np.float32)
# cost = sum(GW * w) + sum(GB * b): the gradients are GW and GB whatever the values.
GW = np.array([3.0, 0.0, -4.0], np.float32)
GB = np.array([1.0, 2.0], np.float32)
LR = 0.5


def one_step(procs, extra_cost=None):
    """Build w, b (and an unused variable u) and a cost with gradients GW, GB; apply one SGD step
    through ``procs``; return {name: value after the step} and the graph."""
    graph = tf.Graph()
    with graph.as_default():
        w = tfv1.get_variable("layer/w", initializer=W0)
        b = tfv1.get_variable("layer/b", initializer=B0)
        tfv1.get_variable("unused", initializer=np.float32(1.0))
        cost = tf.reduce_sum(GW * w) + tf.reduce_sum(GB * b)
        if extra_cost is not None:
            cost = cost + extra_cost(w)
        opt = apply_grad_processors(tfv1.train.GradientDescentOptimizer(LR), procs)
        grads = opt.compute_gradients(cost)
        train_op = opt.apply_gradients(grads)
        with tfv1.Session(graph=graph) as sess:
            sess.run(tfv1.global_variables_initializer())
            sess.run(train_op)
            values = {v.op.name: sess.run(v) for v in tfv1.global_variables()}
    return values, graph


def test_global_norm_clip_scales_all_gradients_by_the_global_norm():
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False), gradproc.GlobalNormClip(2.0)])
    norm = np.sqrt(np.sum(GW ** 2) + np.sum(GB ** 2))
    scale = 2.0 / norm
    np.testing.assert_allclose(values["layer/w"], W0 - LR * GW * scale, rtol=1e-6)
    np.testing.assert_allclose(values["layer/b"], B0 - LR * GB * scale, rtol=1e-6)


def test_global_norm_clip_leaves_small_gradients_alone():
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False), gradproc.GlobalNormClip(100)])
    np.testing.assert_allclose(values["layer/w"], W0 - LR * GW, rtol=1e-6)


def test_filter_none_grad_warns_with_the_variable_names(log_warnings):
    values, _ = one_step([gradproc.FilterNoneGrad()])
    assert values["unused"] == 1.0
    assert log_warnings == ["No gradient w.r.t. 1 trainable variable(s): unused."]


def test_map_gradient_one_argument_matches_whole_names_only():
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False),
                          gradproc.MapGradient(lambda g: g * 3.0, regex="layer/w")])
    np.testing.assert_allclose(values["layer/w"], W0 - LR * 3 * GW, rtol=1e-6)
    np.testing.assert_allclose(values["layer/b"], B0 - LR * GB, rtol=1e-6)
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False),
                          gradproc.MapGradient(lambda g: g * 3.0, regex="layer")])
    np.testing.assert_allclose(values["layer/w"], W0 - LR * GW, rtol=1e-6)


def test_map_gradient_two_arguments_sees_the_variable_and_none_drops_the_update():
    def weight_decay(grad, var):
        return None if var.op.name.endswith("b") else grad + 0.1 * var

    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False),
                          gradproc.MapGradient(weight_decay)])
    np.testing.assert_allclose(values["layer/w"], W0 - LR * (GW + 0.1 * W0), rtol=1e-6)
    np.testing.assert_array_equal(values["layer/b"], B0)


def test_map_gradient_warns_when_nothing_matches(log_warnings):
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False),
                          gradproc.MapGradient(lambda g: 0 * g, regex="nothing")])
    np.testing.assert_allclose(values["layer/w"], W0 - LR * GW, rtol=1e-6)
    assert log_warnings == ["[MapGradient] No variable matches the regex 'nothing'."]


def test_scale_gradient_first_matching_regex_wins_and_zero_freezes(log_lines):
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False),
                          gradproc.ScaleGradient([(".*/b", 0.0), ("layer/.*", 0.25)])])
    np.testing.assert_array_equal(values["layer/b"], B0)
    np.testing.assert_allclose(values["layer/w"], W0 - LR * 0.25 * GW, rtol=1e-6)
    assert "Gradient of 'layer/w' is multiplied by 0.25." in log_lines
    assert "Gradient of 'layer/b' is multiplied by 0.0." in log_lines


def test_scale_gradient_takes_a_single_pair():
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False),
                          gradproc.ScaleGradient(("layer/w", 2.0), verbose=False)])
    np.testing.assert_allclose(values["layer/w"], W0 - LR * 2 * GW, rtol=1e-6)


def test_check_gradient_names_the_variable_with_a_nan_gradient():
    with pytest.raises(tf.errors.InvalidArgumentError, match="CheckGradient/layer/w"):
        one_step([gradproc.FilterNoneGrad(verbose=False), gradproc.CheckGradient()],
                 extra_cost=lambda w: tf.reduce_sum(tf.sqrt(w - 10.0)))


def test_check_gradient_passes_finite_gradients():
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False), gradproc.CheckGradient()])
    np.testing.assert_allclose(values["layer/w"], W0 - LR * GW, rtol=1e-6)


def test_summary_gradient_adds_a_histogram_and_the_rms_moving_average():
    proc = gradproc.SummaryGradient(regex="layer/w")
    _, graph = one_step([gradproc.FilterNoneGrad(verbose=False), proc])
    with graph.as_default():
        tags = [op.name for op in graph.get_operations() if op.type == "HistogramSummary"]
        averages = tfv1.get_collection(MOVING_SUMMARY_OPS_KEY)
    assert tags == ["SummaryGradient/layer/w-grad"]
    assert [a.op.name for a in averages] == ["EMA/SummaryGradient/layer/w/rms"]
    with tfv1.Session(graph=graph) as sess:
        sess.run(tfv1.global_variables_initializer())
        np.testing.assert_allclose(sess.run(averages[0]), np.sqrt(np.mean(GW ** 2)), rtol=1e-6)


def test_print_gradient_prints_each_matching_gradient(capfd):
    values, _ = one_step([gradproc.FilterNoneGrad(verbose=False),
                          gradproc.PrintGradient("layer/b")])
    np.testing.assert_allclose(values["layer/b"], B0 - LR * GB, rtol=1e-6)
    err = capfd.readouterr().err
    assert "layer/b-grad: shape [2] mean 1.5 rms" in err
    assert "layer/w-grad" not in err


def test_process_reuses_its_name_scope():
    proc = gradproc.GlobalNormClip(1.0)
    with tf.Graph().as_default():
        v = tfv1.get_variable("v", initializer=1.0)
        first = proc.process([(tf.constant(2.0), v)])
        second = proc.process([(tf.constant(2.0), v)])
    assert first[0][0].name.startswith("GlobalNormClip/")
    assert second[0][0].name.startswith("GlobalNormClip/")


@pytest.mark.parametrize("make, message", [
    (lambda: gradproc.GlobalNormClip(0), "global_norm must be a number > 0"),
    (lambda: gradproc.MapGradient(lambda a, b, c: a), "must take 1 argument"),
    (lambda: gradproc.MapGradient("not callable"), "func must be callable"),
    (lambda: gradproc.MapGradient(lambda g: g, regex="("), "invalid regex"),
    (lambda: gradproc.ScaleGradient([("w", "two")]), r"\(regex, multiplier\) pairs"),
    (lambda: gradproc.ScaleGradient(("w", 2.0), verbose="yes"), "verbose must be True or False"),
])
def test_bad_arguments_are_refused_early(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()


def test_process_refuses_what_is_not_a_list_of_pairs():
    with tf.Graph().as_default(), \
            pytest.raises(TypeError, match="list of \\(gradient, variable\\) pairs"):
        gradproc.FilterNoneGrad().process([tf.constant(1.0)])
