"""Profiling: GPU utilisation sampled while epochs run, Chrome traces of chosen steps, and
TensorBoard profiles of a step range. tensorpack's module of that name also holds the memory and
throughput trackers, re-exported here."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading

from tfloop.callbacks.base import Callback
from tfloop.callbacks.memory import GPUMemoryTracker, HostMemoryTracker, PeakMemoryTracker
from tfloop.callbacks.throughput import ThroughputTracker
from tfloop.compat import tf, tfv1
from tfloop.utils import logger
from tfloop.utils.checks import check_callable, check_int, check_positive_number
from tfloop.utils.fs import atomic_write

__all__ = ["GPUUtilizationTracker", "GraphProfiler", "TensorBoardProfiler", "nvidia_smi_sampler",
           "nvml_sampler", "find_gpus", "GPUMemoryTracker", "HostMemoryTracker",
           "PeakMemoryTracker", "ThroughputTracker"]

_NVML_SCRIPT = r"""
import sys, time
import pynvml
interval = float(sys.argv[1])
pynvml.nvmlInit()
handles = []
for dev in sys.argv[2:]:
    if dev.isdigit():
        handle = pynvml.nvmlDeviceGetHandleByIndex(int(dev))
    else:
        handle = pynvml.nvmlDeviceGetHandleByUUID(dev)
    handles.append((pynvml.nvmlDeviceGetIndex(handle), handle))
while True:
    for index, handle in handles:
        print("%d, %d" % (index, pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))
    sys.stdout.flush()
    time.sleep(interval)
"""


def nvidia_smi_sampler(devices, interval):
    """The command of an ``nvidia-smi`` process that prints ``<index>, <utilization %>`` per GPU
    every ``interval`` seconds."""
    return ["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits",
            "-i", ",".join(devices), "-lms", str(max(1, int(interval * 1000)))]


def nvml_sampler(devices, interval):
    """The command of a small Python process that prints the same lines as
    :func:`nvidia_smi_sampler` through NVML (the ``pynvml`` package)."""
    return [sys.executable, "-c", _NVML_SCRIPT, str(interval)] + list(devices)


def _default_sampler():
    if importlib.util.find_spec("pynvml") is not None:
        return nvml_sampler, None
    if shutil.which("nvidia-smi"):
        return nvidia_smi_sampler, None
    return None, "neither the pynvml package nor the nvidia-smi program is available"


def find_gpus():
    """The GPUs this process trains on, as ids ``nvidia-smi -i`` understands.

    Returns:
        (list[str], str or None): the ids, and when there are none, the reason.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = None
    if visible is not None:
        ids = [d.strip() for d in visible.split(",") if d.strip()]
        if not ids or ids[0].startswith("-"):
            return [], f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return [], "TensorFlow sees no GPU"
    if ids is None:
        ids = [str(i) for i in range(len(gpus))]
    return ids[:len(gpus)], None


class _UtilizationAverager:
    """Mean utilisation per GPU over the lines received while active (an epoch)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._active = False
        self._sums = {}
        self._counts = {}
        self.bad_lines = []

    def start(self):
        with self._lock:
            self._sums, self._counts, self._active = {}, {}, True

    def stop(self):
        """End the period; returns ``{gpu id: mean utilisation}`` over it."""
        with self._lock:
            self._active = False
            return {gpu: self._sums[gpu] / self._counts[gpu] for gpu in self._sums}

    def add_line(self, line):
        key, sep, value = line.strip().partition(",")
        try:
            value = float(value)
        except ValueError:
            if line.strip() and len(self.bad_lines) < 5:
                self.bad_lines.append(line.strip())
            return
        key = key.strip()
        if not sep or not key:
            return
        with self._lock:
            if self._active:
                self._sums[key] = self._sums.get(key, 0.0) + value
                self._counts[key] = self._counts.get(key, 0) + 1

    def consume(self, stream):
        for line in stream:
            self.add_line(line)


class GPUUtilizationTracker(Callback):
    """Put the mean utilisation of each GPU over each epoch as ``GPUUtil/<id>`` (percent).

    A background process samples the GPUs during the whole training (through NVML when the
    ``pynvml`` package is installed, else ``nvidia-smi``); only the samples taken between
    ``before_epoch`` and ``after_epoch`` count, so validation and saving between epochs do not
    dilute the number. With no GPU (``CUDA_VISIBLE_DEVICES`` hides them all, TensorFlow sees none,
    or neither NVML nor nvidia-smi exists) it says so once and does nothing.

    Args:
        devices (list[int or str]): GPU ids as ``nvidia-smi -i`` takes them; by default the GPUs
            in ``CUDA_VISIBLE_DEVICES``, or all of them.
        interval (float): seconds between samples.
        sampler (callable): ``sampler(devices, interval) -> argv`` of a process that prints one
            ``<id>, <percent>`` line per GPU and sample, forever; :func:`nvml_sampler` or
            :func:`nvidia_smi_sampler` by default. The process dies at the end of training, or when
            it next writes after the training process died.

    Example:
        >>> callbacks = [GPUUtilizationTracker()]          # puts GPUUtil/0, GPUUtil/1, ...
    """

    _chief_only = False

    def __init__(self, devices=None, interval=1.0, sampler=None):
        if devices is not None:
            if isinstance(devices, (int, str)):
                devices = [devices]
            devices = [str(d) for d in devices]
            if not devices:
                raise ValueError("GPUUtilizationTracker devices must be a non-empty list of GPU "
                                 "ids or None (all visible GPUs), got [].")
        check_positive_number(interval, "GPUUtilizationTracker interval", unit="seconds")
        check_callable(sampler, "GPUUtilizationTracker sampler", allow_none=True)
        self.devices = devices
        self.interval = float(interval)
        self._sampler = sampler
        self._proc = None
        self._reader = None
        self._averager = _UtilizationAverager()
        self._means = None
        self._warned_bad_lines = False
        self.enabled = True

    def _disable(self, reason):
        logger.info(f"GPUUtilizationTracker: {reason}; not tracking GPU utilization.")
        self.enabled = False

    def _before_train(self):
        devices, reason = (self.devices, None) if self.devices is not None else find_gpus()
        sampler = self._sampler
        if reason is None and sampler is None:
            sampler, reason = _default_sampler()
        if reason is not None:
            self._disable(reason)
            return
        command = sampler(devices, self.interval)
        try:
            self._proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          stdin=subprocess.DEVNULL, text=True)
        except OSError as e:
            self._disable(f"cannot start {command[0]!r} ({e})")
            return
        self.devices = devices
        self._reader = threading.Thread(target=self._averager.consume, args=(self._proc.stdout,),
                                        name="GPUUtilizationTracker", daemon=True)
        self._reader.start()
        logger.info(f"GPUUtilizationTracker: sampling GPU {','.join(devices)} every {self.interval}"
                    " s.")

    def _before_epoch(self):
        if self.enabled:
            self._averager.start()

    def _after_epoch(self):
        if self.enabled:
            self._means = self._averager.stop()

    def _trigger_epoch(self):
        if not self.enabled:
            return
        if self._proc.poll() is not None:
            stderr = self._proc.stderr.read().strip()
            self._disable(f"the sampler process {self._proc.args[0]!r} exited with code "
                          f"{self._proc.returncode}{': ' + stderr if stderr else ''}")
            return
        if self._averager.bad_lines and not self._warned_bad_lines:
            logger.warning("GPUUtilizationTracker: ignored sampler output lines such as "
                           f"{self._averager.bad_lines[0]!r}.")
            self._warned_bad_lines = True
        if not self._means:
            logger.info(f"GPUUtilizationTracker: no sample during epoch {self.epoch_num} (shorter "
                        f"than the {self.interval} s interval?).")
            return
        for gpu, mean in sorted(self._means.items()):
            self.trainer.monitors.put_scalar(f"GPUUtil/{gpu}", mean)

    def _after_train(self):
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._reader.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()


class GraphProfiler(Callback):
    """Trace the training steps it runs for, and write what TensorFlow recorded.

    It asks for a full trace (``RunOptions(trace_level=FULL_TRACE)``) along with the step itself
    (no extra ``session.run``), so choose the steps by wrapping it: unwrapped it traces every step.
    Files go to the log directory, named after the global step once the step finished.

    Args:
        dump_metadata (bool): write the ``RunMetadata`` proto as ``runmetadata-<step>.pb``.
        dump_tracing (bool): write a Chrome trace as ``chrome-trace-<step>.json`` (open it at
            chrome://tracing or https://ui.perfetto.dev).
        dump_event (bool): put the run metadata to the monitors as an event (TensorBoard shows it
            in the graph tab).

    Example:
        >>> PeriodicCallback(GraphProfiler(), every_k_steps=1000)
        >>> EnableCallbackIf(GraphProfiler(), lambda self: self.global_step in (10, 500))
    """

    def __init__(self, dump_metadata=False, dump_tracing=True, dump_event=False):
        if not (dump_metadata or dump_tracing or dump_event):
            raise ValueError("GraphProfiler would write nothing: set dump_metadata, dump_tracing "
                             "or dump_event.")
        self.dump_metadata = dump_metadata
        self.dump_tracing = dump_tracing
        self.dump_event = dump_event
        self.log_dir = None

    def _setup_graph(self):
        self.log_dir = self.trainer.logdir
        if self.log_dir is None and (self.dump_metadata or self.dump_tracing):
            raise ValueError("GraphProfiler writes into the log directory, but none is set: call "
                             "tfloop.logger.set_logger_dir(...) before training.")
        if self.dump_tracing:
            # Not a public TensorFlow API; imported here so a TensorFlow without it only affects
            # this callback.
            from tensorflow.python.client import timeline
            self._timeline = timeline.Timeline
        options = tfv1.RunOptions(trace_level=tfv1.RunOptions.FULL_TRACE)
        self._run_args = tfv1.train.SessionRunArgs(fetches=None, options=options)

    def _before_run(self, ctx):
        return self._run_args

    def _after_run(self, ctx, values):
        metadata = values.run_metadata
        step = self.global_step
        try:
            if self.dump_tracing:
                step_timeline = self._timeline(step_stats=metadata.step_stats)
                trace = step_timeline.generate_chrome_trace_format()
                atomic_write(os.path.join(self.log_dir, f"chrome-trace-{step}.json"),
                             trace.encode("utf-8"))
            if self.dump_metadata:
                atomic_write(os.path.join(self.log_dir, f"runmetadata-{step}.pb"),
                             metadata.SerializeToString())
        except OSError as e:
            logger.error(f"GraphProfiler could not write its files at global step {step}: {e}")
        if self.dump_event:
            event = tfv1.Event()
            event.tagged_run_metadata.tag = f"step{step}"
            event.tagged_run_metadata.run_metadata = metadata.SerializeToString()
            self.trainer.monitors.put_event(event)


class TensorBoardProfiler(Callback):
    """Profile a range of training steps with TensorFlow's profiler, for TensorBoard's Profile
    dashboard (which needs the ``tensorboard-plugin-profile`` package).

    The profiler (``tf.profiler.experimental``) runs from right before the step that follows
    global step ``start_step`` until global step ``stop_step`` is reached (or training ends), and
    writes ``plugins/profile/<time>/<host>.xplane.pb`` into ``logdir``: the session's ops on
    every device, the host's threads and the input pipeline.

    Args:
        start_step (int): the global step after which profiling starts (0: the first step).
        stop_step (int): the global step at which it stops; larger than ``start_step``.
        logdir (str): where to write; the log directory by default (where the
            ``TFEventWriter`` writes, so the dashboard shows the profile with the run).

    Example:
        >>> TensorBoardProfiler(start_step=100, stop_step=110)   # steps 101 to 110
    """

    def __init__(self, start_step: int = 10, stop_step: int = 20, logdir: str | None = None):
        self.start_step = check_int(start_step, "TensorBoardProfiler: start_step", at_least=0)
        self.stop_step = check_int(stop_step, "TensorBoardProfiler: stop_step",
                                   at_least=self.start_step + 1)
        self._logdir_arg = logdir
        self.logdir = None
        self.active = False

    def _setup_graph(self):
        self.logdir = self._logdir_arg or self.trainer.logdir
        if self.logdir is None:
            raise ValueError("TensorBoardProfiler writes into the log directory, but none is set: "
                             "call tfloop.logger.set_logger_dir(...) or give logdir=.")

    def _before_run(self, ctx):
        if not self.active and self.start_step <= self.global_step < self.stop_step:
            tf.profiler.experimental.start(self.logdir)
            self.active = True
            logger.info(f"TensorBoardProfiler: profiling from global step {self.global_step} to "
                        f"{self.stop_step} into {self.logdir}.")

    def _trigger_step(self):
        if self.active and self.global_step >= self.stop_step:
            self._stop()

    def _after_train(self):
        if self.active:
            self._stop()

    def _stop(self):
        tf.profiler.experimental.stop()
        self.active = False
        logger.info(f"TensorBoardProfiler: the profile of the steps up to global step "
                    f"{self.global_step} is in {self.logdir}/plugins/profile.")
