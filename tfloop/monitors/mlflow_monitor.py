"""MLflowMonitor: every scalar an MLflow metric at the global step, in one run that a resumed
training continues."""
import os
import time
import urllib.error
import urllib.request

from tfloop.monitors.base import MonitorBase
from tfloop.monitors.mlflow_model import ModelLogging
from tfloop.monitors.mlflow_names import check_params, key_problem, legal_key
from tfloop.monitors.mlflow_sender import MetricSender
from tfloop.monitors.outcome import training_outcome
from tfloop.monitors.run_file import read_run_file, write_run_file
from tfloop.utils import logger
from tfloop.utils.checks import check_positive_number
from tfloop.utils.extras import import_extra
from tfloop.version import __version__

__all__ = ["MLflowMonitor"]

RUN_FILE = "mlflow_run.json"
_STATUS = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED"}


def _check_optional_str(value, name):
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(f"MLflowMonitor: {name} must be a non-empty str or None, got {value!r}.")


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


def _model_logging(log_model, output_names, stat, registered_model_name):
    """The model logging ``log_model`` asks for, or None; model options without it are an
    error."""
    if log_model is not None:
        return ModelLogging(log_model, output_names, stat, registered_model_name)
    given = [name for name, value in (("model_output_names", output_names),
                                      ("model_stat", stat),
                                      ("registered_model_name", registered_model_name))
             if value is not None]
    if given:
        raise TypeError(f"MLflowMonitor: {', '.join(given)} apply to the model logged with "
                        "log_model='final' or 'best', which is not given.")
    return None


class MLflowMonitor(MonitorBase):
    """Log every scalar as an MLflow metric at the global step, into one MLflow run.

    Metrics are sent in batches at the end of each epoch, from a daemon thread: never a network
    call per step, and a slow server does not hold training up (a send still going on at the next
    epoch's end is a warning). ``params`` are logged once, with the tags ``tfloop.logdir`` and
    ``tfloop.version``. The run ends ``FINISHED`` when training finishes or a callback stops it
    cleanly (then the tag ``tfloop.stop_reason`` says why), ``FAILED`` when training raises,
    ``KILLED`` on SIGINT/SIGTERM. The end of training waits at most ``flush_timeout`` seconds for
    the last metrics and the run's status to reach the server.

    The run id is kept in ``mlflow_run.json`` in the log directory: a training that resumes there
    (``AutoResumeTrainConfig``) logs into the same run, and skips the metrics the run already has
    up to its last step, so no step is logged twice. The metrics the server had not confirmed when
    a checkpoint was saved are kept in its resume state, and a training resumed from it sends
    those the run lacks: no step is lost to a ``kill -9`` either. A tracking server that cannot be
    reached at start is an error before training; one that goes away during training only costs a
    warning: the metrics are kept and sent again at the next epoch.

    A scalar name MLflow refuses (``acc@1``, ``PeakMemory(MB)/gpu:0``) is logged under a legal
    form (``acc_1``), or not at all when it has none, with one warning naming it.

    With ``log_model``, the model is logged into the run when training finishes (or a callback
    stops it cleanly; not when it fails or is killed), with MLflow's ``tensorflow`` flavour: the
    export ``ModelExporter`` writes, wrapped in a :class:`ServingModule`, with an MLflow
    signature, and registered in the model registry under ``registered_model_name`` when given.
    ``mlflow.pyfunc.load_model(monitor.model_uri).predict(array)`` then predicts as the exported
    model does. The outputs are checked against the model before training; the end of training
    waits at most ``flush_timeout`` seconds for the upload, and a model that cannot be exported
    or logged is a warning: it never fails the training. While it is logged (in a daemon thread),
    MLflow's process-wide tracking URI is the monitor's.

    Runs on the chief worker only. Needs ``pip install 'tfloop-train[mlflow]'``.

    Args:
        tracking_uri (str): e.g. ``"http://127.0.0.1:5000"`` or ``"sqlite:///mlflow.db"``; MLflow's
            default (``MLFLOW_TRACKING_URI``) when None.
        experiment_name (str): created when missing; ``MLFLOW_EXPERIMENT_NAME`` or ``"Default"``
            when None.
        run_name (str): the run's name (MLflow makes one up when None).
        params (dict): hyper-parameters to log once, e.g. ``{"lr": 0.01}``; a name MLflow refuses
            is a ``ValueError`` here.
        flush_timeout (float): seconds the end of training waits at most for the server (for
            the metrics and the run's status, and as long again for the model).
        log_model (str): None (no model), ``"final"`` (the weights training ended with) or
            ``"best"`` (the best checkpoint a MinSaver/MaxSaver kept in the log directory).
        model_output_names (list[str]): with ``log_model``: the tensors the model outputs (its
            inputs are those they depend on).
        model_stat (str): with ``log_model="best"`` and several kept stats: the stat to choose by.
        registered_model_name (str): with ``log_model``: register the model under this name.

    Attributes:
        run_id (str): the MLflow run's id, from ``before_train`` on.
        model_uri (str): the logged model's URI (``models:/m-...``), once logged; else None.

    Example:
        >>> monitors = DEFAULT_MONITORS() + [MLflowMonitor("sqlite:///mlflow.db", "mnist",
        ...                                                params={"lr": 0.01})]
        >>> MLflowMonitor("http://127.0.0.1:5000", "mnist", log_model="best",
        ...               model_output_names=["prob"], registered_model_name="mnist")
    """

    _chief_only = True

    def __init__(self, tracking_uri=None, experiment_name=None, run_name=None, params=None,
                 flush_timeout=60.0, log_model=None, model_output_names=None, model_stat=None,
                 registered_model_name=None):
        for value, name in ((tracking_uri, "tracking_uri"), (experiment_name, "experiment_name"),
                            (run_name, "run_name")):
            _check_optional_str(value, name)
        self._params = check_params(params)
        self.flush_timeout = check_positive_number(flush_timeout, "MLflowMonitor: flush_timeout",
                                                   unit="seconds")
        self._mlflow = import_extra("mlflow", "mlflow", "MLflowMonitor")
        self._entities = import_extra("mlflow.entities", "mlflow", "MLflowMonitor")
        self._tracking = import_extra("mlflow.tracking", "mlflow", "MLflowMonitor")
        self._model_logging = _model_logging(log_model, model_output_names, model_stat,
                                             registered_model_name)
        if self._model_logging is not None:
            import_extra("mlflow.tensorflow", "mlflow", "MLflowMonitor(log_model=...)")
        self._tracking_uri = tracking_uri
        self._experiment_name = experiment_name
        self._run_name = run_name
        self.run_id = None
        self._client = None
        self._experiment_id = None
        self._sender = None
        self._keys = {}            # scalar name -> its MLflow key (None: not logged)
        self._logged_through = {}  # MLflow key -> the last step the resumed run had
        self._restored = []        # [key, value, timestamp, step] unconfirmed at the checkpoint

    @property
    def model_uri(self):
        """The logged model's URI, once logged at the end of training; else None."""
        return self._model_logging.model_uri if self._model_logging is not None else None

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
        if self._model_logging is not None:
            self._model_logging.setup(self.trainer)

    def _before_train(self):
        logdir = self.trainer.logdir
        stored = read_run_file(logdir, RUN_FILE)
        self.run_id, self._logged_through = None, {}
        try:
            if self.global_step > 0 and stored is not None and \
                    stored.get("tracking_uri") == self._tracking_uri:
                self._resume_run(stored["run_id"], logdir)
            else:
                self._start_run(logdir)
            write_run_file(logdir, RUN_FILE, {"run_id": self.run_id,
                                              "tracking_uri": self._tracking_uri})
        except BaseException:
            self._end_unstarted_run()
            raise
        self._sender = MetricSender(self._client, self.run_id, self._tracking_uri)
        self._sender.add(self._restored_metrics())

    def _end_unstarted_run(self):
        """Mark the run FAILED when training cannot start logging into it."""
        if self.run_id is None:
            return
        try:
            self._client.set_terminated(self.run_id, "FAILED")
        except Exception as e:
            logger.warning(f"MLflowMonitor: could not mark run {self.run_id} FAILED: "
                           f"{type(e).__name__}: {e}")

    def _start_run(self, logdir):
        tags = {"tfloop.version": __version__}
        if logdir is not None:
            tags["tfloop.logdir"] = os.path.abspath(logdir)
        run = self._client.create_run(self._experiment_id, run_name=self._run_name, tags=tags)
        self.run_id = run.info.run_id
        self._log_params({})
        logger.info(f"MLflowMonitor: logging to run {self.run_id} of {self._tracking_uri}.")

    def _resume_run(self, run_id, logdir):
        try:
            run = self._client.get_run(run_id)
        except Exception as e:
            if getattr(e, "error_code", None) != "RESOURCE_DOES_NOT_EXIST":
                raise
            run = None
        if run is None or run.info.lifecycle_stage == "deleted":
            logger.warning(f"MLflowMonitor: run {run_id} of {self._tracking_uri}, named in "
                           f"{RUN_FILE}, was deleted in MLflow; logging into a new run from "
                           f"global step {self.global_step} on. (`mlflow runs restore --run-id "
                           f"{run_id}` before resuming keeps the old one.)")
            self._restored = []  # metrics of the deleted run
            self._start_run(logdir)
            return
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

    def _restored_metrics(self):
        """The metrics of the checkpoint's resume state that the run lacks, up to its step."""
        restored, self._restored = self._restored, []
        return [self._entities.Metric(key, value, timestamp, step)
                for key, value, timestamp, step in restored
                if self._logged_through.get(key, -1) < step <= self.global_step]

    def _key(self, name):
        """The MLflow key of scalar ``name`` (None: not logged), warning once for a name MLflow
        refuses."""
        if name in self._keys:
            return self._keys[name]
        problem = key_problem(name)
        key = name if problem is None else legal_key(name)
        if problem is not None:
            taken = key in self._keys.values() or key in self._keys
            key = None if taken else key
            logged = f"it is logged as {key!r}" if key else "its values are not logged"
            logger.warning(f"MLflowMonitor: MLflow refuses the metric name {name!r} ({problem}); "
                           f"{logged}.")
        self._keys[name] = key
        return key

    def process_scalar(self, name, value):
        if self._sender is None:
            return  # put outside training
        key = self._key(name)
        step = self.global_step
        if key is None or step <= self._logged_through.get(key, -1):
            return  # not logged, or the resumed run already has this step
        self._sender.add([self._entities.Metric(key, float(value), int(time.time() * 1000),
                                                step)])

    def _trigger(self):
        self._sender.flush()

    def _state_dict(self):
        if self._sender is None:
            return None
        return {"unconfirmed": [[m.key, m.value, m.timestamp, m.step]
                                for m in self._sender.unconfirmed()]}

    def _load_state_dict(self, state):
        self._restored = [list(m) for m in state["unconfirmed"]]

    def _after_train(self):
        if self._sender is None:
            return
        outcome = training_outcome(self.trainer)
        status = _STATUS[outcome.status]
        reason = self.trainer.stop_reason
        if self._model_logging is not None:
            if outcome.status == "finished":
                self._model_logging.log(self.trainer, self._mlflow, self._tracking_uri,
                                        self.run_id, self.flush_timeout)
            else:
                logger.info(f"MLflowMonitor: training {outcome.status}; the model is not "
                            "logged.")

        def terminate():
            if reason is not None and outcome.status == "finished":
                self._client.set_tag(self.run_id, "tfloop.stop_reason", reason)
            self._client.set_terminated(self.run_id, status)
        self._sender.finish(self.flush_timeout, terminate)
        self._sender = None

    def __str__(self):
        return "MLflowMonitor"
