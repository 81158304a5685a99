"""StartProcOrThread: start processes or threads before training, stop them after."""
import multiprocessing
import signal
import threading

from tfloop.callbacks.base import Callback
from tfloop.utils import logger

__all__ = ["StartProcOrThread"]


def _start_without_sigint(startables):
    """Start each one with SIGINT blocked, so that a forked process inherits the block and a
    Ctrl-C reaches only the training process (which then stops them)."""
    can_mask = hasattr(signal, "pthread_sigmask") and \
        threading.current_thread() is threading.main_thread()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if can_mask else None
    try:
        for item in startables:
            item.start()
    finally:
        if can_mask:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


class StartProcOrThread(Callback):
    """Start processes or threads (anything with ``start()``) before training; after training,
    terminate the processes and call ``stop()`` on threads that have it, waiting up to 5 s each.

    Args:
        startable: a ``multiprocessing.Process``, a ``threading.Thread`` (or anything with
            ``start()``), or a list of them.
        stop_at_last (bool): stop them after training (a plain thread without ``stop()`` is
            left running).

    Example:
        >>> server = multiprocessing.Process(target=serve_data, daemon=True)
        >>> callbacks = [StartProcOrThread(server)]
    """

    _chief_only = False

    def __init__(self, startable, stop_at_last=True):
        startables = startable if isinstance(startable, list) else [startable]
        for item in startables:
            if not callable(getattr(item, "start", None)):
                raise TypeError(f"StartProcOrThread starts processes or threads (anything with "
                                f"start()); got {item!r}.")
        self._startables = startables
        self._stop_at_last = bool(stop_at_last)

    def _before_train(self):
        names = ", ".join(getattr(k, "name", repr(k)) for k in self._startables)
        logger.info(f"Starting {names} ...")
        _start_without_sigint(self._startables)

    def _after_train(self):
        if not self._stop_at_last:
            return
        for item in self._startables:
            alive = getattr(item, "is_alive", None)
            if alive is not None and not alive():
                continue
            if isinstance(item, multiprocessing.process.BaseProcess):
                logger.info(f"Stopping {item.name} ...")
                item.terminate()
            elif callable(getattr(item, "stop", None)):
                logger.info(f"Stopping {getattr(item, 'name', item)} ...")
                item.stop()
            else:
                continue
            if callable(getattr(item, "join", None)):
                item.join(5.0)
                if item.is_alive():
                    logger.error(f"{getattr(item, 'name', item)} did not stop within 5 s.")
