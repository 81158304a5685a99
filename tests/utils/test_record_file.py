"""RecordFile: records written in place within one page, the reserve that grows, compaction, and a
process killed at random moments that always leaves a complete JSON list."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from support import scaled_timeout

from tfloop.utils.fs import read_json_records
from tfloop.utils.record_file import MIN_RESERVE, PAGE, RecordFile


def line(i, width=0):
    return ("" if i == 0 else ",") + json.dumps({"epoch_num": i + 1, "pad": "x" * width}) + "\n"


def json_file(path):
    f = RecordFile(str(path), tail=b"]\n")
    f.rewrite(b"[\n")
    return f


def test_records_fill_the_reserve_without_moving_the_file(tmp_path):
    path = tmp_path / "stats.json"
    f = json_file(path)
    inode, size = os.stat(path).st_ino, os.path.getsize(path)
    assert size == 2 + MIN_RESERVE + 2
    for i in range(10):
        assert f.append(line(i).encode())
        assert (os.stat(path).st_ino, os.path.getsize(path)) == (inode, size)
        assert [r["epoch_num"] for r in json.loads(path.read_text())] == list(range(1, i + 2))
    f.finish()
    assert path.read_text() == "[\n" + "".join(line(i) for i in range(10)) + "]\n"


def test_a_record_that_would_cross_a_page_starts_on_the_next_one(tmp_path):
    path = tmp_path / "stats.json"
    f = json_file(path)
    text = [line(i, width=PAGE // 3).encode() for i in range(4)]
    offsets = []
    for t in text:
        assert f.append(t)
        offsets.append(f._end - len(t))
    assert all(start // PAGE == (start + len(t) - 1) // PAGE for start, t in zip(offsets, text))
    assert offsets[2] == PAGE     # the third would cross the first page's end: it starts the next
    assert len(json.loads(path.read_text())) == 4
    f.finish()
    assert path.read_bytes() == b"[\n" + b"".join(text) + b"]\n"


def test_a_used_up_reserve_or_a_long_record_goes_through_a_rewrite(tmp_path):
    path = tmp_path / "stats.json"
    f = json_file(path)
    written = [b"[\n"]
    i = 0
    while f.append(line(i, width=200).encode()):
        written.append(line(i, width=200).encode())
        i += 1
    assert sum(map(len, written)) > MIN_RESERVE - PAGE
    inode = os.stat(path).st_ino
    f.grow(line(i, width=200).encode())
    written.append(line(i, width=200).encode())
    assert os.stat(path).st_ino != inode            # an atomic rewrite: a new file
    assert os.path.getsize(path) >= 2 * sum(map(len, written))   # the reserve grew with the body
    assert not f.append(line(i + 1, width=PAGE).encode())   # longer than a page
    f.finish()
    assert path.read_bytes() == b"".join(written) + b"]\n"


def test_a_file_without_a_tail_is_truncated_at_the_end(tmp_path):
    path = tmp_path / "stats.csv"
    f = RecordFile(str(path))
    f.rewrite(b"a,b\r\n")
    inode = os.stat(path).st_ino
    assert f.append(b"1,2\r\n") and f.append(b"3,4\r\n")
    f.finish()
    assert (path.read_bytes(), os.stat(path).st_ino) == (b"a,b\r\n1,2\r\n3,4\r\n", inode)


def test_a_replaced_or_removed_file_is_not_written_into(tmp_path):
    path = tmp_path / "stats.json"
    f = json_file(path)
    assert f.append(line(0).encode())
    (tmp_path / "other").write_text("[]")
    os.replace(tmp_path / "other", path)
    assert not f.append(line(1).encode()) and not f.is_open
    assert path.read_text() == "[]"
    f = json_file(path)
    path.unlink()
    assert not f.append(line(0).encode())
    f.finish()
    assert not path.exists()


def test_a_write_cut_short_is_blanked_out(tmp_path, monkeypatch):
    path = tmp_path / "stats.json"
    f = json_file(path)
    assert f.append(line(0).encode())
    real_pwrite = os.pwrite
    monkeypatch.setattr(os, "pwrite", lambda fd, data, offset: real_pwrite(fd, data[:5], offset))
    with pytest.raises(OSError, match="wrote 5 of"):
        f.append(line(1).encode())
    monkeypatch.setattr(os, "pwrite", real_pwrite)
    assert json.loads(path.read_text()) == [{"epoch_num": 1, "pad": ""}]
    assert not f.is_open


WRITER = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("record_file", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
from tfloop.utils.fs import read_json_records
path = sys.argv[1]
records = read_json_records(path) if os.path.exists(path) else []
f = module.RecordFile(path, tail=b"]\\n")
text = lambda r, first: ("" if first else ",") + json.dumps(r) + "\\n"
f.rewrite(("[\\n" + "".join(text(r, i == 0) for i, r in enumerate(records))).encode())
print(len(records), flush=True)
while True:
    record = {"epoch_num": len(records) + 1, "pad": "x" * (len(records) * 7 % 300)}
    data = text(record, not records).encode()
    if not f.append(data):
        f.grow(data)
    records.append(record)
"""


@pytest.mark.slow
def test_kill_9_at_random_moments_always_leaves_a_complete_json_list(tmp_path):
    """A process appends records as fast as it can (reserve growths included) and is killed at
    random moments; every time, ``json.load`` reads consecutive records, and the next process
    continues from them."""
    import tfloop.utils.record_file as module
    path = str(tmp_path / "stats.json")
    rng = random.Random(0)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    counts = []
    for _ in range(12):
        child = subprocess.Popen([sys.executable, "-c", WRITER, path, module.__file__],
                                 stdout=subprocess.PIPE, env=env, text=True)
        started = child.stdout.readline()
        assert started.strip().isdigit(), started
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=scaled_timeout(10))
        with open(path) as f:
            records = json.load(f)
        assert [r["epoch_num"] for r in records] == list(range(1, len(records) + 1))
        assert len(records) >= int(started)
        counts.append(len(records))
    assert read_json_records(path) == records
    assert counts[-1] > counts[0] and os.path.getsize(path) > MIN_RESERVE
