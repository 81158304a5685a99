"""InjectShell: a real pdb session driven through stdin, the IPython path, and when shells open."""
import io
import os
import pty
import subprocess
import sys
import textwrap
import types

import pytest
from support import scaled_timeout, train_linear

import tfloop
import tfloop.callbacks.debug as debug_module
from tfloop.callbacks.shell_tools import CHEAT_SHEET

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {tests_dir!r})
    import tfloop
    from support import train_linear
    tfloop.logger.set_logger_dir(sys.argv[1], action="keep")
    flag = os.path.join(sys.argv[1], "INJECT_SHELL.tmp")
    for shell in ("pdb", "ipython"):
        if shell == "ipython":
            sys.modules["IPython"] = None          # as if IPython were not installed
        open(flag, "w").close()
        print("RUN", shell, flush=True)
        trainer = train_linear([tfloop.InjectShell(shell=shell)], max_epoch=2)
        print("DONE", shell, trainer.global_step, os.path.exists(flag), flush=True)
""")

PDB_SESSION = ("p ('SEEN', trainer.global_step, type(self).__name__)\n"
               "p ('W', get('w').shape, get('w').dtype.name)\n"
               "set('w', [[1.0], [2.0], [3.0]])\n"
               "p ('SET', get('w').ravel().tolist())\n"
               "p ('STATS', sorted(stats()))\n"
               "c\n")



@pytest.mark.slow
def test_real_pdb_session_through_a_terminal_uses_the_tools_and_training_resumes(tmp_path):
    """One process, two trainings (to pay TensorFlow's import once): shell='pdb', then
    shell='ipython' without IPython. The file exists from the start: one shell after epoch 1.
    stdin is a pseudo-terminal, as when a person runs the script."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(tests_dir=TESTS_DIR))
    log_dir = tmp_path / "log"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    master, slave = pty.openpty()
    try:
        os.write(master, (PDB_SESSION * 2).encode())
        proc = subprocess.run([sys.executable, str(script), str(log_dir)], stdin=slave,
                              capture_output=True, text=True, timeout=scaled_timeout(40),
                              env=env)
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pdb_run, ipython_run = proc.stdout.split("RUN ipython")
    for out, shell in ((pdb_run, "pdb"), (ipython_run, "ipython")):
        assert "create {} to open the pdb shell".format(log_dir / "INJECT_SHELL.tmp") in out
        assert out.count("opening a pdb shell") == 1
        assert out.count("('SEEN', 3, 'InjectShell')") == 1
        assert CHEAT_SHEET in out.replace("\r\n", "\n")
        assert "('W', (3, 1), 'float32')" in out and "('SET', [1.0, 2.0, 3.0])" in out
        assert "('STATS', [])" in out
        assert "shell closed, training resumes" in out
        assert "Training has finished." in out
        assert f"DONE {shell} 6 False" in out
    assert "IPython is not installed" not in pdb_run
    assert "IPython is not installed" in ipython_run


class Toucher(tfloop.Callback):
    """Creates the shell file at the trigger of the given epochs (after InjectShell's trigger)."""

    def __init__(self, path, epochs):
        self.path = path
        self.epochs = epochs

    def _trigger(self):
        if self.epoch_num in self.epochs:
            open(self.path, "w").close()


@pytest.fixture
def fake_ipython(monkeypatch):
    """An ``IPython`` module whose ``embed`` records what the real one would see: the caller's
    local variables; stdin counts as a terminal."""
    monkeypatch.setattr(debug_module, "stdin_is_terminal", lambda: True)
    opened = []
    module = types.ModuleType("IPython")

    def embed(header=""):
        scope = sys._getframe(1).f_locals
        opened.append((scope["trainer"].global_step, scope["self"], header))
        if opened_actions:
            opened_actions.pop(0)(scope)

    opened_actions = []
    module.embed = embed
    monkeypatch.setitem(sys.modules, "IPython", module)
    return opened, opened_actions


def test_ipython_shell_opens_once_per_touch_with_trainer_in_scope(logdir, fake_ipython):
    opened, _ = fake_ipython
    shell = tfloop.InjectShell()
    path = os.path.join(logdir, "INJECT_SHELL.tmp")
    trainer = train_linear([shell, Toucher(path, epochs=(1, 4))], max_epoch=4)
    # Touched after epoch 1 -> shell after epoch 2 only; touched after epoch 4 -> removed at end.
    assert [(step, cb) for step, cb, _ in opened] == [(6, shell)]
    assert "trainer" in opened[0][2]
    assert shell.path == os.path.abspath(path)
    assert trainer.global_step == 12
    assert not os.path.exists(path)


def test_request_stop_from_the_shell_ends_training(logdir, fake_ipython):
    opened, actions = fake_ipython
    actions.append(lambda scope: scope["self"].request_stop())
    path = os.path.join(logdir, "INJECT_SHELL.tmp")
    open(path, "w").close()
    trainer = train_linear([tfloop.InjectShell()], max_epoch=3)
    assert len(opened) == 1
    assert trainer.global_step == 3


def test_relative_file_without_log_dir_is_refused_before_training(tmp_path, monkeypatch,
                                                                   fake_ipython):
    opened, _ = fake_ipython
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shell.flag").touch()
    shell = tfloop.InjectShell(file="shell.flag")
    with pytest.raises(ValueError, match="no log directory is set: call logger.set_logger_dir"):
        train_linear([tfloop.PeriodicTrigger(shell, every_k_steps=2)], max_epoch=1)
    assert opened == []


def test_absolute_file_without_log_dir(tmp_path, fake_ipython, tfloop_log):
    opened, _ = fake_ipython
    (tmp_path / "shell.flag").touch()
    shell = tfloop.InjectShell(file=str(tmp_path / "shell.flag"))
    train_linear([tfloop.PeriodicTrigger(shell, every_k_steps=2)], max_epoch=1)
    assert [step for step, _, _ in opened] == [2]
    assert any(f"create {shell.path} to open the ipython shell" in msg
               for _, msg in tfloop_log)


def test_no_shell_without_a_terminal(logdir, fake_ipython, monkeypatch, log_warnings):
    opened, _ = fake_ipython
    monkeypatch.setattr(debug_module, "stdin_is_terminal", lambda: False)
    path = os.path.join(logdir, "INJECT_SHELL.tmp")
    open(path, "w").close()
    trainer = train_linear([tfloop.InjectShell()], max_epoch=3)
    assert opened == [] and trainer.global_step == 9
    assert not os.path.exists(path)
    assert log_warnings == [f"InjectShell: found {path} at global step 3, but stdin is not a "
                            "terminal, so no shell can be used; training goes on. Run training in "
                            "a terminal to use InjectShell."]


def test_a_directory_or_fifo_at_the_path_is_ignored(logdir, fake_ipython, log_warnings):
    opened, _ = fake_ipython
    os.mkdir(os.path.join(logdir, "INJECT_SHELL.tmp"))
    os.mkfifo(os.path.join(logdir, "fifo"))
    trainer = train_linear([tfloop.InjectShell(), tfloop.InjectShell(file="fifo")], max_epoch=2)
    assert opened == [] and trainer.global_step == 6
    assert os.path.isdir(os.path.join(logdir, "INJECT_SHELL.tmp"))
    assert len(log_warnings) == 2
    assert all("is not a regular file" in w for w in log_warnings)


def test_a_file_that_cannot_be_removed_is_reported_once(logdir, fake_ipython, monkeypatch,
                                                        log_warnings):
    opened, _ = fake_ipython
    path = os.path.join(logdir, "INJECT_SHELL.tmp")
    open(path, "w").close()

    def read_only(target):
        raise OSError(30, "Read-only file system", target)
    monkeypatch.setattr(debug_module.os, "remove", read_only)
    trainer = train_linear([tfloop.InjectShell()], max_epoch=3)
    assert opened == [] and trainer.global_step == 9
    assert len(log_warnings) == 1 and "cannot remove it" in log_warnings[0]


def test_pdb_quit_resumes_training(logdir, monkeypatch, capsys, tfloop_log):
    monkeypatch.setitem(sys.modules, "IPython", None)
    monkeypatch.setattr(debug_module, "stdin_is_terminal", lambda: True)
    monkeypatch.setattr(sys, "stdin", io.StringIO("p 'GS=%d' % trainer.global_step\nq\n"))
    open(os.path.join(logdir, "INJECT_SHELL.tmp"), "w").close()
    trainer = train_linear([tfloop.InjectShell()], max_epoch=2)
    assert "'GS=3'" in capsys.readouterr().out
    assert trainer.global_step == 6
    messages = [msg for _, msg in tfloop_log]
    assert any("IPython is not installed" in msg for msg in messages)
    assert any("pdb quit" in msg for msg in messages)


@pytest.mark.parametrize("kwargs, message", [
    ({"shell": "bash"}, "shell must be one of"),
    ({"file": ""}, "needs a file name"),
])
def test_bad_arguments_are_rejected_early(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tfloop.InjectShell(**kwargs)
