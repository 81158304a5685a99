"""Run one of tensorpack's example projects on tfloop, as a tensorpack user moving it would.

The example's files are read from tensorpack's repository at test time (never copied into
tfloop), written to a temporary directory with ``tensorpack`` replaced by ``tfloop`` in the import
lines (and ``import tensorflow as tf`` by ``from tfloop import tfv1 as tf``, as
``docs/migrating.md`` says), plus the short, documented edits a test names (a smaller step count,
an example's own bug). Each edit must match exactly once, so a changed example fails the test
instead of running unshrunk. The script then runs in a subprocess with this checkout's tfloop.

The repository is ``$TFLOOP_TENSORPACK_GIT`` (a checkout, or a bare git directory read with ``git
show``); by default the mirror at ``/work/.mirror/tensorpack+tensorpack/repo``. Without it the
tests are skipped, naming the variable.
"""
import os
import re
import subprocess
import sys

import pytest
from support import scaled_timeout

TENSORPACK_REPO = os.environ.get("TFLOOP_TENSORPACK_GIT",
                                 "/work/.mirror/tensorpack+tensorpack/repo")
TFLOOP_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

_IMPORT_LINE = re.compile(r"^(\s*)(from|import)\s+tensorpack\b", re.MULTILINE)
_TF_IMPORT = "import tensorflow as tf\n"


def _is_bare(repo):
    return os.path.isfile(os.path.join(repo, "HEAD")) and not os.path.isdir(
        os.path.join(repo, ".git"))


def _require_repository():
    if not os.path.exists(TENSORPACK_REPO):
        pytest.skip(f"tensorpack's repository is not at {TENSORPACK_REPO}: set "
                    "$TFLOOP_TENSORPACK_GIT to a clone of github.com/tensorpack/tensorpack to run "
                    "the example projects.")


def read_example_file(path):
    """The text of ``path`` (``examples/GAN/GAN.py``) in tensorpack's repository."""
    _require_repository()
    if _is_bare(TENSORPACK_REPO):
        return subprocess.run(["git", f"--git-dir={TENSORPACK_REPO}", "show", f"HEAD:{path}"],
                              check=True, capture_output=True, text=True).stdout
    with open(os.path.join(TENSORPACK_REPO, path), encoding="utf-8") as f:
        return f.read()


def list_example_files(directory):
    """Paths of the ``.py`` files under ``directory`` (``examples/FasterRCNN``) in the repo."""
    _require_repository()
    if _is_bare(TENSORPACK_REPO):
        listed = subprocess.run(["git", f"--git-dir={TENSORPACK_REPO}", "ls-tree", "-r",
                                 "--name-only", "HEAD", directory + "/"],
                                check=True, capture_output=True, text=True).stdout.split()
    else:
        root = os.path.join(TENSORPACK_REPO, directory)
        listed = [os.path.relpath(os.path.join(d, f), TENSORPACK_REPO)
                  for d, _, files in os.walk(root) for f in files]
    return sorted(p for p in listed if p.endswith(".py"))


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
    for path in list_example_files(directory):
        relative = os.path.relpath(path, directory)
        text = apply_edits(change_imports(read_example_file(path)), edits.pop(relative, ()),
                           path)
        target = os.path.join(dest, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
    if edits:
        raise AssertionError(f"edits name files that {directory} does not have: {sorted(edits)}")
    return dest


def run_script(cwd, args, timeout, env=None):
    """Run ``python <args>`` in ``cwd`` with this checkout's tfloop, on the CPU, without a
    display; return the completed process. A non-zero exit fails the test with the output's
    tail."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([TFLOOP_ROOT, str(cwd)]),
                    CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2",
                    PYTHONUNBUFFERED="1", **(env or {}))
    full_env.pop("DISPLAY", None)
    try:
        done = subprocess.run([sys.executable] + list(args), cwd=str(cwd), env=full_env,
                              capture_output=True, text=True, timeout=scaled_timeout(timeout))
    except subprocess.TimeoutExpired as e:
        output = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        raise AssertionError(f"{' '.join(args)} ran past its timeout:\n{output[-4000:]}"
                             ) from None
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited with {done.returncode}:\n"
                             f"{(done.stdout + done.stderr)[-6000:]}")
    return done
