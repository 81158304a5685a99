"""MLflowMonitor: every scalar an MLflow metric at the global step, in one run that a resumed
training continues."""
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from tfloop.monitors.base import MonitorBase
from tfloop.monitors.outcome import training_outcome
from tfloop.monitors.run_file import read_run_file, write_run_file
from tfloop.utils import logger
from tfloop.utils.extras import import_extra
from tfloop.version import __version__

__all__ = ["MLflowMonitor"]

RUN_FILE = "mlflow_run.json"
_STATUS = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED"}
_BATCH = 1000  # MLflow's most metrics in one log_batch request


def _check_optional_str(value, name):
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(f"MLflowMonitor: {name} must be a non-empty str or None, got {value!r}.")


def _check_params(params):
    if params is None:
        return {}
    if not isinstance(params, dict) or not all(isinstance(k, str) and k for k in params):
        raise TypeError("MLflowMonitor: params must be a dict of str names to values, e.g. "
                        f"{{'lr': 0.01}}, got {params!r}.")
    return {k: str(v) for k, v in params.items()}


def check_reachable(uri, timeout=5.0):
    """Raise a ``ConnectionError`` naming ``uri`` when an http(s) tracking server does not answer,
    or a ``ValueError`` when a sqlite store's directory does not exist."""
    if uri.startswith(("http://", "https://")):
        try:
            urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout).close()
        except urllib.error.HTTPError:
            return  # a server answered
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ConnectionError(
                f"MLflowMonitor: the tracking server {uri} cannot be reached ({reason}). Start "
                f"it (`mlflow server --host 127.0.0.1 --port ...`), or give the right "
                "tracking_uri= (or MLFLOW_TRACKING_URI).") from None
    elif uri.startswith("sqlite:///"):
        directory = os.path.dirname(os.path.abspath(uri[len("sqlite:///"):]))
        if not os.path.isdir(directory):
            raise ValueError(f"MLflowMonitor: the directory of the sqlite tracking store {uri} "
                             f"({directory}) does not exist; create it, or give another "
                             "tracking_uri=.")


class MLflowMonitor(MonitorBase):
    """Log every scalar as an MLflow metric at the global step, into one MLflow run.

    Metrics are sent in batches at the end of each epoch, from a thread of their own: never a
    network call per step, and a slow server does not hold training up. ``params`` are logged
    once, with the tags ``tfloop.logdir`` and ``tfloop.version``. The run ends ``FINISHED`` when
    training finishes or a callback stops it cleanly, ``FAILED`` when training raises, ``KILLED``
    on SIGINT/SIGTERM.

    The run id is kept in ``mlflow_run.json`` in the log directory: a training that resumes there
    (``AutoResumeTrainConfig``) logs into the same run, and skips the metrics the run already has
    up to its last step, so no step is logged twice. A tracking server that cannot be reached at
    start is an error before training; one that goes away during training only costs a warning:
    the metrics are kept and sent again at the next epoch.

    Runs on the chief worker only. Needs ``pip install tfloop[mlflow]``.

    Args:
        tracking_uri (str): e.g. ``"http://127.0.0.1:5000"`` or ``"sqlite:///mlflow.db"``; MLflow's
            default (``MLFLOW_TRACKING_URI``) when None.
        experiment_name (str): created when missing; ``MLFLOW_EXPERIMENT_NAME`` or ``"Default"``
            when None.
        run_name (str): the run's name (MLflow makes one up when None).
        params (dict): hyper-parameters to log once, e.g. ``{"lr": 0.01}``.

    Attributes:
        run_id (str): the MLflow run's id, from ``before_train`` on.

    Example:
        >>> monitors = DEFAULT_MONITORS() + [MLflowMonitor("sqlite:///mlflow.db", "mnist",
        ...                                                params={"lr": 0.01})]
    """

    _chief_only = True
    final_flush_timeout = 60.0  # seconds after_train waits for the last metrics to be sent

    def __init__(self, tracking_uri=None, experiment_name=None, run_name=None, params=None):
        for value, name in ((tracking_uri, "tracking_uri"), (experiment_name, "experiment_name"),
                            (run_name, "run_name")):
            _check_optional_str(value, name)
        self._params = _check_params(params)
        self._mlflow = import_extra("mlflow", "mlflow", "MLflowMonitor")
        self._entities = import_extra("mlflow.entities", "mlflow", "MLflowMonitor")
        self._tracking = import_extra("mlflow.tracking", "mlflow", "MLflowMonitor")
        self._tracking_uri = tracking_uri
        self._experiment_name = experiment_name
        self._run_name = run_name
        self.run_id = None
        self._client = None
        self._experiment_id = None
        self._pending = []
        self._logged_through = {}
        self._executor = None
        self._sending = None
        self._failing = False

    @property
    def tracking_uri(self):
        """The tracking URI in use (resolved in ``setup_graph``)."""
        return self._tracking_uri

    def _setup_graph(self):
        if self._tracking_uri is None:
            self._tracking_uri = self._mlflow.get_tracking_uri()
        check_reachable(self._tracking_uri)
        name = self._experiment_name or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "Default"
        try:
            self._client = self._tracking.MlflowClient(self._tracking_uri)
            experiment = self._client.get_experiment_by_name(name)
            self._experiment_id = experiment.experiment_id if experiment is not None else \
                self._client.create_experiment(name)
        except Exception as e:
            raise RuntimeError(f"MLflowMonitor: cannot use the experiment {name!r} of the "
                               f"tracking store {self._tracking_uri}: {type(e).__name__}: {e}") \
                from None

    def _before_train(self):
        logdir = self.trainer.logdir
        stored = read_run_file(logdir, RUN_FILE)
        if self.global_step > 0 and stored is not None and \
                stored.get("tracking_uri") == self._tracking_uri:
            self._resume_run(stored["run_id"])
        else:
            self._start_run(logdir)
        write_run_file(logdir, RUN_FILE, {"run_id": self.run_id,
                                          "tracking_uri": self._tracking_uri})
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="MLflowMonitor")

    def _start_run(self, logdir):
        tags = {"tfloop.version": __version__}
        if logdir is not None:
            tags["tfloop.logdir"] = os.path.abspath(logdir)
        run = self._client.create_run(self._experiment_id, run_name=self._run_name, tags=tags)
        self.run_id = run.info.run_id
        self._log_params({})
        logger.info(f"MLflowMonitor: logging to run {self.run_id} of {self._tracking_uri}.")

    def _resume_run(self, run_id):
        run = self._client.get_run(run_id)
        self.run_id = run_id
        self._client.update_run(run_id, status="RUNNING")
        for key in run.data.metrics:
            steps = [m.step for m in self._client.get_metric_history(run_id, key)]
            self._logged_through[key] = max(steps, default=-1)
        self._log_params(run.data.params)
        logger.info(f"MLflowMonitor: resuming run {run_id} of {self._tracking_uri} at global "
                    f"step {self.global_step}.")

    def _log_params(self, logged):
        changed = sorted(k for k, v in self._params.items() if k in logged and logged[k] != v)
        if changed:
            logger.warning(f"MLflowMonitor: run {self.run_id} already has other values of the "
                           f"params {changed} (MLflow keeps a param's first value); start a new "
                           "log directory to log the new ones.")
        new = [self._entities.Param(k, v) for k, v in self._params.items()
               if k not in logged]
        if new:
            self._client.log_batch(self.run_id, params=new)

    def process_scalar(self, name, value):
        step = self.global_step
        if step <= self._logged_through.get(name, -1):
            return  # the resumed run already has this step
        self._pending.append(self._entities.Metric(
            name, float(value), int(time.time() * 1000), step))

    def _trigger(self):
        self._flush(wait=None)

    def _after_train(self):
        if self._executor is None:
            return
        self._flush(wait=self.final_flush_timeout)
        status = _STATUS[training_outcome(self.trainer).status]
        try:
            if self._pending:
                logger.warning(f"MLflowMonitor: {len(self._pending)} metric value(s) could not be "
                               f"sent to {self._tracking_uri} and are lost.")
            self._client.set_terminated(self.run_id, status)
        except Exception as e:
            logger.warning(f"MLflowMonitor: could not mark run {self.run_id} {status}: "
                           f"{type(e).__name__}: {e}")
        finally:
            self._executor.shutdown(wait=False)
            self._executor = None

    def _flush(self, wait):
        """Send the pending metrics from the sender thread; ``wait``: seconds to wait for them
        (None: don't wait, and leave them pending while an earlier send is still going on)."""
        if self._sending is not None:
            if wait is None and not self._sending.done():
                return
            self._collect(wait)
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        self._sending = self._executor.submit(self._send, batch)
        if wait is not None:
            self._collect(wait)

    def _send(self, batch):
        try:
            for start in range(0, len(batch), _BATCH):
                self._client.log_batch(self.run_id, metrics=batch[start:start + _BATCH])
        except Exception as e:
            e.unsent = batch
            raise

    def _collect(self, wait):
        sending, self._sending = self._sending, None
        try:
            sending.result(timeout=wait)
        except FutureTimeout:
            logger.warning(f"MLflowMonitor: sending metrics to {self._tracking_uri} took over "
                           f"{wait:.0f} s; giving up on them.")
            return
        except Exception as e:
            self._pending = e.unsent + self._pending
            if not self._failing:
                logger.warning(f"MLflowMonitor: could not send metrics to {self._tracking_uri} "
                               f"at global step {self.global_step} ({type(e).__name__}: {e}); "
                               "they are kept and sent again with the next batch, at the end "
                               "of the next epoch. Training continues.")
            self._failing = True
            return
        if self._failing:
            logger.info(f"MLflowMonitor: {self._tracking_uri} reached again; metrics sent.")
            self._failing = False

    def __str__(self):
        return "MLflowMonitor"
