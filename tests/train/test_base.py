"""Trainer: the checkpoint listeners get each checkpoint once its trigger round is over."""
import tfloop


def test_checkpoints_reach_the_listeners_when_announced_in_the_order_saved():
    trainer = tfloop.SimpleTrainer()
    seen, also = [], []
    trainer.checkpoint_listeners.extend([seen.append, also.append])
    trainer.checkpoint_saved("log/model-2")
    trainer.checkpoint_saved("log/model-4")
    assert seen == []                               # the trigger round is not over yet
    trainer.announce_checkpoints()
    trainer.announce_checkpoints()                  # each checkpoint once
    assert seen == also == ["log/model-2", "log/model-4"]


def test_a_stop_request_is_the_loops():
    trainer = tfloop.SimpleTrainer()
    assert not trainer.stop_requested
    trainer.request_stop("SIGTERM received")
    assert trainer.stop_requested and trainer.loop.stop_reason == "SIGTERM received"
