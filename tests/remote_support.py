"""Senders for tests of tfloop.dataflow.remote and ZMQInput: each a fresh Python process (a
process forked from one running TensorFlow's threads can deadlock), killed by the test."""
import os
import pickle
import subprocess
import sys

from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = """
import pickle, sys
with open(sys.argv[1], "rb") as f:
    kind, args, kwargs = pickle.load(f)
if kind == "dataflow":
    from tfloop.dataflow import DataFromList, send_dataflow_zmq
    datapoints, address = args
    send_dataflow_zmq(DataFromList(datapoints, shuffle=False), address, **kwargs)
else:
    import zmq
    address, frames = args
    context = zmq.Context()
    socket = context.socket(zmq.PUSH)
    socket.connect(address)
    socket.send_multipart(frames)
    socket.close(linger=10000)
    context.term()
"""


class Senders:
    """Processes that send to ZMQ endpoints."""

    def __init__(self, directory):
        self.directory = directory
        self.procs = []

    def _start(self, kind, args, kwargs):
        n = len(self.procs)
        order = os.path.join(self.directory, f"sender{n}.pickle")
        with open(order, "wb") as f:
            pickle.dump((kind, args, kwargs), f)
        env = dict(os.environ, PYTHONPATH=ROOT)
        with open(os.path.join(self.directory, f"sender{n}.log"), "w") as log:
            proc = subprocess.Popen([sys.executable, "-c", SCRIPT, order], env=env,
                                    stdout=log, stderr=log)
        self.procs.append(proc)
        return proc

    def dataflow(self, datapoints, address, **kwargs):
        """``send_dataflow_zmq(DataFromList(datapoints, shuffle=False), address, **kwargs)``."""
        return self._start("dataflow", (datapoints, address), kwargs)

    def frames(self, address, frames):
        """Push one message of ``frames`` (bytes) to ``address``."""
        return self._start("frames", (address, frames), {})

    def stop(self):
        for proc in self.procs:
            proc.kill()
            proc.wait(scaled_timeout(10))


def running_senders(tmp_path):
    """The body of a ``senders`` fixture: ``yield from running_senders(tmp_path)``."""
    directory = tmp_path / "senders"
    directory.mkdir()
    started = Senders(str(directory))
    yield started
    started.stop()
