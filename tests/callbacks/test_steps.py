"""MaintainStepCounter: only training steps move the global step."""
import os

import numpy as np
from support import train_linear

import tfloop
from tfloop.compat import tfv1
from tfloop.tfutils.common import get_global_step_var


class RunsTheSessionItself(tfloop.Callback):
    """At each trigger, runs the hooked session for a value of its own (as callbacks may)."""

    def _setup_graph(self):
        self.w = [v for v in tfv1.global_variables() if v.op.name == "w"][0]
        self.gs_var = get_global_step_var()
        self.seen = []

    def _trigger(self):
        self.trainer.hooked_sess.run(self.w)
        self.seen.append((self.global_step, int(self.trainer.sess.run(self.gs_var))))


def test_a_callbacks_own_hooked_session_run_does_not_move_the_step_counter(tmp_path):
    logdir = str(tmp_path)
    own = RunsTheSessionItself()
    trainer = train_linear([tfloop.PeriodicTrigger(own, every_k_steps=2),
                            tfloop.ModelSaver(max_to_keep=None, checkpoint_dir=logdir)],
                           max_epoch=3)
    assert own.seen == [(2, 2), (4, 4), (6, 6), (8, 8)]
    assert trainer.global_step == 9
    saved = sorted(int(name[len("model-"):-len(".index")]) for name in os.listdir(logdir)
                   if name.startswith("model-") and name.endswith(".index"))
    assert saved == [3, 6, 9]
    assert np.asarray(tfloop.load_chkpt_vars(os.path.join(logdir, "model-9"))["global_step"]) == 9

