"""The keyword names tensorpack 0.9 gave arguments it renamed by 0.11 (``nr_proc`` for
``num_proc``, ``inputs_desc`` for ``input_signature``, ``BatchNorm(internal_update=)``), as 0.9
projects call them. Every such rename between tensorpack 0.9.9 and 0.11 is listed here."""
import numpy as np
import pytest

import tfloop
from tfloop import tfv1 as tf
from tfloop.contrib.keras import KerasModel
from tfloop.tfutils import varmanip
from tfloop.tfutils.tower import TowerFuncWrapper


def fake():
    return tfloop.FakeData([[2]], 6, random=False)


@pytest.mark.parametrize("make, attribute, value", [
    (lambda: tfloop.PrefetchDataZMQ(fake(), nr_proc=2), "num_proc", 2),
    (lambda: tfloop.MultiProcessRunnerZMQ(fake(), nr_proc=2), "num_proc", 2),
    (lambda: tfloop.PrefetchData(fake(), nr_prefetch=4, nr_proc=1), "num_prefetch", 4),
    (lambda: tfloop.MultiThreadRunner(fake, nr_prefetch=4, nr_thread=2), "num_thread", 2),
    (lambda: tfloop.MultiThreadMapData(fake(), nr_thread=2, map_func=lambda dp: dp),
     "num_thread", 2),
    (lambda: tfloop.MultiProcessMapDataZMQ(fake(), nr_proc=2, map_func=lambda dp: dp),
     "num_proc", 2),
    (lambda: tfloop.LocallyShuffleData(fake(), 4, nr_reuse=2), "num_reuse", 2),
    (lambda: tfloop.RepeatedData(fake(), nr=2), "num", 2),
    (lambda: tfloop.RepeatedDataPoint(fake(), nr=2), "num", 2),
])
def test_dataflow_keywords_of_tensorpack_09(make, attribute, value):
    assert getattr(make(), attribute) == value


def test_a_keyword_given_under_both_names_is_refused():
    with pytest.raises(TypeError, match=r"got both nr_proc= \(tensorpack 0.9's name\) and "
                                        r"num_proc=: give only num_proc="):
        tfloop.PrefetchDataZMQ(fake(), nr_proc=2, num_proc=2)


def test_inputs_desc_is_the_input_signature():
    signature = [tf.TensorSpec([None, 3], tf.float32, "x")]
    config = tfloop.PredictConfig(tower_func=lambda x: tf.identity(x, name="y"),
                                  inputs_desc=signature, output_names=["y"])
    assert config.input_signature == signature
    assert TowerFuncWrapper(lambda x: x, inputs_desc=signature).input_signature == signature
    keras = KerasModel(lambda x: x, inputs_desc=signature, targets_desc=signature,
                       input=fake())
    assert (keras.input_signature, keras.target_signature) == (signature, signature)


def test_checkpoint_helpers_take_model_path_and_filename(tmp_path):
    with tf.Graph().as_default():
        tf.get_variable("w", initializer=np.float32(3.0))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = tf.train.Saver().save(sess, str(tmp_path / "model"), global_step=1)
    assert varmanip.get_checkpoint_path(model_path=prefix) == prefix
    assert varmanip.load_chkpt_vars(model_path=prefix) == {"w": 3.0}
    assert isinstance(tfloop.get_model_loader(filename=prefix), tfloop.SaverRestore)


@pytest.mark.parametrize("internal_update, updates_in_collection", [(True, 0), (False, 2)])
def test_batch_norm_internal_update_of_tensorpack_09(internal_update, updates_in_collection):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        with tfloop.TowerContext("", is_training=True):
            tfloop.BatchNorm("bn", x, internal_update=internal_update)
        assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == updates_in_collection
        with tfloop.TowerContext("", is_training=True), \
                pytest.raises(TypeError, match="both internal_update= .* and ema_update="):
            tfloop.BatchNorm("bn2", x, internal_update=True, ema_update="skip")


def test_tensorpacks_keyword_names_where_tfloops_differ():
    # tensorpack 0.11's own keywords, where tfloop's signature names the argument otherwise
    data = [[np.zeros([2], np.float32)]]
    assert tfloop.QueueInput(ds=data).data == data
    assert tfloop.FeedInput(ds=data, infinite=False).infinite is False
    assert tfloop.BatchQueueInput(ds=data, batch_size=2).batch_size == 2
    saver = tfloop.ModelSaver()
    assert tfloop.Callbacks(cbs=[saver]).cbs == [saver]
    holder = type("Holder", (), {"rate": 0.1})()
    assert tfloop.ObjAttrParam(holder, attrname="rate").readable_name == "rate"
    assert tfloop.DumpTensorAsImage(tensor_name="image").name == "image"
