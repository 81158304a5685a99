"""custom_getter_scope, remap_variables and freeze_variables on real graphs."""
import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils.varreplace import custom_getter_scope, freeze_variables, remap_variables


def test_remap_variables_applies_the_function_to_each_use():
    with tf.Graph().as_default():
        with remap_variables(lambda v: v * 2.0):
            w = tfv1.get_variable("w", initializer=3.0)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            assert sess.run(w) == 6.0


def test_custom_getter_scope_keeps_the_scopes():
    seen = []

    def getter(getter, name, *args, **kwargs):
        seen.append(name)
        return getter(name, *args, **kwargs)

    with tf.Graph().as_default(), tfv1.variable_scope("block"):
        with custom_getter_scope(getter):
            v = tfv1.get_variable("W", [2])
    assert seen == ["block/W"] and v.op.name == "block/W"


def test_freeze_variables_by_collection_or_stop_gradient():
    with tf.Graph().as_default():
        with freeze_variables(stop_gradient=False, skip_collection=True):
            frozen = tfv1.get_variable("frozen", initializer=1.0)
        with freeze_variables(stop_gradient=True):
            stopped = tfv1.get_variable("stopped", initializer=1.0)
        trained = tfv1.get_variable("trained", initializer=1.0)
        assert [v.op.name for v in tfv1.trainable_variables()] == ["stopped", "trained"]
        assert tfv1.get_collection(tfv1.GraphKeys.MODEL_VARIABLES) == [frozen]
        cost = frozen * stopped * trained
        grads = tf.gradients(cost, [tfv1.trainable_variables()[0], trained])
        assert grads[0] is None
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            np.testing.assert_allclose(sess.run(grads[1]), 1.0)
