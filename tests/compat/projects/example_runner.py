"""Run a tensorpack example project on tfloop with only its imports changed.

The example's files are read from tensorpack's repository at test time (nothing of them is kept
here): ``$TFLOOP_TENSORPACK_GIT``, a bare clone (default: the mirror below) or a checkout. The
files are written to a temporary directory with ``tensorpack`` replaced by ``tfloop`` on their
import lines and ``import tensorflow as tf`` by ``from tfloop import tfv1 as tf`` (the move
docs/migrating.md describes), plus the named edits of a test: fewer steps and epochs, and the
documented one-line fixes of an example's own bugs. Every edit must match exactly once, so an
example that changes fails the test instead of silently running unshrunk. The script runs in a
subprocess on the CPU with this checkout's tfloop. Without the repository the tests skip.
"""
import os
import re
import subprocess
import sys

import pytest
from support import scaled_timeout

GIT_DIR = os.environ.get("TFLOOP_TENSORPACK_GIT", "/work/.mirror/tensorpack+tensorpack/repo")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
_IMPORT = re.compile(r"^(\s*(?:from|import)\s+)tensorpack\b", re.MULTILINE)
_TF = re.compile(r"^import tensorflow as tf$", re.MULTILINE)


def _git(*args):
    return subprocess.run(["git", f"--git-dir={GIT_DIR}", *args], check=True,
                          capture_output=True, text=True).stdout


def _entries(directory):
    """[(mode, path)] of the files under ``directory`` in the repository's HEAD."""
    if not os.path.isdir(GIT_DIR):
        pytest.skip(f"no tensorpack repository at {GIT_DIR}: set $TFLOOP_TENSORPACK_GIT")
    if not os.path.isfile(os.path.join(GIT_DIR, "HEAD")):  # a checkout
        root = os.path.join(GIT_DIR, directory)
        return [("100644", os.path.relpath(os.path.realpath(os.path.join(d, f)), GIT_DIR))
                for d, _, files in os.walk(root) for f in files]
    rows = _git("ls-tree", "-r", "HEAD", directory + "/").splitlines()
    return [(row.split()[0], row.split("\t")[1]) for row in rows]


def _read(path, mode="100644"):
    if not os.path.isfile(os.path.join(GIT_DIR, "HEAD")):
        with open(os.path.join(GIT_DIR, path), encoding="utf-8") as f:
            return f.read()
    text = _git("show", f"HEAD:{path}")
    if mode == "120000":  # a symlink: its text is the target, relative to its folder
        return _read(os.path.normpath(os.path.join(os.path.dirname(path), text.strip())))
    return text


def change_imports(text):
    """``text`` importing tfloop where it imported tensorpack (and TF 1's API as tfv1)."""
    return _TF.sub("from tfloop import tfv1 as tf", _IMPORT.sub(r"\1tfloop", text))


def write_example(directory, dest, edits=()):
    """Write the ``.py`` files of ``directory`` (``examples/HED``) into ``dest``, imports
    changed and ``edits`` (``{file name: [(old, new)]}``) applied; return ``dest``."""
    edits = dict(edits)
    for mode, path in _entries(directory):
        if not path.endswith(".py"):
            continue
        name = os.path.relpath(path, directory)
        text = change_imports(_read(path, mode))
        for old, new in edits.pop(name, ()):
            if text.count(old) != 1:
                raise AssertionError(f"{path}: the edit {old!r} matches {text.count(old)} "
                                     "times, not once: the example changed, update the test.")
            text = text.replace(old, new)
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
    assert not edits, f"edits for files {directory} does not have: {sorted(edits)}"
    return dest


def run_example(cwd, args, timeout, env=()):
    """``python <args>`` in ``cwd`` with this checkout's tfloop, on the CPU, no display; fails
    the test with the output's end when it exits non-zero. Returns the output."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(cwd)]),
                    CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2",
                    PYTHONUNBUFFERED="1", **dict(env))
    full_env.pop("DISPLAY", None)
    try:
        done = subprocess.run([sys.executable, *args], cwd=str(cwd), env=full_env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=scaled_timeout(timeout))
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{args} ran past {timeout} s:\n{str(e.stdout)[-4000:]}") from None
    assert done.returncode == 0, f"{args} exited with {done.returncode}:\n{done.stdout[-6000:]}"
    return done.stdout


def checkpoints(log_dir):
    """The checkpoint index files a run wrote in ``log_dir``."""
    return sorted(f for f in os.listdir(log_dir) if f.startswith("model-") and
                  f.endswith(".index"))
