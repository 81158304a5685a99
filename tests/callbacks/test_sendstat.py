"""SendStat runs real commands: directly, through the shell, failing, and running too long."""
import shlex
import sys

import pytest
from support import train_linear

import tfloop
from tfloop.callbacks.sendstat import needs_shell

PY = shlex.quote(sys.executable)



class PutStats(tfloop.Callback):
    """Puts ``val-error-top1 = epoch / 10`` and ``lr = 0.5`` at each epoch's trigger."""

    def _trigger(self):
        self.trainer.monitors.put_scalar("val-error-top1", self.epoch_num / 10)
        self.trainer.monitors.put_scalar("lr", 0.5)


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def test_command_without_shell_syntax_runs_directly(tmp_path):
    out = tmp_path / "stats.txt"
    command = (PY + " -c \"import sys; open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]) + "
               "chr(10))\" " + shlex.quote(str(out)) + " {val-error-top1} {lr:.3f}")
    send = tfloop.SendStat(command, ["val-error-top1", "lr"])
    assert not send.use_shell
    trainer = train_linear([PutStats(), send], max_epoch=2)
    assert read_lines(out) == ["0.1 0.500", "0.2 0.500"]
    assert trainer.global_step == 6


def test_shell_redirection_appends_to_a_file(tmp_path):
    out = tmp_path / "some_file"
    send = tfloop.SendStat("echo {val-error-top1} >> " + shlex.quote(str(out)), "val-error-top1")
    assert send.use_shell
    train_linear([PutStats(), send], max_epoch=3)
    assert read_lines(out) == ["0.1", "0.2", "0.3"]


def test_missing_stat_skips_the_command_with_a_warning(tmp_path, tfloop_log):
    out = tmp_path / "never"
    trainer = train_linear([PutStats(), tfloop.SendStat("touch " + shlex.quote(str(out)) +
                                                        " {val-error-top5}", "val-error-top5")],
                           max_epoch=2)
    assert not out.exists()
    warnings = [msg for level, msg in tfloop_log if level == "WARNING" and "SendStat" in msg]
    assert len(warnings) == 2
    assert "no value yet for val-error-top5" in warnings[0]
    assert trainer.global_step == 6


def test_failing_command_logs_exit_code_and_stderr_and_training_continues(tfloop_log):
    command = PY + " -c \"import sys; sys.stderr.write('quota exceeded'); sys.exit(3)\" {lr}"
    trainer = train_linear([PutStats(), tfloop.SendStat(command, "lr")], max_epoch=2)
    errors = [msg for level, msg in tfloop_log if level == "ERROR"]
    assert len(errors) == 2
    assert "failed with exit code 3" in errors[0] and "stderr: quota exceeded" in errors[0]
    assert trainer.global_step == 6


def test_missing_program_is_logged(tfloop_log):
    train_linear([PutStats(), tfloop.SendStat("no-such-program-tfloop {lr}", "lr")], max_epoch=1)
    assert any(level == "ERROR" and "cannot run 'no-such-program-tfloop 0.5'" in msg
               for level, msg in tfloop_log)


@pytest.mark.parametrize("shell", [False, True])
def test_command_past_its_timeout_is_killed_with_its_children(tmp_path, tfloop_log, shell):
    out = tmp_path / "late"
    sleeper = PY + " -c \"import time; time.sleep(30)\""
    command = sleeper + (" && touch " + shlex.quote(str(out)) if shell else "") + " {lr}"
    send = tfloop.SendStat(command, "lr", timeout=0.5)
    assert send.use_shell == shell
    trainer = train_linear([PutStats(), send], max_epoch=1)
    assert any(level == "ERROR" and "did not finish within 0.5 s and was killed" in msg
               for level, msg in tfloop_log)
    assert not out.exists()
    assert trainer.global_step == 3


@pytest.mark.parametrize("command, expected", [
    ("curl -d body={x} https://example.com/a?b=1", False),
    ("python -c 'print(1 > 0)' {x}", False),
    ("echo {x} > /dev/null 2>&1", True),
    ("echo {x} | mail me", True),
    ("echo {x}; echo done", True),
    ("echo {x} && true", True),
    ("echo $HOME {x}", True),
    ("echo `date` {x}", True),
])
def test_shell_is_used_only_for_shell_syntax(command, expected):
    assert needs_shell(command) == expected


@pytest.mark.parametrize("args, kwargs, message", [
    (("echo {val-error}", "val-err"), {}, r"uses \['val-error'\] which is not in names"),
    (("echo {}", "x"), {}, "uses"),
    (("echo {x", "x"), {}, "not a valid format string"),
    (("echo 'unbalanced {x}", "x"), {}, "check its quotes"),
    (("", "x"), {}, "needs a command"),
    (("echo {x}", []), {}, "names must be stat names"),
    (("echo {x}", "x"), {"timeout": 0}, "timeout must be a positive number"),
])
def test_bad_arguments_are_rejected_early(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        tfloop.SendStat(*args, **kwargs)
