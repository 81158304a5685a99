"""ZMQInput (tensorpack's input source fed by send_dataflow_zmq): a receiving thread feeds the
graph as QueueInput's loader does."""
import threading

import numpy as np
import pytest
from remote_support import announce_huge_frame, free_tcp_port, running_senders
from support import (
    LinearModel,
    StepValues,
    batches,
    make_regression_data,
    scaled_timeout,
    train_linear,
)

import tfloop
from tfloop.compat import tfv1

pytest.importorskip("zmq")
X, Y = make_regression_data(12)


@pytest.fixture
def senders(tmp_path):
    yield from running_senders(tmp_path)


def loader_threads():
    return [t for t in threading.enumerate() if t.name.endswith(" loader")]


@pytest.mark.slow
@pytest.mark.parametrize("format", ["zmq_ops", None])
def test_zmq_input_trains_like_feed_input_on_what_another_process_sends(tmp_path, senders,
                                                                        format):
    address = f"ipc://{tmp_path / 'pipe'}"
    senders.dataflow(batches(X, Y, 4), address, format=format)
    fed, received = StepValues("cost", float), StepValues("cost", float)
    train_linear([fed], data=tfloop.FeedInput(batches(X, Y, 4)), max_epoch=2)
    source = tfloop.ZMQInput(address, 10)
    trainer = train_linear([received], data=source, steps_per_epoch=3, max_epoch=2)
    assert trainer.global_step == 6 and len(received.values) == 6
    assert received.values == fed.values
    assert trainer.graph.get_tensor_by_name("x:0").op.type == "Identity"  # dequeued in-graph
    assert loader_threads() == []


def test_a_stream_has_no_passes_so_its_epochs_need_steps_per_epoch(tmp_path):
    address = f"ipc://{tmp_path / 'pipe'}"
    with pytest.raises(ValueError, match=r"^steps_per_epoch is required: the input source "
                                         r"ZMQInput\(ipc://.*\) does not know its size and "
                                         r"cannot tell where a pass over its data ends"):
        train_linear(data=tfloop.ZMQInput(address, 10))


@pytest.mark.slow
def test_a_datapoint_that_does_not_fit_the_inputs_is_named(tmp_path, senders):
    address = f"ipc://{tmp_path / 'pipe'}"
    senders.dataflow([[X[:4], Y[:4, None]]], address, format="zmq_ops")
    with pytest.raises(ValueError, match="ZMQInput datapoint 0"):
        train_linear(data=tfloop.ZMQInput(address, 10), steps_per_epoch=3, max_epoch=1)
    assert loader_threads() == []


def test_to_dataset_gives_the_datapoints_that_arrive(tmp_path, senders):
    address = f"ipc://{tmp_path / 'pipe'}"
    senders.dataflow(batches(X, Y, 4), address, format="zmq_ops")
    signature = LinearModel().get_input_signature()
    with tfv1.Graph().as_default():
        dataset = tfloop.ZMQInput(address, 10).to_dataset(signature)
        iterator = tfv1.data.make_initializable_iterator(dataset)
        x, y = iterator.get_next()
        assert x.shape.as_list() == [None, 3]
        with tfv1.Session() as sess:
            sess.run(iterator.initializer)
            got = [sess.run([x, y]) for _ in range(4)]
    expected = batches(X, Y, 4) + batches(X, Y, 4)[:1]
    for (gx, gy), (ex, ey) in zip(got, expected):
        np.testing.assert_array_equal(gx, ex)
        np.testing.assert_array_equal(gy, ey)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="ZMQInput needs end_point"):
        tfloop.ZMQInput(None, 10)
    with pytest.raises(ValueError, match=r"ZMQInput: hwm must be an int >= 0 \(0: no limit, as "
                                         r"in ZMQ\), got -1\."):
        tfloop.ZMQInput("ipc:///tmp/x", -1)


def test_zmq_input_is_where_tensorpack_users_import_it():
    from tfloop.input import ZMQInput
    from tfloop.input_source import ZMQInput as from_input_source
    assert ZMQInput is from_input_source is tfloop.ZMQInput


def test_a_frame_over_the_limit_costs_a_warning_and_training_goes_on(senders, log_warnings):
    port = free_tcp_port()
    address = f"tcp://127.0.0.1:{port}"
    refused = []
    announcer = threading.Thread(target=lambda: refused.append(
        announce_huge_frame(address, 2 ** 20, scaled_timeout(30))), daemon=True)
    announcer.start()
    senders.dataflow(batches(X, Y, 4), address)
    trainer = train_linear(data=tfloop.ZMQInput(address, 10, max_frame_bytes=4096),
                           steps_per_epoch=3, max_epoch=1)
    announcer.join(scaled_timeout(30))
    assert refused == [True] and trainer.global_step == 3
    assert any(f"ZMQInput: a sender's connection to {address} closed" in m and
               "of more than 4096 bytes, which ZMQInput refuses unread" in m
               for m in log_warnings)
    with pytest.raises(ValueError, match="ZMQInput: max_frame_bytes must be a positive int"):
        tfloop.ZMQInput(address, 10, max_frame_bytes=-1)
