"""SendMonitorData runs its command once all its scalars were put, then waits for new ones."""
import pytest
from support import train_linear

from tfloop import Callback, SendMonitorData


class PutScalars(Callback):
    def _trigger_step(self):
        self.trainer.monitors.put_scalar("a", float(self.global_step))
        if self.global_step % 2 == 0:
            self.trainer.monitors.put_scalar("b", 10.0 * self.global_step)


def test_runs_once_every_name_has_a_new_value(tmp_path):
    out = tmp_path / "out.txt"
    train_linear([PutScalars()], monitors=[SendMonitorData(f"echo {{a}} {{b}} >> {out}",
                                                           ["a", "b"])], max_epoch=2)
    assert out.read_text().split("\n")[:-1] == ["2.0 20.0", "4.0 40.0", "6.0 60.0"]


def test_a_failing_command_is_logged_and_training_goes_on(log_warnings):
    trainer = train_linear([PutScalars()], monitors=[SendMonitorData("exit 3; {a}", "a")],
                           max_epoch=1)
    assert trainer.global_step == 3
    assert len([w for w in log_warnings if "failed with exit code 3" in w]) == 3


def test_unknown_placeholders_are_refused():
    with pytest.raises(ValueError, match="uses \\['c'\\]"):
        SendMonitorData("echo {c}", ["a"])
