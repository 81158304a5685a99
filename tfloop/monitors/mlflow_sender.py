"""The metrics of one MLflow run that its server has not confirmed yet, sent in order from a
daemon thread; the end of training waits for them (and the run's status) until one deadline."""
import time

from tfloop.monitors.background import BackgroundCall
from tfloop.utils import logger

__all__ = ["MetricSender"]

_BATCH = 1000  # MLflow's most metrics in one log_batch request


def _is_refusal(error):
    """Whether MLflow refused the request as invalid (sending it again cannot help)."""
    return getattr(error, "error_code", None) == "INVALID_PARAMETER_VALUE"


class MetricSender:
    """Send MLflow metrics in batches, one batch at a time, from a daemon thread.

    A batch the server cannot take (it does not answer, it went away) is kept and sent again with
    the next one, in order. A batch MLflow refuses as invalid is sent again name by name, and only
    the names refused are dropped, each with one warning. A send still going on at the end of an
    epoch is a warning (once until it ends); the metrics wait for it.

    Args:
        client (mlflow.tracking.MlflowClient): the client.
        run_id (str): the run.
        uri (str): the tracking URI, named in warnings.

    Example:
        >>> sender = MetricSender(client, run_id, uri)
        >>> sender.add([Metric("cost", 0.5, int(time.time() * 1000), 10)])
        >>> sender.flush()                       # at each epoch's end; does not wait
        >>> sender.finish(60.0, lambda: client.set_terminated(run_id, "FINISHED"))
    """

    def __init__(self, client, run_id, uri):
        self._client, self._run_id, self._uri = client, run_id, uri
        self.refused = set()
        self._pending = []
        self._call = None          # the send going on, or done and not collected yet
        self._failing = False
        self._warned_stuck = False

    def add(self, metrics):
        """Queue ``metrics`` (a list of ``mlflow.entities.Metric``) after those queued before."""
        self._pending.extend(m for m in metrics if m.key not in self.refused)

    def unconfirmed(self):
        """Every metric the server has not confirmed: the batch being sent, then those queued."""
        call, sending = self._call, []
        if call is not None:
            sending = call.args[0] if not call.done() else (call.result or ([],))[0]
        return list(sending) + self._pending

    def flush(self):
        """Start sending the queued metrics, unless a send is still going on (then warn, once)."""
        if self._call is not None:
            if not self._call.done():
                self._warn_stuck()
                return
            self._collect()
        if self._pending:
            batch, self._pending = self._pending, []
            self._call = BackgroundCall("MLflowMonitor", self._send, batch)

    def finish(self, timeout, terminate):
        """Send what is left, then call ``terminate()`` (which marks the run), all within
        ``timeout`` seconds; past it, warn and leave the daemon thread behind.

        Returns:
            bool: whether everything was sent and the run marked.
        """
        deadline = time.monotonic() + timeout
        if self._call is not None:
            if not self._call.wait(timeout):
                return self._give_up(timeout)
            self._collect()
        batch, self._pending = self._pending, []
        self._call = BackgroundCall("MLflowMonitor", self._send_and_terminate, batch, terminate)
        if not self._call.wait(max(0.0, deadline - time.monotonic())):
            return self._give_up(timeout)
        terminate_error = self._collect()
        if self._pending:
            logger.warning(f"MLflowMonitor: {len(self._pending)} metric value(s) could not be sent "
                           f"to {self._uri}; a training resumed from the last checkpoint sends "
                           "those up to its step again.")
        if terminate_error is not None:
            logger.warning(f"MLflowMonitor: could not set the status of run {self._run_id}: "
                           f"{type(terminate_error).__name__}: {terminate_error}")
        return not self._pending and terminate_error is None

    # ---- in the sender thread -----------------------------------------------------------------
    def _send(self, batch):
        """Send ``batch``; return ``(unsent, error, refused)``: the metrics not sent when a request
        failed (and why), and ``{name: why}`` of the names MLflow refused."""
        refused = {}
        for start in range(0, len(batch), _BATCH):
            chunk = batch[start:start + _BATCH]
            try:
                self._client.log_batch(self._run_id, metrics=chunk)
                continue
            except Exception as e:
                if not _is_refusal(e):
                    return batch[start:], e, refused
            unsent, error = self._send_by_name(chunk, refused)
            if error is not None:
                return unsent + batch[start + _BATCH:], error, refused
        return [], None, refused

    def _send_by_name(self, chunk, refused):
        keys = list(dict.fromkeys(m.key for m in chunk))
        for index, key in enumerate(keys):
            try:
                self._client.log_batch(self._run_id, metrics=[m for m in chunk if m.key == key])
            except Exception as e:
                if not _is_refusal(e):
                    rest = set(keys[index:])
                    return [m for m in chunk if m.key in rest], e
                refused[key] = str(e)
        return [], None

    def _send_and_terminate(self, batch, terminate):
        """:meth:`_send`, then ``terminate()``; what it raised is the result's fourth item."""
        result = self._send(batch)
        try:
            terminate()
        except Exception as e:
            return result + (e,)
        return result + (None,)

    # ---- back in the training thread ---------------------------------------------------------
    def _collect(self):
        """Take the done send's result in; return the error of ``terminate()``, if it ran."""
        call, self._call = self._call, None
        self._warned_stuck = False
        if call.error is not None:
            raise call.error
        unsent, error, refused = call.result[:3]
        for key, why in refused.items():
            logger.warning(f"MLflowMonitor: MLflow refuses the metric name {key!r} ({why}); its "
                           "values are not logged. The other metrics are.")
        self.refused.update(refused)
        self._pending = [m for m in unsent + self._pending if m.key not in self.refused]
        if error is not None:
            if not self._failing:
                logger.warning(f"MLflowMonitor: could not send metrics to {self._uri} ("
                               f"{type(error).__name__}: {error}); they are kept and sent again "
                               "with the next batch, at the end of the next epoch. Training "
                               "continues.")
            self._failing = True
        elif self._failing:
            logger.info(f"MLflowMonitor: {self._uri} reached again; metrics sent.")
            self._failing = False
        return call.result[3] if len(call.result) > 3 else None

    def _warn_stuck(self):
        if self._warned_stuck:
            return
        self._warned_stuck = True
        logger.warning(f"MLflowMonitor: sending metrics to {self._uri} has taken "
                       f"{self._call.elapsed():.0f} s so far (the server does not answer?); the "
                       "metrics of this epoch are kept and sent once it ends. Training continues.")

    def _give_up(self, timeout):
        lost = len(self.unconfirmed())
        logger.warning(f"MLflowMonitor: {self._uri} did not answer within {timeout:g} s at the end "
                       f"of training: {lost} metric value(s) are not sent and the run's status is "
                       "not set. A training resumed from the last checkpoint sends the metrics up "
                       "to its step again.")
        self._pending = []
        return False
