"""Towers: contexts, variable sharing, and finding a tower's tensors by name."""
import pytest
from support import LinearModel, train_linear

import tfloop
from tfloop.compat import tf, tfv1


def build_two_towers():
    model = LinearModel()
    graph = tf.Graph()
    with graph.as_default():
        signature = model.get_input_signature()
        func = tfloop.TowerFunc(model.build_graph, signature)
        inputs = [tfv1.placeholder(s.dtype, s.shape) for s in signature]
        with tfloop.TowerContext("", is_training=True):
            func(*inputs)
        with tfloop.TowerContext("InferenceTower", is_training=False):
            assert not tfloop.get_current_tower_context().is_training
            func(*inputs)
    return graph, func


def test_inference_tower_shares_variables_and_has_its_own_names():
    graph, func = build_two_towers()
    assert len(graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)) == 1
    train, infer = func.towers.training(), func.towers.inference()
    assert len(train) == 1 and len(infer) == 1
    assert train[0]["cost"].name == "cost:0"
    assert infer[0]["cost"].name == "InferenceTower/cost:0"
    assert func.towers["InferenceTower"] is infer[0]


def test_unknown_tensor_in_a_tower():
    _, func = build_two_towers()
    with pytest.raises(KeyError, match="No tensor named 'nope' in tower 'InferenceTower'"):
        func.towers.inference()[0].get_tensor("nope")


def test_no_tower_context_outside_and_nesting_is_an_error():
    assert tfloop.get_current_tower_context() is None
    with tf.Graph().as_default():
        with tfloop.TowerContext("a", is_training=True):
            with pytest.raises(ValueError, match="cannot be nested"):
                with tfloop.TowerContext("b", is_training=False):
                    pass
    assert tfloop.get_current_tower_context() is None


def test_total_counts_the_training_towers():
    assert tfloop.TowerContext("", is_training=True).total == 1
    ctx = tfloop.TowerContext("tower1", is_training=True, vs_name="tower1", index=1, total=2)
    assert (ctx.index, ctx.total, ctx.is_main_training_tower) == (1, 2, False)
    with pytest.raises(ValueError, match="total .* must be a positive int, got 0"):
        tfloop.TowerContext("tower0", is_training=True, total=0)
    with pytest.raises(ValueError, match="index 2 is not the index of one of total=2 towers"):
        tfloop.TowerContext("tower2", is_training=True, index=2, total=2)
    with pytest.raises(TypeError):
        tfloop.TowerContext("tower0", True, "", 0, 2)     # total is keyword only


def test_tower_function_arity_is_checked():
    specs = LinearModel().get_input_signature()
    with pytest.raises(TypeError, match="takes \\(x\\) but the model declares 2 inputs"):
        tfloop.TowerFunc(lambda x: x, specs)


def test_callbacks_find_tensors_in_the_training_tower():
    found = []

    class Find(tfloop.Callback):
        def _setup_graph(self):
            found.extend(t.name for t in self.get_tensors_maybe_in_tower(["pred", "cost:0"]))

    trainer = train_linear([Find()], max_epoch=1)
    assert found == ["pred:0", "cost:0"]
    assert trainer.towers.training()[0].is_training


def test_the_model_input_names_mean_each_towers_own_inputs():
    graph = tf.Graph()
    model = LinearModel()
    with graph.as_default():
        signature = model.get_input_signature()
        func = tfloop.TowerFunc(model.build_graph, signature)
        train_inputs = [tfv1.placeholder(s.dtype, s.shape, name="batch_" + s.name)
                        for s in signature]
        infer_inputs = [tfv1.placeholder(s.dtype, s.shape) for s in signature]
        with tfloop.TowerContext("", is_training=True):
            func(*train_inputs)
        with tfloop.TowerContext("InferenceTower", is_training=False):
            func(*infer_inputs)
    train, infer = func.towers.training()[0], func.towers.inference()[0]
    for i, spec in enumerate(signature):
        assert train[spec.name] is train_inputs[i]
        assert infer[spec.name] is infer[spec.name + ":0"] is infer_inputs[i]


def test_an_inferencer_fetches_the_label_of_the_inference_tower():
    import numpy as np

    class MeanAbsError(tfloop.Inferencer):
        def _get_fetches(self):
            return ["pred", "y"]

        def _before_inference(self):
            self.total, self.count = 0.0, 0

        def _on_fetches(self, results):
            pred, y = results
            self.total += float(np.abs(pred - y).sum())
            self.count += len(y)

        def _after_inference(self):
            return {"val-mae": self.total / self.count}

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = x.sum(1)
    val = tf.data.Dataset.from_tensor_slices((x, y)).batch(3)
    class RecordWeights(tfloop.Callback):
        def _trigger(self):
            w, = [v for v in tfv1.global_variables() if v.op.name == "w"]
            self.w = self.trainer.sess.run(w)

    weights = RecordWeights()
    trainer = train_linear([tfloop.InferenceRunner(val, [MeanAbsError()]), weights], max_epoch=1)
    expected = np.abs(x @ weights.w.reshape(3) - y).mean()
    assert trainer.monitors.get_history("val-mae") == [
        (trainer.global_step, pytest.approx(expected, rel=1e-5))]
