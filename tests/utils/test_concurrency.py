"""tensorpack's concurrency helpers: stoppable, looping and session-sharing threads, process
cleanup and SIGINT masking."""
import multiprocessing as mp
import queue
import signal
import threading
import time

import pytest

from tfloop.utils import concurrency


def test_stoppable_thread_queue_operations_give_up_when_stopped():
    th = concurrency.StoppableThread()
    q = queue.Queue(maxsize=1)
    th.queue_put_stoppable(q, 1)
    assert th.queue_get_stoppable(q) == 1 and not th.stopped()
    th.stop()
    assert th.stopped() and th.queue_get_stoppable(q) is None
    th.queue_put_stoppable(q, 2)  # stopped: puts nothing, returns at once
    assert q.qsize() == 0


def test_loop_thread_calls_until_stopped_and_pauses():
    calls = []
    th = concurrency.LoopThread(lambda: (calls.append(1), time.sleep(0.001)))
    assert th.daemon
    th.pause()
    th.start()
    time.sleep(0.05)
    assert calls == []
    th.resume()
    deadline = time.monotonic() + 10
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    th.stop()
    th.join(10)
    assert len(calls) >= 3 and not th.is_alive()
    with pytest.raises(RuntimeError, match="pausable=False"):
        concurrency.LoopThread(lambda: None, pausable=False).pause()


def test_share_session_thread_runs_with_the_starters_session():
    from tfloop import tfv1
    seen = []
    with tfv1.Graph().as_default():
        with tfv1.Session() as sess, sess.as_default():
            th = concurrency.ShareSessionThread(
                threading.Thread(target=lambda: seen.append(tfv1.get_default_session())))
            th.start()
            th.join(10)
    assert seen == [sess]


def _sleep():
    time.sleep(60)


def test_processes_started_with_sigint_masked_and_terminated_at_exit(monkeypatch):
    registered = []
    monkeypatch.setattr(concurrency.atexit, "register", lambda f, *a: registered.append((f, a)))
    proc = mp.get_context("fork").Process(target=_sleep, daemon=True)
    handler = signal.getsignal(signal.SIGINT)
    concurrency.start_proc_mask_signal([proc])
    assert signal.getsignal(signal.SIGINT) == handler and proc.is_alive()
    concurrency.ensure_proc_terminate([proc])
    (stop, args), = registered
    stop(*args)
    assert not proc.is_alive() and proc.exitcode == -signal.SIGTERM
    concurrency.enable_death_signal()
