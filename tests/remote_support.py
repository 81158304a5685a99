"""Senders for tests of tfloop.dataflow.remote and ZMQInput: each a fresh Python process (a
process forked from one running TensorFlow's threads can deadlock), killed by the test."""
import os
import pickle
import socket
import struct
import subprocess
import sys
import time

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


def announce_huge_frame(address, size, timeout):
    """Connect to the ZMQ PULL socket at ``address`` (``tcp://host:port`` or ``ipc://path``) as a
    ZMQ PUSH peer would (ZMTP 3.0, by hand) and announce a frame of ``size`` bytes without sending
    it. Returns whether the receiver closed the connection within ``timeout`` seconds (a receiver
    without a frame limit allocates the frame and waits for its bytes)."""
    if address.startswith("ipc://"):
        family, target = socket.AF_UNIX, address[len("ipc://"):]
    else:
        host, port = address[len("tcp://"):].rsplit(":", 1)
        family, target = socket.AF_INET, (host, int(port))
    deadline = time.monotonic() + timeout
    while True:
        peer = socket.socket(family, socket.SOCK_STREAM)
        try:
            peer.connect(target)
            break
        except OSError:
            peer.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with peer:
        greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\x00")
        peer.sendall(greeting + b"\x00" * 32)
        ready = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 4) + b"PUSH"
        peer.sendall(bytes([0x04, len(ready)]) + ready)
        peer.sendall(b"\x02" + struct.pack(">Q", size) + b"\x00" * 4096)
        peer.settimeout(0.2)
        while time.monotonic() < deadline:
            try:
                if not peer.recv(4096):
                    return True
            except TimeoutError:
                continue
            except ConnectionResetError:
                return True
        return False


def virtual_memory_bytes():
    """This process's virtual memory size (VmSize), in bytes."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
