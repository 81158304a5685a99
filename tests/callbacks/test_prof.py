"""GPUUtilizationTracker (no-GPU path and a real sampler process) and GraphProfiler traces."""
import glob
import importlib.util
import json
import os
import sys
import textwrap
import time

import pytest
from support import FINAL_WEIGHTS_READ, RunCounter, scaled_timeout, train_linear

import tfloop
from tfloop.callbacks.prof import _UtilizationAverager, find_gpus, nvml_sampler
from tfloop.compat import tfv1

# A stand-in for nvidia-smi: prints "<id>, <percent>" per GPU every interval, forever, after one
# line of noise; it writes its pid to a marker file first so the test knows it runs.
FAKE_SAMPLER = textwrap.dedent("""
    import os, sys, time
    interval, marker, devices = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
    values = {"0": 40, "3": 70}
    print("[Not Supported]", flush=True)
    with open(marker + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(marker + ".tmp", marker)
    while True:
        for dev in devices:
            print("%s, %d" % (dev, values[dev]))
        sys.stdout.flush()
        time.sleep(interval)
""")



class SlowSteps(tfloop.Callback):
    """Makes each step take a while, so that epochs last long enough to be sampled; waits in
    before_train for ``marker`` to exist (the sampler process started)."""

    def __init__(self, seconds, marker=None):
        self.seconds = seconds
        self.marker = marker

    def _before_train(self):
        deadline = time.monotonic() + scaled_timeout(20)
        while self.marker and not os.path.exists(self.marker) and time.monotonic() < deadline:
            time.sleep(0.01)

    def _trigger_step(self):
        time.sleep(self.seconds)


def gpu_scalars(trainer):
    return {name: [value for _, value in trainer.monitors.get_history(name)]
            for name in trainer.monitors.scalar_names() if name.startswith("GPUUtil/")}


def test_without_gpu_it_says_so_once_and_does_nothing(tfloop_log):
    tracker = tfloop.GPUUtilizationTracker()
    trainer = train_linear([tracker], max_epoch=2)
    notes = [msg for _, msg in tfloop_log if "not tracking GPU utilization" in msg]
    assert notes == ["GPUUtilizationTracker: TensorFlow sees no GPU; not tracking GPU utilization."]
    assert not tracker.enabled
    assert gpu_scalars(trainer) == {}


@pytest.mark.parametrize("visible", ["", "-1", " , "])
def test_cuda_visible_devices_hiding_every_gpu(monkeypatch, visible):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert find_gpus() == ([], f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU")


@pytest.mark.skipif(importlib.util.find_spec("pynvml") is not None, reason="pynvml is installed")
def test_explicit_devices_without_nvml_or_nvidia_smi(monkeypatch, tmp_path, tfloop_log):
    monkeypatch.setenv("PATH", str(tmp_path))
    tracker = tfloop.GPUUtilizationTracker(devices=[0])
    train_linear([tracker], max_epoch=1)
    assert not tracker.enabled
    assert any("neither the pynvml package nor the nvidia-smi program" in msg
               for _, msg in tfloop_log)


def test_sampler_process_output_is_averaged_per_epoch(tmp_path, tfloop_log):
    marker = str(tmp_path / "sampler.pid")

    def sampler(devices, interval):
        return [sys.executable, "-c", FAKE_SAMPLER, str(interval), marker] + devices

    tracker = tfloop.GPUUtilizationTracker(devices=[0, 3], interval=0.01, sampler=sampler)
    trainer = train_linear([tracker, SlowSteps(0.1, marker)], max_epoch=2)
    assert gpu_scalars(trainer) == {"GPUUtil/0": [40.0, 40.0], "GPUUtil/3": [70.0, 70.0]}
    assert [step for step, _ in trainer.monitors.get_history("GPUUtil/0")] == [3, 6]
    warnings = [msg for level, msg in tfloop_log if level == "WARNING"]
    assert warnings == ["GPUUtilizationTracker: ignored sampler output lines such as "
                        "'[Not Supported]'."]
    with open(marker) as f:
        pid = int(f.read())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)             # stopped and reaped at the end of training


# The few pynvml calls the NVML sampler makes, over two pretend GPUs: index 0, and index 5 asked
# for by UUID. Utilisation is 10 * (index + 1).
FAKE_PYNVML = textwrap.dedent("""
    import os, types
    def nvmlInit():
        with open(os.environ["FAKE_NVML_MARKER"], "w") as f:
            f.write(str(os.getpid()))
    def nvmlDeviceGetHandleByIndex(index):
        return ("index", index)
    def nvmlDeviceGetHandleByUUID(uuid):
        assert uuid == "GPU-5e3f"
        return ("uuid", 5)
    def nvmlDeviceGetIndex(handle):
        return handle[1]
    def nvmlDeviceGetUtilizationRates(handle):
        return types.SimpleNamespace(gpu=10 * (handle[1] + 1), memory=0)
""")


def test_nvml_sampler_script(tmp_path, monkeypatch):
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)
    marker = str(tmp_path / "nvml.pid")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("FAKE_NVML_MARKER", marker)
    tracker = tfloop.GPUUtilizationTracker(devices=[0, "GPU-5e3f"], interval=0.01,
                                           sampler=nvml_sampler)
    trainer = train_linear([tracker, SlowSteps(0.1, marker)], max_epoch=1)
    assert gpu_scalars(trainer) == {"GPUUtil/0": [10.0], "GPUUtil/5": [60.0]}


def test_sampler_process_that_dies_disables_the_tracker(tfloop_log):
    def sampler(devices, interval):
        return ["sh", "-c", "echo 'NVML: driver not loaded' >&2; exit 2"]

    tracker = tfloop.GPUUtilizationTracker(devices=[0], sampler=sampler)
    trainer = train_linear([tracker, SlowSteps(0.1)], max_epoch=2)
    notes = [msg for _, msg in tfloop_log if "not tracking GPU utilization" in msg]
    assert notes == ["GPUUtilizationTracker: the sampler process 'sh' exited with code 2: NVML: "
                     "driver not loaded; not tracking GPU utilization."]
    assert gpu_scalars(trainer) == {}


def test_averager_counts_only_lines_received_while_active():
    averager = _UtilizationAverager()
    averager.add_line("0, 99\n")                 # before the epoch: ignored
    averager.start()
    for line in ["0, 10", "1, 5", "0, 30\n", "0, [N/A]", "garbage", "", ", 7"]:
        averager.add_line(line)
    assert averager.stop() == {"0": 20.0, "1": 5.0}
    averager.add_line("0, 50")                   # after the epoch: ignored
    assert averager.bad_lines == ["0, [N/A]", "garbage"]
    averager.start()
    averager.add_line("1, 60")
    assert averager.stop() == {"1": 60.0}


@pytest.mark.parametrize("kwargs, error", [
    ({"devices": []}, ValueError),
    ({"interval": 0}, ValueError),
    ({"sampler": "nvidia-smi"}, TypeError),
])
def test_tracker_bad_arguments(kwargs, error):
    with pytest.raises(error):
        tfloop.GPUUtilizationTracker(**kwargs)


class RecordEvents(tfloop.MonitorBase):
    def __init__(self):
        self.events = []

    def process_event(self, event):
        self.events.append(event)


def test_graph_profiler_writes_traces_for_the_chosen_steps_only(logdir):
    events = RecordEvents()
    counter = RunCounter()
    profiler = tfloop.GraphProfiler(dump_metadata=True, dump_event=True)
    train_linear([counter, tfloop.PeriodicCallback(profiler, every_k_steps=2)], monitors=[events],
                 max_epoch=2)
    traces = sorted(glob.glob(os.path.join(logdir, "chrome-trace-*.json")))
    # The steps that end at a multiple of 2 are traced, and the files named after them.
    assert [os.path.basename(p) for p in traces] == ["chrome-trace-2.json", "chrome-trace-4.json",
                                                     "chrome-trace-6.json"]
    for path in traces:
        with open(path) as f:
            trace = json.load(f)
        names = {event.get("name") for event in trace["traceEvents"]}
        assert any("MatMul" in str(name) for name in names)
    with open(os.path.join(logdir, "runmetadata-4.pb"), "rb") as f:
        metadata = tfv1.RunMetadata.FromString(f.read())
    assert len(metadata.step_stats.dev_stats) > 0
    assert [(e.step, e.tagged_run_metadata.tag) for e in events.events] == [
        (2, "step2"), (4, "step4"), (6, "step6")]
    assert not [p for p in os.listdir(logdir) if p.endswith(".tmp")]
    # Traced along with the training step: exactly as many session runs as without the profiler.
    baseline = RunCounter()
    train_linear([baseline], max_epoch=2)
    assert counter.runs == baseline.runs == 6 + FINAL_WEIGHTS_READ


def test_graph_profiler_needs_a_log_dir_and_something_to_write():
    with pytest.raises(ValueError, match="set_logger_dir"):
        train_linear([tfloop.GraphProfiler()], max_epoch=1)
    with pytest.raises(ValueError, match="would write nothing"):
        tfloop.GraphProfiler(dump_tracing=False)
