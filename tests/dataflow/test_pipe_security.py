"""The ZMQ pipes of the parallel DataFlows accept only this user's processes: a process of another
local user can neither connect to them nor get anything unpickled in the training process."""
import gc
import multiprocessing
import os
import pickle
import pwd
import re
import socket
import stat
import subprocess
import sys

import pytest
from support import scaled_timeout

from tfloop.dataflow import (
    DataFromList,
    MultiProcessMapAndBatchDataZMQ,
    MultiProcessMapDataZMQ,
    MultiProcessRunnerZMQ,
)

zmq = pytest.importorskip("zmq")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FORK = multiprocessing.get_context("fork")

LISTENING = "00010000"  # the __SO_ACCEPTCON flag of /proc/net/unix


class Exploit:
    """Makes a directory when unpickled."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def listening_unix_paths(pids):
    """The paths (``@name`` for abstract ones) of the unix sockets listening in ``pids``."""
    inodes = set()
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            match = re.fullmatch(r"socket:\[(\d+)\]", link)
            if match:
                inodes.add(match.group(1))
    with open("/proc/net/unix") as f:
        rows = [line.split() for line in f.read().splitlines()[1:]]
    return sorted({row[7] for row in rows
                   if len(row) >= 8 and row[6] in inodes and row[3] == LISTENING})


def _attack_as_nobody(paths, payload, nobody, conn):
    """In a child forked from the test (modules already loaded: user nobody cannot read the
    Python installation under /root): become nobody; for each socket path, connect as a plain
    unix socket and, where that works, push the pickle through ZMQ the way the flow's own workers
    send (PUSH and DEALER). Sends ``{path: {listed, outcome}}`` back. ``nobody`` (the passwd
    entry) is looked up before the fork: the child of a threaded process should not load NSS."""
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    with open("/proc/net/unix") as f:
        listed = f.read()
    report = {}
    for path in paths:
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            raw.connect("\0" + path[1:] if path.startswith("@") else path)
            outcome = "connected"
        except OSError as e:
            outcome = type(e).__name__
        finally:
            raw.close()
        if outcome == "connected":
            context = zmq.Context()
            for kind in (zmq.PUSH, zmq.DEALER):
                sock = context.socket(kind)
                sock.connect("ipc://" + path)
                sock.send(payload)
                sock.close(linger=2000)
            context.term()
        report[path] = {"listed": path in listed, "outcome": outcome}
    conn.send(report)


def attack(paths, payload):
    """Run :func:`_attack_as_nobody`; its report."""
    receive, send = FORK.Pipe(duplex=False)
    child = FORK.Process(target=_attack_as_nobody,
                         args=(paths, payload, pwd.getpwnam("nobody"), send))
    child.start()
    try:
        assert receive.poll(scaled_timeout(60)), "the attacker process did not report"
        return receive.recv()
    finally:
        child.join(scaled_timeout(10))
        assert child.exitcode == 0


def items(n):
    return DataFromList([[i] for i in range(n)], shuffle=False)


def flows():
    """(name, make the flow, the datapoints/batches of one pass) for every ZMQ flow."""
    return [
        ("runner", lambda: MultiProcessRunnerZMQ(items(4), num_proc=1), [[0], [1], [2], [3]]),
        ("map", lambda: MultiProcessMapDataZMQ(items(4), 2, lambda dp: [dp[0] * 10],
                                               strict=True),
         [[0], [10], [20], [30]]),
        ("map_and_batch", lambda: MultiProcessMapAndBatchDataZMQ(items(4), 1, lambda dp: dp, 2),
         [[[0, 1]], [[2, 3]]]),
    ]


def stream(df):
    """The datapoints of pass after pass of ``df``, as plain lists."""
    while True:
        for dp in df:
            yield [c.tolist() if hasattr(c, "tolist") else c for c in dp]


def take(datapoints, count):
    return [next(datapoints) for _ in range(count)]


needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="becoming user nobody needs root (the suite runs as root)")


@needs_root
@pytest.mark.parametrize("name,make,one_pass", flows(), ids=[f[0] for f in flows()])
def test_another_user_cannot_connect_or_get_anything_unpickled(tmp_path, name, make, one_pass):
    os.chmod(tmp_path, 0o777)
    marker = str(tmp_path / "unpickled")
    df = make()
    df.reset_state()
    try:
        datapoints = stream(df)
        first = take(datapoints, 2)  # every worker is up and every pipe bound
        pids = [os.getpid()] + [w.pid for w in df._group.workers]
        paths = listening_unix_paths(pids)
        assert paths, "the flow listens on no unix socket"
        report = attack(paths, pickle.dumps(Exploit(marker)))
        assert all(r["listed"] for r in report.values()), report
        assert {r["outcome"] for r in report.values()} == {"PermissionError"}, report
        # On the abstract addresses of old, the pushed pickle arrived within ~100 datapoints.
        assert first + take(datapoints, 200) == (one_pass * 202)[:202]
    finally:
        df.close()
    assert not os.path.exists(marker)


@pytest.mark.parametrize("name,make,one_pass", flows(), ids=[f[0] for f in flows()])
def test_pipes_are_files_in_a_private_directory_removed_at_close(tmp_path, monkeypatch, name,
                                                                  make, one_pass):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    df = make()
    df.reset_state()
    assert take(stream(df), 2) == (one_pass * 2)[:2]
    paths = listening_unix_paths([os.getpid()] + [w.pid for w in df._group.workers])
    assert paths and not [p for p in paths if p.startswith("@")]  # no abstract address
    directories = {os.path.dirname(p) for p in paths}
    assert len(directories) == 1
    directory = directories.pop()
    assert os.path.dirname(directory) == str(tmp_path)
    info = os.stat(directory)
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
    df.close()
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_the_directory_goes_with_a_flow_that_is_garbage_collected(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    df = MultiProcessRunnerZMQ(items(3), num_proc=1)
    df.reset_state()
    assert len(os.listdir(tmp_path)) == 1
    del df
    gc.collect()
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_the_directory_goes_when_the_process_ends_by_an_exception(tmp_path):
    pipes = tmp_path / "tmp"
    pipes.mkdir()
    script = (
        "import os, tempfile\n"
        "from tfloop.dataflow import DataFromList, MultiProcessRunnerZMQ\n"
        f"tempfile.tempdir = {str(pipes)!r}\n"
        "df = MultiProcessRunnerZMQ(DataFromList([[1], [2]], shuffle=False), num_proc=2)\n"
        "df.reset_state()\n"
        "print('pipes:', os.listdir(tempfile.tempdir), flush=True)\n"
        "raise RuntimeError('the training failed')\n")
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=scaled_timeout(60))
    assert done.returncode == 1 and "the training failed" in done.stderr
    assert "pipes: ['tfloop-" in done.stdout
    assert os.listdir(pipes) == []


def test_a_temp_dir_too_long_for_a_socket_path_falls_back_to_tmp(tmp_path, monkeypatch):
    long_dir = tmp_path / ("d" * 100)
    long_dir.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(long_dir))
    df = MultiProcessRunnerZMQ(items(3), num_proc=1)
    df.reset_state()
    try:
        paths = listening_unix_paths([os.getpid()])
        assert [os.path.dirname(os.path.dirname(p)) for p in paths] == ["/tmp"]
        assert take(stream(df), 3) == [[0], [1], [2]]
    finally:
        df.close()
    assert not os.path.exists(os.path.dirname(paths[0]))


def test_no_usable_directory_is_a_clear_error(tmp_path, monkeypatch):
    from tfloop.dataflow import _workers
    monkeypatch.setattr(_workers, "MAX_SOCKET_PATH", 20)
    df = MultiProcessRunnerZMQ(items(3), num_proc=1)
    with pytest.raises(OSError, match="Set TMPDIR to a shorter directory"):
        df.reset_state()
