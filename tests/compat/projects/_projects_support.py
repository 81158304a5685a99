"""Run one of tensorpack's example projects on tfloop, as a tensorpack user moving it would.

The example's files are read from tensorpack's repository at test time (never copied into
tfloop), written to a temporary directory with ``tensorpack`` replaced by ``tfloop`` in the import
lines (and ``import tensorflow as tf`` by ``from tfloop import tfv1 as tf``, as
``docs/migrating.md`` says), plus the short, documented edits a test names (a smaller step count,
an example's own bug). Each edit must match exactly once, so a changed example fails the test
instead of running unshrunk. The script then runs in a subprocess on the CPU, without a display,
with this checkout's tfloop, in a process forked from one that imported TensorFlow once
(``tests/forked_python.py``; a fresh interpreter when the run sets what TensorFlow reads as it
is imported).

The repository is ``$TFLOOP_TENSORPACK_GIT`` (a checkout, or a bare git directory read with ``git
show``); by default the mirror at ``/work/.mirror/tensorpack+tensorpack/repo``. Without it the
tests are skipped, naming the variable.
"""
import os
import re
import subprocess
import sys

import pytest
from forked_python import run_python
from support import scaled_timeout

TENSORPACK_REPO = os.environ.get("TFLOOP_TENSORPACK_GIT",
                                 "/work/.mirror/tensorpack+tensorpack/repo")
TFLOOP_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

_IMPORT_LINE = re.compile(r"^(\s*)(from|import)\s+tensorpack\b", re.MULTILINE)
_TF_IMPORT = "import tensorflow as tf\n"
_SYMLINK = "120000"
# What TensorFlow reads when it is imported: an example run with one of these set needs a fresh
# interpreter, not one forked from a process that imported TensorFlow already.
READ_AT_IMPORT = {"TF_USE_LEGACY_KERAS", "TF_ENABLE_ONEDNN_OPTS"}


def _is_bare(repo):
    return os.path.isfile(os.path.join(repo, "HEAD")) and not os.path.isdir(
        os.path.join(repo, ".git"))


def _git(*args):
    return subprocess.run(["git", f"--git-dir={TENSORPACK_REPO}", *args], check=True,
                          capture_output=True, text=True).stdout


def _require_repository():
    if not os.path.exists(TENSORPACK_REPO):
        pytest.skip(f"tensorpack's repository is not at {TENSORPACK_REPO}: set "
                    "$TFLOOP_TENSORPACK_GIT to a clone of github.com/tensorpack/tensorpack to run "
                    "the example projects.")


def read_example_file(path, mode="100644"):
    """The text of ``path`` (``examples/GAN/GAN.py``) in tensorpack's repository; a symbolic
    link (git mode 120000) is read through to its target."""
    _require_repository()
    if not _is_bare(TENSORPACK_REPO):
        with open(os.path.join(TENSORPACK_REPO, path), encoding="utf-8") as f:
            return f.read()
    text = _git("show", f"HEAD:{path}")
    if mode == _SYMLINK:     # the text is the target, relative to the link's folder
        return read_example_file(os.path.normpath(os.path.join(os.path.dirname(path),
                                                               text.strip())))
    return text


def list_example_files(directory):
    """``[(git mode, path)]`` of the ``.py`` files under ``directory`` (``examples/HED``)."""
    _require_repository()
    if _is_bare(TENSORPACK_REPO):
        rows = _git("ls-tree", "-r", "HEAD", directory + "/").splitlines()
        listed = [(row.split()[0], row.split("\t")[1]) for row in rows]
    else:
        root = os.path.join(TENSORPACK_REPO, directory)
        listed = [("100644", os.path.relpath(os.path.join(d, f), TENSORPACK_REPO))
                  for d, _, files in os.walk(root) for f in files]
    return sorted((mode, path) for mode, path in listed if path.endswith(".py"))


def change_imports(text):
    """``text`` with ``tensorpack`` replaced by ``tfloop`` on its import lines and TensorFlow 1's
    API imported as tfloop's ``tfv1`` (the only change a moved script needs)."""
    text = _IMPORT_LINE.sub(lambda m: m.group(0).replace("tensorpack", "tfloop"), text)
    return text.replace(_TF_IMPORT, "from tfloop import tfv1 as tf\n")


def apply_edits(text, edits, path):
    """``text`` with each ``(old, new)`` of ``edits`` replaced; each ``old`` must occur once."""
    for old, new in edits:
        count = text.count(old)
        if count != 1:
            raise AssertionError(f"{path}: the edit of {old!r} matches {count} times, not once: "
                                 "the example changed; update the test's edits.")
        text = text.replace(old, new)
    return text


def write_example(directory, dest, edits=None):
    """Write tensorpack's ``directory`` (``examples/GAN``) to ``dest`` with imports changed and
    ``edits`` (``{file name: [(old, new), ...]}``) applied; return ``dest``."""
    edits = dict(edits or {})
    for mode, path in list_example_files(directory):
        relative = os.path.relpath(path, directory)
        text = apply_edits(change_imports(read_example_file(path, mode)),
                           edits.pop(relative, ()), path)
        target = os.path.join(dest, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
    if edits:
        raise AssertionError(f"edits name files that {directory} does not have: {sorted(edits)}")
    return dest


def run_example(cwd, args, timeout, env=None):
    """Run ``python <args>`` in ``cwd`` with this checkout's tfloop, on the CPU, without a
    display; return its output (stdout and stderr as they interleaved). A non-zero exit or a run
    past ``timeout`` seconds (scaled to the machine) fails the test with the output's tail."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([TFLOOP_ROOT, str(cwd)]),
                    CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2",
                    PYTHONUNBUFFERED="1", **dict(env or {}))
    full_env.pop("DISPLAY", None)
    try:
        if READ_AT_IMPORT.intersection(env or {}):
            done = subprocess.run([sys.executable, *args], cwd=str(cwd), env=full_env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=scaled_timeout(timeout))
        else:
            done = run_python(args, cwd, full_env, scaled_timeout(timeout), merge_stderr=True)
    except subprocess.TimeoutExpired as e:
        output = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        raise AssertionError(f"{' '.join(args)} ran past {timeout} s:\n{output[-4000:]}"
                             ) from None
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited with {done.returncode}:\n"
                             f"{done.stdout[-6000:]}")
    return done.stdout


def checkpoints(log_dir):
    """The checkpoint index files a run wrote in ``log_dir``."""
    return sorted(f for f in os.listdir(log_dir) if f.startswith("model-") and
                  f.endswith(".index"))
