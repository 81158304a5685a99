"""``python -c CODE`` or ``python SCRIPT`` without paying TensorFlow's import every time.

Each program runs in its own process forked from a ``forkserver`` that imported tfloop (and so
TensorFlow) once, as ``tests/distributed_support.py`` runs cluster tasks. The process starts as a
fresh interpreter would look to the program: its own directory, ``sys.argv`` and ``sys.path[0]``,
a new ``__main__``, stdin from /dev/null, stdout and stderr to files, the atexit handlers run at
the end, and the exit status of ``python`` (1 and a traceback for an uncaught exception). What it
cannot give is a fresh TensorFlow: an environment variable that TensorFlow reads only when it is
imported is already read.
"""
import atexit
import multiprocessing
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types

_CONTEXT = None


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["tensorflow", "keras", "tfloop.train", "tfloop.callbacks"])
    return _CONTEXT


def _redirect(fd, path, flags):
    target = os.open(path, flags, 0o644)
    os.dup2(target, fd)
    os.close(target)


def _run(args, cwd, env, out_path, err_path):
    os.chdir(cwd)
    _redirect(0, os.devnull, os.O_RDONLY)
    _redirect(1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    if err_path is None:     # stderr interleaved with stdout, as 2>&1
        os.dup2(1, 2)
    else:
        _redirect(2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.environ.clear()
    os.environ.update(env)
    multiprocessing.set_start_method(None, force=True)   # unset, as in a fresh interpreter
    code = 0
    try:
        if args[0] == "-c":
            sys.argv, sys.path[0] = ["-c", *args[2:]], ""
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            _add_pythonpath(env)
            exec(compile(args[1], "<string>", "exec"), main.__dict__)
        else:
            sys.argv, sys.path[0] = list(args), os.path.dirname(os.path.abspath(args[0]))
            _add_pythonpath(env)
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as e:   # as python exits: None is 0, a message goes to stderr with 1
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _add_pythonpath(env):
    """The directories of ``PYTHONPATH`` after ``sys.path[0]``, where python puts them."""
    extra = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [p for p in extra if p not in sys.path]


def start_python(args, cwd, env, out_path, err_path):
    """Start ``python *args`` in ``cwd`` with environment ``env`` in a forked process whose stdout
    and stderr go to the files ``out_path`` and ``err_path`` (None: stderr goes to stdout's file,
    as ``2>&1``), and return that process (a
    ``multiprocessing.Process``: ``kill()`` sends it SIGKILL, ``join()`` waits for it)."""
    process = _context().Process(target=_run, args=(list(args), str(cwd), dict(env), out_path,
                                                     err_path))
    process.start()
    return process


def wait_for_line(process, out_path, err_path, line, timeout):
    """Wait until ``process`` (from :func:`start_python`, writing to ``out_path`` and
    ``err_path``) has printed the line ``line``. AssertionError with the end of its stderr if it
    exits first or ``timeout`` seconds pass. A stale ``out_path`` must be emptied before the
    process starts."""
    deadline = time.monotonic() + timeout
    while True:
        if os.path.exists(out_path):   # the process creates it
            with open(out_path, encoding="utf-8", errors="replace") as f:
                if line in f.read().splitlines():
                    return
        if process.exitcode is not None or time.monotonic() > deadline:
            stderr = ""
            if os.path.exists(err_path):
                with open(err_path, encoding="utf-8", errors="replace") as f:
                    stderr = f.read()[-3000:]
            raise AssertionError(f"no {line!r} from the program (exit code "
                                 f"{process.exitcode}):\n{stderr}")
        time.sleep(0.05)


def run_python(args, cwd, env, timeout, merge_stderr=False):
    """Run ``python *args`` in ``cwd`` with environment ``env``, in a forked process.

    Returns:
        subprocess.CompletedProcess: ``returncode``, ``stdout`` and ``stderr`` (text; with
        ``merge_stderr``, stderr is interleaved into stdout, as ``2>&1``, and ``stderr`` is "").

    Raises:
        subprocess.TimeoutExpired: after ``timeout`` seconds (the process is killed).
    """
    outdir = tempfile.mkdtemp(prefix="forked-python-")
    out_path, err_path = (os.path.join(outdir, name) for name in ("stdout", "stderr"))
    try:
        if merge_stderr:
            with open(err_path, "w"):
                pass
        process = start_python(args, cwd, env, out_path, None if merge_stderr else err_path)
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            with open(out_path, encoding="utf-8", errors="replace") as f:
                output = f.read()
            raise subprocess.TimeoutExpired(["python", *args], timeout, output=output)
        outputs = []
        for path in (out_path, err_path):
            with open(path, encoding="utf-8", errors="replace") as f:
                outputs.append(f.read())
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    return subprocess.CompletedProcess(["python", *args], process.exitcode, *outputs)
