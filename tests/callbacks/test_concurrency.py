"""StartProcOrThread: started before training, stopped after it (also after an error)."""
import multiprocessing
import threading

import pytest
from support import train_linear

from tfloop import Callback, StartProcOrThread


class StoppableThread(threading.Thread):
    def __init__(self, log):
        super().__init__(daemon=True, name="worker-thread")
        self.log = log
        self._stop_event = threading.Event()

    def start(self):
        self.log.append("thread start")
        super().start()

    def run(self):
        self._stop_event.wait(30)

    def stop(self):
        self.log.append("thread stop")
        self._stop_event.set()


def _sleep():
    import time
    time.sleep(30)


def test_thread_and_process_run_during_training_and_stop_after():
    log = []
    thread = StoppableThread(log)
    process = multiprocessing.get_context("spawn").Process(target=_sleep, daemon=True,
                                                           name="worker-proc")
    seen = []

    class Check(Callback):
        def _before_train(self):
            seen.append((thread.is_alive(), process.is_alive()))

    train_linear([StartProcOrThread([thread, process]), Check()], max_epoch=1)
    assert seen == [(True, True)]
    assert log == ["thread start", "thread stop"]
    assert not thread.is_alive()
    assert not process.is_alive() and process.exitcode is not None


def test_stop_at_last_false_leaves_them_running():
    log = []
    thread = StoppableThread(log)
    train_linear([StartProcOrThread(thread, stop_at_last=False)], max_epoch=1)
    assert thread.is_alive()
    thread.stop()
    thread.join(5)


def test_they_are_stopped_when_training_fails():
    log = []

    class Fail(Callback):
        def _trigger_step(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        train_linear([StartProcOrThread(StoppableThread(log)), Fail()], max_epoch=1)
    assert log == ["thread start", "thread stop"]


def test_something_without_start_is_refused():
    with pytest.raises(TypeError, match="anything with start"):
        StartProcOrThread([object()])
