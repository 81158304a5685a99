"""TrainConfig(mixed_precision=..., xla=...): the rewrites fire in a real step, variables and
predictions stay float32, bad values are refused before the graph exists, and a user's session
config is merged with what the trainer needs."""
import os
import subprocess
import sys

import numpy as np
import pytest
from precision_support import ConvNet, assert_default_loss_scale, images, train_convnet
from support import LinearModel, make_regression_data

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils import precision
from tfloop.tfutils.precision import Precision, merge_session_configs

X, Y = make_regression_data(24)
REMOVE = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE"
EMULATE = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_EMULATE_FP16"


@pytest.mark.parametrize("value", ["fp8", "bf16x", True, "Float16", 16])
def test_unknown_precision_is_refused_before_the_graph_is_built(value):
    with pytest.raises(ValueError, match="'bfloat16' or 'float16'"):
        tfloop.TrainConfig(model=LinearModel(), data=[(X, Y)], mixed_precision=value)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_xla_must_be_a_bool(value):
    with pytest.raises(ValueError, match="xla="):
        tfloop.AutoResumeTrainConfig(model=LinearModel(), data=[(X, Y)], xla=value)


def test_precision_options_need_a_session_creator_with_a_config():
    class Creator:
        def create_session(self, graph):
            return tfv1.Session(graph=graph)

    with pytest.raises(ValueError, match="session_config="):
        tfloop.TrainConfig(model=LinearModel(), data=[(X, Y)], session_creator=Creator(), xla=True)


def argument_doc(cls, name):
    """The text of argument ``name`` in the ``Args:`` of ``cls``'s docstring."""
    lines = cls.__doc__.split("\n")
    start, = [i for i, line in enumerate(lines) if line.strip().startswith(name + " (")]
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(i for i in range(start + 1, len(lines))
               if len(lines[i]) - len(lines[i].lstrip()) <= indent)
    return " ".join(line.strip() for line in lines[start:end])


def test_the_precision_modes_are_described_once_in_precision():
    for mode in precision.MIXED_PRECISION_MODES:
        assert f"- ``{mode!r}``".replace("'", '"') in Precision.__doc__
    for cls in (tfloop.TrainConfig, tfloop.RunOptions, tfloop.PredictConfig):
        text = argument_doc(cls, "mixed_precision")
        assert "MIXED_PRECISION_MODES" in text and "Precision`" in text, (cls, text)
        assert not any(f'"{mode}"' in text for mode in ("bfloat16", "float16")), (cls, text)


def test_float16_on_cpu_computes_in_float16_and_warns_it_is_slow(caplog):
    probe = train_convnet(mixed_precision="float16")
    assert probe.reduced["float16"] >= 5 and "bfloat16" not in probe.reduced
    assert probe.dtypes == {tf.float32, tf.int64}
    assert_default_loss_scale(probe)
    assert "mixed_precision='bfloat16'" in caplog.text and "without a GPU" in caplog.text


def test_float16_emulation_asked_for_by_hand_is_turned_off(caplog, monkeypatch):
    monkeypatch.setenv("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_EMULATE_FP16", "1")
    x, y = images(8, seed=1)
    val = tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4),
                              repeat=False)
    probe = train_convnet(mixed_precision="float16", callbacks=[
        tfloop.InferenceRunner(val, [tfloop.ScalarStats("cost")])])
    assert probe.reduced["float16"] >= 5
    assert probe.reduced_ops["MatMul"] >= 1      # computed in float16, not emulated with casts
    assert os.environ["TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_EMULATE_FP16"] == "1"   # given back
    assert "is replaced by 0" in caplog.text


@pytest.mark.slow
def test_a_bfloat16_training_leaves_nothing_behind_for_a_float16_one(monkeypatch):
    monkeypatch.setattr(precision, "_cpu_flags", set)  # no bfloat16 arithmetic: bfloat16 takes
    monkeypatch.delenv(REMOVE, raising=False)           # the convolution gradients out of the
    monkeypatch.delenv(EMULATE, raising=False)          # rewrites while it runs
    environment = dict(os.environ)
    train_convnet(mixed_precision="bfloat16")
    assert dict(os.environ) == environment
    probe = train_convnet(mixed_precision="float16")
    assert probe.reduced_ops["Conv2DBackpropFilter"] >= 1     # in float16: not taken out
    assert dict(os.environ) == environment


def rewrite_of_a_call(dumps, predictor, inputs):
    """The lists and the graph TensorFlow's mixed-precision rewriter used for the first call of
    ``predictor``, from the files it writes into ``dumps`` (its LOG_PATH)."""
    for old in dumps.iterdir():       # those of loading the weights
        old.unlink()
    predictor(inputs)
    lists, = [f.read_text() for f in dumps.glob("paintbuckets_*.txt")]
    allow = lists.split("AllowList:")[1].split("DenyList:")[0].split()
    graph, = [tfv1.GraphDef.FromString(f.read_bytes())
              for f in dumps.glob("graphdef_AutoMixedPrecision_*.pb")]
    return allow, graph


def test_a_float16_predictor_after_a_bfloat16_training_rewrites_in_its_own_environment(
        logdir, tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "_cpu_flags", set)
    monkeypatch.delenv(REMOVE, raising=False)
    monkeypatch.delenv(EMULATE, raising=False)
    train_convnet(mixed_precision="bfloat16", callbacks=[tfloop.ModelSaver()])
    dumps = tmp_path / "rewrites"
    dumps.mkdir()
    monkeypatch.setenv("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH", str(dumps))
    predictor = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=ConvNet(), session_init=tfloop.SmartInit(logdir), input_names=["image"],
        output_names=["prob"], mixed_precision="float16"))
    assert REMOVE not in os.environ and EMULATE not in os.environ
    allow, graph = rewrite_of_a_call(dumps, predictor, images(4)[0])
    assert "Conv2DBackpropFilter" in allow and "MatMul" in allow
    # The emulation was off while the call was rewritten: ops compute in float16 (emulating
    # leaves casts only in float16).
    computing = [node.op for node in graph.node if node.op != "Cast"
                 and node.attr["T"].type == tf.float16.as_datatype_enum]
    assert computing, [node.op for node in graph.node]
    assert REMOVE not in os.environ and EMULATE not in os.environ


def test_float32_step_has_no_reduced_precision_and_no_xla():
    probe = train_convnet()
    assert probe.reduced == {} and probe.xla == 0


@pytest.mark.slow
def test_xla_clusters_the_step_only_when_asked():
    assert train_convnet(xla=True).xla > 0
    assert train_convnet(xla=False).xla == 0


def _onednn_enabled():
    from tensorflow.python.util import _pywrap_util_port
    return _pywrap_util_port.IsMklEnabled()


@pytest.mark.skipif(not _onednn_enabled(), reason="oneDNN is off in this process; the "
                    "subprocess test below forces it on")
def test_bfloat16_rewrite_converts_the_step():
    probe = train_convnet(mixed_precision="bfloat16")
    assert probe.reduced["bfloat16"] >= 5      # conv, matmul, their gradients, casts
    assert probe.dtypes == {tf.float32, tf.int64}


def _onednn_subprocess():
    """In a process with oneDNN forced on: the bfloat16 node count of a real step, the
    variables' dtypes, and digits accuracy in float32, bfloat16 and float16."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path[:0] = [{os.path.dirname(here)!r}]; "
            "import precision_support as t; p = t.train_convnet(mixed_precision='bfloat16'); "
            "print('REDUCED', p.reduced['bfloat16']); "
            "print('DTYPES', sorted(d.name for d in p.dtypes)); "
            "print('ACCURACY', *(t.digits_accuracy(m) for m in (None, 'bfloat16', 'float16')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1"), timeout=600)
    lines = dict(x.split(" ", 1) for x in out.stdout.splitlines()
                 if x.split(" ")[0] in ("REDUCED", "DTYPES", "ACCURACY"))
    assert len(lines) == 3, out.stderr[-3000:]
    return lines


@pytest.mark.slow
def test_bfloat16_rewrite_fires_and_reduced_precision_keeps_digits_accuracy():
    lines = _onednn_subprocess()
    assert int(lines["REDUCED"]) >= 5                  # conv, matmul, their gradients, casts
    assert lines["DTYPES"] == "['float32', 'int64']"
    fp32, bf16, fp16 = (float(v) for v in lines["ACCURACY"].split())
    assert fp32 > 0.9
    assert abs(bf16 - fp32) <= 0.01 and abs(fp16 - fp32) <= 0.01, (fp32, bf16, fp16)


def test_bfloat16_without_onednn_says_training_stays_float32(caplog, monkeypatch):
    from tfloop.tfutils import precision
    monkeypatch.setattr(precision, "_onednn_enabled", lambda: False)
    Precision("bfloat16").check_hardware()
    assert "TF_ENABLE_ONEDNN_OPTS=1" in caplog.text and "stays float32" in caplog.text


@pytest.mark.slow
def test_user_session_config_is_merged_with_the_replicated_trainers_devices():
    user = tfv1.ConfigProto(intra_op_parallelism_threads=1)
    trainer = tfloop.SyncMultiGPUTrainerReplicated(2)
    probe = train_convnet(trainer, session_config=user, mixed_precision="float16")
    assert_default_loss_scale(probe)
    assert probe.replica_difference == 0.0
    merged = merge_session_configs(trainer.default_session_config(), user)
    assert merged.device_count["CPU"] == 2 and merged.intra_op_parallelism_threads == 1


def test_user_session_config_alone_is_merged_too():
    user = tfv1.ConfigProto(inter_op_parallelism_threads=1)
    trainer = tfloop.SyncMultiGPUTrainerParameterServer(2)
    train_convnet(trainer, session_config=user, steps=2)
    assert trainer.sess is not None


@pytest.mark.slow
def test_float16_with_parameter_server_trainer_and_keras_layers():
    import keras

    class KerasNet(ConvNet):
        def build_graph(self, image, label):
            x = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(image)
            logits = keras.layers.Dense(3)(keras.layers.Flatten()(x))
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=label, logits=logits), name="cost")

    probe = train_convnet(tfloop.SyncMultiGPUTrainerParameterServer(2), model=KerasNet(),
                          mixed_precision="float16")
    assert_default_loss_scale(probe)
    assert tf.float16 not in probe.dtypes


def test_keras_model_desc_trains_in_float16():
    import keras
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(3)])
    desc = tfloop.KerasModelDesc(model, keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), lambda: tfv1.train.GradientDescentOptimizer(0.1))
    probe = train_convnet(model=desc, mixed_precision="float16")
    assert_default_loss_scale(probe)


@pytest.mark.slow
def test_inference_runner_and_offline_predictor_give_float32(logdir):
    x, y = images(8, seed=1)
    val = tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4),
                              repeat=False)
    train_convnet(mixed_precision="float16", callbacks=[
        tfloop.InferenceRunner(val, [tfloop.ScalarStats("cost")]), tfloop.ModelSaver()])
    predictor = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=ConvNet(), session_init=tfloop.SmartInit(logdir), input_names=["image"],
        output_names=["prob"]))
    prob, = predictor(x)
    assert prob.dtype == np.float32 and np.allclose(prob.sum(axis=1), 1, atol=1e-5)
