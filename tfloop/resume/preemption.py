"""Stopping cleanly on SIGTERM (pre-emption) and SIGINT (Ctrl-C).

The first signal only requests a stop (``trainer.request_stop``), which the main loop already
checks after every step: the current step finishes, training stops as if a callback had
asked, every ``after_train`` runs (``ModelSaver`` saves the final checkpoint there, monitors
flush), and then the process exits with ``128 + signal`` (143 for SIGTERM) or, for SIGINT, with
``KeyboardInterrupt``. Nothing is checked per step that was not checked before. A second signal
of the same kind stops at once; after a second SIGTERM the process ends within
``SECOND_SIGTERM_GRACE`` seconds even if an ``after_train`` hangs.
"""
import os
import signal
import threading

from tfloop.callbacks.model_saver import ModelSaver
from tfloop.compat import tfv1
from tfloop.utils import files, logger
from tfloop.utils.logdir_format import CHECKPOINT_PREFIX

__all__ = ["SignalHandler", "HANDLED_SIGNALS", "SECOND_SIGTERM_GRACE"]

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT)
SECOND_SIGTERM_GRACE = 10.0  # seconds the process has left after a second SIGTERM


def _exit_after(seconds, code):
    """End the process with ``code`` in ``seconds`` from a daemon thread, unless cancelled."""
    timer = threading.Timer(seconds, os._exit, (code,))
    timer.daemon = True
    timer.start()
    return timer


class SignalHandler:
    """Turn SIGTERM/SIGINT during training into a clean stop; used by ``Trainer.train``.

    Create it after the callbacks are set up and before the graph is finalized: when no
    ``ModelSaver`` is among the callbacks and the run has a log directory (``trainer.logdir``), it
    adds a saver of its own so that a signal still leaves a checkpoint
    ``<log dir>/model-<global_step>``. Use it as a context
    manager around the main loop. Signal handlers can only be installed in the main thread;
    elsewhere it does nothing.

    Attributes:
        received (int): the signal that stopped training, or None.

    Example:
        >>> handler = SignalHandler(trainer)
        >>> trainer.initialize(session_creator, session_init)
        >>> with handler:
        ...     trainer.main_loop(steps_per_epoch, starting_epoch, max_epoch)
    """

    def __init__(self, trainer):
        self.trainer = trainer
        self.received = None
        self._previous = {}
        self._saver = None
        self._deadline = None  # ends the process after a second SIGTERM
        self._logdir = trainer.logdir
        if not trainer.callbacks_of(ModelSaver) and self._logdir is not None and \
                trainer.is_chief:
            with trainer.graph.as_default():
                variables = tfv1.global_variables()
                if variables:
                    self._saver = tfv1.train.Saver(var_list=variables, max_to_keep=None,
                                                   name="signal_saver")

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            logger.info("Training runs outside the main thread: SIGTERM/SIGINT are not handled.")
            return self
        for signum in HANDLED_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame):
        name = signal.Signals(signum).name
        if self.received == signum:
            logger.error(f"{name} received again: stopping at once.")
            self._restore_handlers()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt  # Ctrl-C twice in a notebook must not end its kernel
            self._deadline = _exit_after(SECOND_SIGTERM_GRACE, 128 + signum)
            raise SystemExit(128 + signum)
        self.received = signum
        logger.warning(f"{name} received at global step {self.trainer.global_step}: finishing the "
                       "current step, then saving and stopping (send it again to stop at once).")
        self.trainer.request_stop(f"{name} received")

    def _restore_handlers(self):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous = {}

    def __exit__(self, exc_type, exc, tb):
        self._restore_handlers()
        if self._deadline is not None:  # every after_train is over: SystemExit ends the process
            self._deadline.cancel()
        if self.received is None or exc_type is not None:
            return False
        if self._saver is not None:
            self._save()
        name = signal.Signals(self.received).name
        logger.info(f"Stopped on {name} at global step {self.trainer.global_step}.")
        if self.received == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + self.received)

    def _save(self):
        trainer = self.trainer
        path = files.join(self._logdir, CHECKPOINT_PREFIX)
        try:
            with trainer.graph.as_default():
                prefix = self._saver.save(trainer.sess, path, global_step=trainer.global_step,
                                          write_meta_graph=False)
        except Exception as e:
            logger.error(f"Could not save a checkpoint on the signal: {type(e).__name__}: {e}.")
            return
        logger.info(f"Saved {prefix} on the signal.")
        trainer.checkpoint_saved(prefix)
        trainer.announce_checkpoints()
