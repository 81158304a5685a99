"""MLflowMonitor's model logging: the trained model, exported and logged into the run with
MLflow's ``tensorflow`` flavour (and registered) at the end of training.

The export is built in the training thread (local work, bounded); the upload to the tracking
server runs in a daemon thread that the end of training waits for at most a given time. A model
that cannot be exported or logged costs a warning, never the training.
"""
import contextlib
import os
import tempfile

import numpy as np

from tfloop.monitors.background import BackgroundCall
from tfloop.tfutils.export import ModelExporter
from tfloop.tfutils.model_utils import read_model_weights
from tfloop.tfutils.serving_module import ServingModule
from tfloop.tfutils.sessinit import DictRestore, JustCurrentSession, SaverRestore
from tfloop.utils import logger
from tfloop.utils.logdir_format import best_checkpoint_records

__all__ = ["ModelLogging", "LOG_MODEL_CHOICES"]

LOG_MODEL_CHOICES = ("final", "best")


def _check_names(names, what):
    if isinstance(names, str) or not isinstance(names, (list, tuple)) or not names or \
            not all(isinstance(n, str) and n for n in names):
        raise TypeError(f"MLflowMonitor: {what} must be a non-empty list of tensor names (e.g. "
                        f"['prob']), got {names!r}.")
    return list(names)


def _mlflow_signature(module):
    """An MLflow ``ModelSignature`` of ``module``'s inputs and outputs, or None when MLflow
    cannot say it (a batch dimension that is not variable). One input is unnamed: pyfunc then
    passes the array itself, which is what MLflow's ``tensorflow`` flavour calls the module
    with (a named one would reach it as a dict)."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import Schema, TensorSpec

    def specs(tensors, named):
        return Schema([TensorSpec(np.dtype(t.dtype.as_numpy_dtype), [-1 if d is None else d
                                                                      for d in t.shape],
                                  key if named else None)
                       for key, t in tensors])
    inputs = list(zip(module.input_keys, module.input_specs))
    outputs = list(zip(module.output_keys, module.output_specs))
    if any(t.shape.rank is None or t.shape.rank == 0 or t.shape[0] is not None
           for _, t in inputs):
        return None
    return ModelSignature(inputs=specs(inputs, len(inputs) > 1),
                          outputs=specs(outputs, len(outputs) > 1))


@contextlib.contextmanager
def _tracking_uri_set(mlflow, uri):
    """MLflow's process-wide tracking URI is ``uri`` in the block, and as it was after it: set
    by ``mlflow.set_tracking_uri`` (which sets ``MLFLOW_TRACKING_URI`` too), by that variable
    alone, or not at all."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    previous = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous if previous != env else None)
        if env is not None:
            os.environ["MLFLOW_TRACKING_URI"] = env


class ModelLogging:
    """The model-logging half of :class:`MLflowMonitor`.

    Args:
        which (str): ``"final"`` (the weights training ended with) or ``"best"`` (the best
            checkpoint a MinSaver/MaxSaver kept in the log directory).
        output_names (list[str]): the tensors the logged model outputs.
        stat (str): with ``"best"`` and several kept stats, the one to choose by.
        registered_model_name (str): register the logged model under this name.

    Example:
        >>> logging = ModelLogging("final", ["prob"], None, "mnist")
    """

    def __init__(self, which, output_names, stat, registered_model_name):
        if which not in LOG_MODEL_CHOICES:
            raise ValueError(f"MLflowMonitor: log_model must be None, 'final' or 'best', got "
                             f"{which!r}.")
        self.which = which
        self.output_names = _check_names(output_names, "model_output_names")
        for value, name in ((stat, "model_stat"),
                            (registered_model_name, "registered_model_name")):
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"MLflowMonitor: {name} must be a non-empty str or None, got "
                                f"{value!r}.")
        self.stat = stat
        self.registered_model_name = registered_model_name
        self.model_uri = None
        self._tower_func = None

    def setup(self, trainer):
        """Check, before training, that the model can be exported with these outputs."""
        if trainer.tower_func is None:
            raise ValueError("MLflowMonitor(log_model=...): this trainer has no model tower to "
                             "export; leave log_model out.")
        if self.which == "best" and trainer.logdir is None:
            raise ValueError("MLflowMonitor(log_model='best') takes the best checkpoint kept in "
                             "the log directory, and this training has none: set one "
                             "(logger.set_logger_dir) or use log_model='final'.")
        self._tower_func = trainer.tower_func
        ModelExporter.for_tower_func(self._tower_func, self.output_names,
                                     JustCurrentSession()).serving_signature()

    def _best_checkpoint(self, logdir):
        records = [r for r in best_checkpoint_records(logdir) if r["checkpoints"]]
        if self.stat is not None:
            records = [r for r in records if r.get("stat") == self.stat]
        if len(records) != 1:
            kept = ", ".join(r.get("stat", "?") for r in records) or "none"
            raise LookupError(f"log_model='best' needs one best checkpoint in {logdir} "
                              f"(MinSaver/MaxSaver{' for ' + self.stat if self.stat else ''}); "
                              f"kept: {kept}" + (" (choose with model_stat=)" if records else ""))
        best = min(records[0]["checkpoints"], key=lambda c: c.get("rank", 1))
        return os.path.join(logdir, best["checkpoint"])

    def _weights(self, trainer):
        if self.which == "final":
            return DictRestore(read_model_weights(trainer.sess, trainer.graph))
        return SaverRestore(self._best_checkpoint(trainer.logdir))

    def log(self, trainer, mlflow, tracking_uri, run_id, timeout):
        """Export the model into a temporary directory and log it into ``run_id`` (registering
        it), waiting at most ``timeout`` seconds for the server; warnings instead of errors."""
        with tempfile.TemporaryDirectory(prefix="tfloop-mlflow-") as scratch:
            try:
                exporter = ModelExporter.for_tower_func(self._tower_func, self.output_names,
                                                        self._weights(trainer))
                exported = exporter.export_serving_version(scratch, 1)
            except Exception as e:
                logger.warning(f"MLflowMonitor: the {self.which} model could not be exported "
                               f"({type(e).__name__}: {e}); it is not logged. Training is "
                               "unaffected.")
                return
            call = BackgroundCall("MLflowMonitor", self._log_exported, mlflow, exported,
                                  tracking_uri, run_id)
            if not call.wait(timeout):
                logger.warning(f"MLflowMonitor: logging the {self.which} model to {tracking_uri} "
                               f"did not end within {timeout:g} s; it is left to finish in the "
                               "background (the run may lack it). Training is unaffected.")
                return
        if call.error is not None:
            logger.warning(f"MLflowMonitor: the {self.which} model could not be logged to "
                           f"{tracking_uri} ({type(call.error).__name__}: {call.error}). "
                           "Training is unaffected.")
            return
        self.model_uri = call.result
        registered = f", registered as {self.registered_model_name!r}" \
            if self.registered_model_name else ""
        logger.info(f"MLflowMonitor: the {self.which} model is logged as {self.model_uri}"
                    f"{registered}.")

    def _log_exported(self, mlflow, exported, tracking_uri, run_id):
        """In the daemon thread: wrap the export and log it with MLflow's tensorflow flavour,
        MLflow's tracking URI set to ``tracking_uri`` meanwhile; returns the model's URI."""
        module = ServingModule(exported)
        flavour = mlflow.tensorflow
        # The run is made active in this thread (MLflow's run stack is per thread) so that the
        # model goes to its experiment; leaving it ends it FINISHED, as training did.
        with _tracking_uri_set(mlflow, tracking_uri), mlflow.start_run(run_id=run_id):
            info = flavour.log_model(
                module, name="model", registered_model_name=self.registered_model_name,
                signature=_mlflow_signature(module) or False,
                pip_requirements=flavour.get_default_pip_requirements())
        return info.model_uri
