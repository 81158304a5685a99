"""The exact sequence of hook calls over 2 epochs x 3 steps, with fetches and feeds merged into
one session.run per step."""
import numpy as np
import pytest
from support import (
    FINAL_WEIGHTS_READ,
    LinearModel,
    RecordingCallback,
    RunCounter,
    batches,
    make_regression_data,
    train_linear,
)

import tfloop
from tfloop.callbacks.lifecycle import HOOKS, RUN_HOOKS, STEP_HOOKS
from tfloop.compat import tf, tfv1


def expected_sequence(name, epochs=2, steps=3, extra=None):
    """The hook calls one RecordingCallback must see; ``extra(epoch, local_step)`` gives after_run's
    values."""
    seq = [(name, "before_train", 0, 0, -1, None)]
    gs = 0
    for epoch in range(1, epochs + 1):
        seq.append((name, "before_epoch", epoch, gs, -1, None))
        for local in range(steps):
            seq.append((name, "before_run", epoch, gs, local, None))
            gs += 1
            seq.append((name, "after_run", epoch, gs, local,
                        extra(epoch, local) if extra else None))
            seq.append((name, "trigger_step", epoch, gs, local, None))
        seq.append((name, "after_epoch", epoch, gs, steps - 1, None))
        seq.append((name, "trigger", epoch, gs, steps - 1, None))
    seq.append((name, "after_train", epochs, gs, steps - 1, None))
    return seq


def interleave(*seqs):
    """Callbacks are called in list order at every point: zip the per-callback sequences."""
    out = []
    for calls in zip(*seqs):
        out.extend(calls)
    return out




def test_hook_sequence_of_several_callbacks_with_fetches_and_feeds():
    log = []
    x, y = make_regression_data(12)
    counter = RunCounter()

    class WithFeed(LinearModel):
        def build_graph(self, x, y):
            cost = super().build_graph(x, y)
            factor = tfv1.placeholder_with_default(tf.constant(1.0), [], name="factor")
            tf.identity(cost * factor, name="scaled_cost")
            return cost

    a = RecordingCallback("a", log, fetches=["w:0"])
    b = RecordingCallback("b", log)
    c = RecordingCallback("c", log, fetches=["scaled_cost"], feed=("factor", 10.0))
    trainer = train_linear([counter, a, b, c], model=WithFeed(), max_epoch=2)

    setup = [entry for entry in log if entry[1] == "setup_graph"]
    assert setup == [("a", "setup_graph"), ("b", "setup_graph"), ("c", "setup_graph")]
    calls = [entry for entry in log if entry[1] != "setup_graph"]
    # Values fetched: recompute them with numpy SGD on the same batches.
    w = np.zeros((3, 1), np.float32)
    fetched_w, scaled_costs = {}, {}
    data = batches(x, y, 4)
    for epoch in (1, 2):
        for local, (bx, by) in enumerate(data):
            pred = (bx @ w)[:, 0]
            scaled_costs[(epoch, local)] = 10.0 * float(np.mean((pred - by) ** 2))
            fetched_w[(epoch, local)] = w.copy()
            grad = (2.0 / len(bx)) * bx.T @ (pred - by)[:, None]
            w = w - 0.1 * grad
    expected = interleave(
        expected_sequence("a", extra=lambda e, s: fetched_w[(e, s)].tolist()),
        expected_sequence("b"),
        expected_sequence("c", extra=lambda e, s: [scaled_costs[(e, s)]]))
    assert [entry[:5] for entry in calls] == [entry[:5] for entry in expected]
    for got, want in zip(calls, expected):
        if want[5] is not None:
            np.testing.assert_allclose(np.asarray(got[5], np.float64).ravel(),
                                       np.asarray(want[5], np.float64).ravel(), rtol=1e-5,
                                       err_msg=str(want[:5]))
    assert counter.runs == 6 + FINAL_WEIGHTS_READ, "one session.run per step, nothing else"
    assert trainer.global_step == 6


def test_before_run_may_return_a_single_tensor_a_dict_or_names():
    seen = []

    class Fetcher(tfloop.Callback):
        def _setup_graph(self):
            self.cost = self.get_tensors_maybe_in_tower(["cost"])[0]

        def _before_run(self, ctx):
            return {"cost": self.cost, "w": "w:0"}

        def _after_run(self, ctx, values):
            seen.append(sorted(values.results))

    train_linear([Fetcher()], max_epoch=1)
    assert seen == [["cost", "w"]] * 3


def test_hooks_not_overridden_are_not_called_per_step():
    class Idle(tfloop.Callback):
        pass

    class Busy(tfloop.Callback):
        def _trigger_step(self):
            pass

    trainer = train_linear([Idle(), Busy()], max_epoch=1)
    hooks = [type(h).__name__ for h in trainer.run_callbacks]
    assert "Idle" not in hooks and "Busy" not in hooks
    stepped = [type(cb).__name__ for cb in trainer.step_callbacks]
    assert "Busy" in stepped and "Idle" not in stepped


def test_callback_order_counter_input_user_default_monitors_dispatcher():
    class Backend(tfloop.MonitorBase):
        pass

    user = RecordingCallback("user", [])
    default = RecordingCallback("default", [])
    backend = Backend()
    trainer = train_linear([user], extra_callbacks=[default], monitors=[backend], max_epoch=1)
    names = [type(cb).__name__ for cb in trainer.callbacks]
    assert names[0] == "MaintainStepCounter"
    assert names[1] == "_FeedNext"
    assert trainer.callbacks[2:] == [user, default, backend, trainer.monitors]


def test_resumed_global_step_continues_from_the_variable():
    seen = []

    class Watch(tfloop.Callback):
        def _trigger_step(self):
            seen.append(self.global_step)

    class Init(tfloop.SessionInit):
        """Puts the global step variable at 100, as restoring a checkpoint would."""

        def _setup_graph(self):
            self.op = tfv1.assign(tfloop.get_global_step_var(), 100)

        def _run_init(self, sess):
            sess.run(self.op)

    train_linear([Watch()], max_epoch=1, session_init=Init())
    assert seen == [101, 102, 103]


@pytest.mark.parametrize("starting_epoch,max_epoch", [(1, 1), (3, 4)])
def test_epoch_numbers(starting_epoch, max_epoch):
    epochs = []
    cb = tfloop.CallbackFactory(trigger=lambda self: epochs.append(self.epoch_num))
    train_linear([cb], starting_epoch=starting_epoch, max_epoch=max_epoch)
    assert epochs == list(range(starting_epoch, max_epoch + 1))


def test_hooks_table_lists_every_public_hook_of_callback_after_setup_graph():
    methods = {name for name, value in vars(tfloop.Callback).items() if callable(value)}
    hooks = {name for name in methods if not name.startswith("_") and f"_{name}" in methods}
    assert set(HOOKS) == hooks - {"setup_graph"}
    assert set(RUN_HOOKS) == {h for h, when in HOOKS.items() if when == "run"} | \
        {f"_{h}" for h, when in HOOKS.items() if when == "run"}
    assert set(STEP_HOOKS) == {h for h, when in HOOKS.items() if when == "step"} | \
        {f"_{h}" for h, when in HOOKS.items() if when == "step"}
