"""Run the input pipeline on a tf.data service cluster: a dispatcher and workers, TensorFlow's own
distributed tf.data engine, so that preprocessing scales beyond the training machine's CPUs.

- :class:`DataServiceInput`: a :class:`~tfloop.input.dataset.DatasetInput` whose dataset is
  produced by the service's workers (``tf.data.experimental.service.distribute``).
- :class:`DataServiceCluster`: start a dispatcher and workers, in this process or as processes
  on this machine (for tests, and for trying the service out).
- ``python -m tfloop.input.data_service dispatcher|worker ...``: start one server per command,
  e.g. on other machines (see docs/data.md).
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

from tfloop.compat import tf
from tfloop.input.dataset import DatasetInput
from tfloop.utils import logger
from tfloop.utils.checks import check_int, check_one_of

__all__ = ["DataServiceCluster", "DataServiceInput"]

PROCESSING_MODES = ("parallel_epochs", "distributed_epoch")
_LISTENING = re.compile(r"^tfloop data service (dispatcher|worker) listening on (\S+)$")


def _service():
    return tf.data.experimental.service


class DataServiceInput(DatasetInput):
    """A tf.data pipeline whose elements are produced by the workers of a tf.data service.

    The dataset is built as for :class:`DatasetInput` (eagerly, or by a function called in the
    training graph), repeated when its size is known, and sent to the service's dispatcher, which
    runs it on its workers; the training step reads their elements over gRPC. The dataset must be
    serializable (no ``py_function`` or ``from_generator`` when the workers are other
    processes). One pass over the dataset is the default epoch: its size in steps, or, for a
    dataset of unknown length (a ``filter``, files), one job of the service over it, a new job
    each epoch (with ``"parallel_epochs"``, every worker's whole pass). The input position is
    not saved for a resumed run (TensorFlow cannot serialize a data service iterator): a resumed
    run restarts the pipeline.

    Args:
        dataset (tf.data.Dataset or callable): the pipeline, as for :class:`DatasetInput`.
        service (str or DataServiceCluster): the dispatcher's address, e.g.
            ``"grpc://host:5050"``, or a running :class:`DataServiceCluster`.
        processing_mode (str): ``"parallel_epochs"`` (every worker runs the whole dataset; the
            trainer sees each element once per worker) or ``"distributed_epoch"`` (the workers
            split the dataset's source between them; each element once in all).
        job_name (str): trainers that give the same job name share one stream of elements
            (each element goes to one of them); by default each trainer has its own.
        repeat (bool): repeat a finite dataset, as for :class:`DatasetInput`.

    Example:
        >>> def make_dataset():
        ...     return tf.data.Dataset.from_tensor_slices((x, y)).map(augment).batch(64)
        >>> data = DataServiceInput(make_dataset, "grpc://dispatcher-host:5050")
        >>> TrainConfig(model=MyModel(), data=data, max_epoch=10)
    """

    def __init__(self, dataset, service, processing_mode="parallel_epochs", job_name=None,
                 repeat=True):
        super().__init__(dataset, repeat)
        if isinstance(service, DataServiceCluster):
            service = service.target
        if not isinstance(service, str) or not service:
            raise TypeError(f"DataServiceInput's service must be the dispatcher's address (e.g. "
                            f"'grpc://localhost:5050') or a DataServiceCluster, got {service!r}.")
        self.service = service if "://" in service else f"grpc://{service}"
        self.processing_mode = check_one_of(processing_mode, "DataServiceInput's processing_mode",
                                            PROCESSING_MODES)
        self.job_name = job_name

    _label = "DataServiceInput"

    def _last_stage(self, ds):
        return ds.apply(_service().distribute(self.processing_mode, self.service,
                                              job_name=self.job_name))

    def __str__(self):
        return f"DataServiceInput({self.service})"


class DataServiceCluster:
    """A tf.data service dispatcher and ``num_workers`` workers on this machine.

    With ``processes=False`` the servers run inside this process (TensorFlow's own threads);
    with ``processes=True`` each is a child process (``python -m tfloop.input.data_service``)
    that also ends when this process dies. Use it as a context manager, or call :meth:`stop`.

    Args:
        num_workers (int): how many workers.
        host (str): the host name the servers give to their clients. The servers themselves
            listen on every interface whatever it is (TensorFlow binds ``0.0.0.0`` and has no
            option for loopback only): run them on a trusted network (``docs/security.md``).
        port (int): the dispatcher's port; 0 picks a free one.
        processes (bool): run the servers as child processes.
        timeout (float): seconds to wait for the servers to start.

    Attributes:
        target (str): the dispatcher's address, ``grpc://host:port``, for
            :class:`DataServiceInput`.

    Example:
        >>> with DataServiceCluster(num_workers=2) as cluster:
        ...     data = DataServiceInput(make_dataset, cluster)
        ...     launch_train_with_config(TrainConfig(model=MyModel(), data=data, max_epoch=2),
        ...                              SimpleTrainer())
    """

    def __init__(self, num_workers=2, host="localhost", port=0, processes=False, timeout=120.0):
        self.num_workers = check_int(num_workers, "DataServiceCluster's num_workers", at_least=1)
        self.host = host
        self.processes = bool(processes)
        self.timeout = timeout
        self._servers = []
        self._procs = []
        self.target = None
        try:
            if self.processes:
                self._start_processes(port)
            else:
                self._start_in_process(port)
        except BaseException:
            self.stop()
            raise
        logger.info(f"tf.data service: dispatcher {self.target}, {num_workers} worker(s)"
                    f"{' (processes)' if self.processes else ''}.")

    @property
    def dispatcher_address(self):
        """``host:port`` of the dispatcher (the target without ``grpc://``)."""
        return self.target.split("://", 1)[1]

    def _start_in_process(self, port):
        service = _service()
        dispatcher = service.DispatchServer(service.DispatcherConfig(port=port))
        self._servers.append(dispatcher)
        self.target = f"grpc://{self.host}:{dispatcher.target.rsplit(':', 1)[1]}"
        for _ in range(self.num_workers):
            self._servers.append(service.WorkerServer(service.WorkerConfig(
                dispatcher_address=self.dispatcher_address,
                worker_address=f"{self.host}:%port%", port=0)))

    def _start_processes(self, port):
        dispatcher = self._spawn(["dispatcher", "--port", str(port)])
        self.target = self._wait_listening(dispatcher, "dispatcher")
        workers = [self._spawn(["worker", "--dispatcher", self.dispatcher_address])
                   for _ in range(self.num_workers)]
        for proc in workers:
            self._wait_listening(proc, "worker")

    def _spawn(self, args):
        cmd = [sys.executable, "-m", "tfloop.input.data_service"] + args + [
            "--host", self.host, "--parent", str(os.getpid())]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env)
        self._procs.append(proc)
        return proc

    def _wait_listening(self, proc, role):
        """The address the child prints once it listens; bounded by ``timeout``."""
        found = []

        def read():
            for line in proc.stdout:
                match = _LISTENING.match(line.strip())
                if match and match.group(1) == role:
                    found.append(match.group(2))
                    return
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(self.timeout)
        if not found:
            code = proc.poll()
            state = "still running" if code is None else f"exit code {code}"
            raise RuntimeError(f"The tf.data service {role} process did not start within "
                               f"{self.timeout:.0f} s ({state}); run `{sys.executable} -m "
                               f"tfloop.input.data_service {role} --help` to try it by hand.")
        return found[0]

    def stop(self):
        """Stop every server and child process (waiting a few seconds for each)."""
        # The dispatcher first: a worker stopped before it waits for its tasks to be released.
        for server in self._servers:
            server.stop()
        self._servers = []
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self._procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


# ---- python -m tfloop.input.data_service ---------------------------------------------------------
def _serve(args):
    service = _service()
    if args.role == "dispatcher":
        server = service.DispatchServer(service.DispatcherConfig(
            port=args.port, work_dir=args.work_dir, fault_tolerant_mode=bool(args.work_dir)))
        address = f"grpc://{args.host}:{server.target.rsplit(':', 1)[1]}"
    else:
        dispatcher = args.dispatcher.split("://", 1)[-1]
        server = service.WorkerServer(service.WorkerConfig(
            dispatcher_address=dispatcher, worker_address=f"{args.host}:%port%", port=args.port))
        address = f"{args.host}:{server._address.rsplit(':', 1)[1]}"
    print(f"tfloop data service {args.role} listening on {address}", flush=True)
    if args.parent is None:
        server.join()
        return
    # Started by DataServiceCluster: end with the parent process rather than outlive it.
    while os.getppid() == args.parent:
        time.sleep(0.5)
    server.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tfloop.input.data_service",
        description="Start a tf.data service dispatcher or worker and serve until killed.")
    sub = parser.add_subparsers(dest="role", required=True)
    dispatcher = sub.add_parser("dispatcher", help="the dispatcher (one per cluster)")
    dispatcher.add_argument("--port", type=int, default=5050, help="0 picks a free port")
    dispatcher.add_argument("--work-dir", default=None,
                            help="a directory for the dispatcher's journal: with it, a restarted "
                                 "dispatcher recovers its state (fault-tolerant mode)")
    worker = sub.add_parser("worker", help="a worker (as many as you like)")
    worker.add_argument("--dispatcher", required=True, help="the dispatcher's host:port")
    worker.add_argument("--port", type=int, default=0, help="0 picks a free port")
    for p in (dispatcher, worker):
        p.add_argument("--host", default="localhost",
                       help="this machine's name as the other servers and trainers reach it")
        p.add_argument("--parent", type=int, default=None, help=argparse.SUPPRESS)
    _serve(parser.parse_args(argv))


if __name__ == "__main__":
    main()
