"""OfflinePredictor: from every kind of session_init, any batch size, threads, and bad input."""
import threading

import numpy as np
import pytest
from support import TRUE_W, LinearModel, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1

W = np.array([[0.5], [-1.0], [2.0]], np.float32)


class ScaledModel(LinearModel):
    """LinearModel with a bias and a constant subgraph (``scale``), and a few named tensors."""

    def build_graph(self, x, y):
        w = tfv1.get_variable("w", [3, 1], initializer=tfv1.zeros_initializer())
        b = tfv1.get_variable("b", [], initializer=tfv1.zeros_initializer())
        scale = tf.sqrt(tf.constant(4.0)) / 2.0
        hidden = tf.identity(tf.matmul(x, w) * scale, name="hidden")
        pred = tf.squeeze(hidden, 1) + b
        pred = tf.identity(pred, name="pred")
        tf.identity(pred * 2.0, name="double")
        return tf.reduce_mean(tf.square(pred - y), name="cost")


def config(session_init, **kwargs):
    kwargs.setdefault("input_names", ["x"])
    kwargs.setdefault("output_names", ["pred"])
    return tfloop.PredictConfig(model=ScaledModel(), session_init=session_init, **kwargs)


def expected(x, w=W, b=0.25):
    return (x @ w)[:, 0] + b


@pytest.fixture
def trained(logdir):
    """A log dir with checkpoints of a trained LinearModel, and the trainer's final weights."""
    train_linear(callbacks=[tfloop.ModelSaver()], max_epoch=2)
    return logdir, tfloop.load_chkpt_vars(logdir)["w"]


def test_dict_session_init_predicts_any_batch_size_in_output_order():
    predictor = tfloop.OfflinePredictor(config({"w": W, "b": 0.25},
                                               output_names=["double", "pred"]))
    for n in (1, 7, 300):
        x, _ = make_regression_data(n)
        double, pred = predictor(x)
        assert pred.shape == (n,)
        np.testing.assert_allclose(pred, expected(x), rtol=1e-6)
        np.testing.assert_allclose(double, 2 * expected(x), rtol=1e-6)


@pytest.mark.parametrize("kind", ["logdir", "prefix", "smartinit", "npz"])
def test_checkpoint_session_inits_load_the_trained_weights(trained, kind, tmp_path):
    logdir, w = trained
    ckpt = tfloop.get_checkpoint_path(logdir)
    source = {"logdir": logdir, "prefix": ckpt, "smartinit": tfloop.SmartInit(logdir)}.get(kind)
    if kind == "npz":
        source = str(tmp_path / "weights.npz")
        np.savez(source, **tfloop.load_chkpt_vars(ckpt))
    predictor = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=LinearModel(), session_init=source, output_names=["pred"], input_names=["x"]))
    x, _ = make_regression_data(5)
    np.testing.assert_allclose(predictor(x)[0], (x @ w)[:, 0], rtol=1e-6)
    assert not np.allclose(w, 0)


def test_default_input_names_are_the_model_inputs_and_return_input():
    cfg = tfloop.PredictConfig(model=ScaledModel(), session_init={"w": W, "b": 0.0},
                               output_names=["cost"], return_input=True)
    assert cfg.input_names == ["x", "y"]
    x, y = make_regression_data(6)
    inputs, (cost,) = tfloop.OfflinePredictor(cfg)(x, y)
    assert inputs[0] is x
    np.testing.assert_allclose(cost, np.mean((expected(x, b=0.0) - y) ** 2), rtol=1e-5)


def test_any_tensor_of_the_graph_can_be_an_input():
    predictor = tfloop.OfflinePredictor(config({"w": W, "b": 0.25}, input_names=["hidden"]))
    hidden = np.array([[1.0], [2.0]], np.float32)
    np.testing.assert_allclose(predictor(hidden)[0], [1.25, 2.25])


def test_inputs_are_cast_within_their_kind():
    predictor = tfloop.OfflinePredictor(config({"w": W, "b": 0.25}))
    x, _ = make_regression_data(3)
    np.testing.assert_allclose(predictor(x.astype(np.float64))[0], expected(x), rtol=1e-6)
    np.testing.assert_allclose(predictor(x.tolist())[0], expected(x), rtol=1e-6)


def test_threads_share_one_predictor():
    predictor = tfloop.OfflinePredictor(config({"w": W, "b": 0.25}))
    rng = np.random.RandomState(1)
    data = [rng.randn(rng.randint(1, 50), 3).astype(np.float32) for _ in range(8)]
    results, errors = [None] * len(data), []

    def work(i):
        try:
            for _ in range(20):
                results[i] = predictor(data[i])[0]
        except (ValueError, TypeError, RuntimeError, tf.errors.OpError) as e:
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(data))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for x, got in zip(data, results):
        np.testing.assert_allclose(got, expected(x), rtol=1e-6)


def test_a_fresh_inference_graph_creates_its_variables():
    graph = tf.Graph()
    with graph.as_default():
        x = tfv1.placeholder(tf.float32, [None, 3])
        with tfloop.TowerContext("", is_training=False):
            tfv1.get_variable("w", [3, 1])
            with tfv1.variable_scope("", reuse=tfv1.AUTO_REUSE):
                assert tfv1.get_variable("w", [3, 1]) is tfv1.global_variables()[0]
        with tfloop.TowerContext("again", is_training=False):
            with pytest.raises(ValueError, match="does not exist"):
                tfv1.get_variable("v", [1])
        assert x.graph is graph


def test_unknown_names_list_close_matches():
    with pytest.raises(KeyError, match="output_names: no tensor named 'prd'.*Close matches: pred"):
        tfloop.OfflinePredictor(config({"w": W, "b": 0.0}, output_names=["prd"]))
    with pytest.raises(KeyError, match="input_names: no tensor named 'xx'.*Close matches: x"):
        tfloop.OfflinePredictor(config({"w": W, "b": 0.0}, input_names=["xx"]))


def test_checkpoint_of_another_model_lists_missing_and_unexpected(trained):
    logdir, _ = trained
    with pytest.raises(ValueError, match=r"\(.*/model-6\) does not hold 1 variable\(s\) of the "
                                         r"model: b\. It holds .* that the model does not have"):
        tfloop.OfflinePredictor(config(logdir))
    with pytest.raises(ValueError, match="does not hold 2 variable.*: b, w. It holds v that"):
        tfloop.OfflinePredictor(config({"v": 1.0}))


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="No complete checkpoint in directory"):
        tfloop.OfflinePredictor(config(str(tmp_path)))


def test_no_session_init_warns(log_warnings):
    tfloop.OfflinePredictor(config(None))
    assert any("keep their initial values" in m for m in log_warnings)


def test_wrong_shape_dtype_or_count_at_call_names_the_input():
    predictor = tfloop.OfflinePredictor(config({"w": W, "b": 0.0}))
    with pytest.raises(ValueError, match=r"input 'x:0' expects float32 \[None, 3\], got shape "
                                         r"\[2, 4\]"):
        predictor(np.zeros([2, 4], np.float32))
    with pytest.raises(ValueError, match=r"got shape \[3\]"):
        predictor(np.zeros([3], np.float32))
    with pytest.raises(TypeError, match="input 'x:0' expects float32 .*dtype <U1"):
        predictor(np.array([["a", "b", "c"]]))
    with pytest.raises(TypeError, match=r"takes 1 input\(s\) \(x:0: float32 \[None, 3\]\), got 2"):
        predictor(np.zeros([2, 3]), np.zeros([2]))


def test_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="needs output_names"):
        tfloop.PredictConfig(model=LinearModel())
    with pytest.raises(TypeError, match="output_names must be a list of tensor names, got the "
                                        "string 'pred'"):
        tfloop.PredictConfig(model=LinearModel(), output_names="pred")
    with pytest.raises(ValueError, match="needs model="):
        tfloop.PredictConfig(output_names=["pred"])
    with pytest.raises(ValueError, match="needs input_signature"):
        tfloop.PredictConfig(tower_func=lambda x: x, output_names=["pred"])
    with pytest.raises(TypeError, match="needs a PredictConfig"):
        tfloop.OfflinePredictor(LinearModel())


def test_plain_tower_function_with_signature():
    def tower(x):
        w = tfv1.get_variable("w", [3, 1])
        tf.identity(tf.matmul(x, w), name="out")
    cfg = tfloop.PredictConfig(tower_func=tower, input_signature=[
        tf.TensorSpec([None, 3], tf.float32, "x")], output_names=["out"],
        session_init={"w": TRUE_W})
    x, y = make_regression_data(4)
    np.testing.assert_allclose(tfloop.OfflinePredictor(cfg)(x)[0][:, 0], y, rtol=1e-6)
