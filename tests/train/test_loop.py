"""TrainLoop: the epochs and session runs it walks, from a fresh start, a resumed position and with
steps_per_run, checked as exact sequences of counter values."""
import numpy as np
import pytest
from support import RecordingCallback, dataset_fn, make_regression_data, train_linear

import tfloop


def walk(loop):
    """Walk ``loop`` as the trainer does, advancing the global step by ``steps_per_run`` per run as
    the step counter does; record the counters at each epoch's start and at each run."""
    seen = []
    for epoch in loop.epochs():
        seen.append(("epoch", epoch, loop.epoch_num, loop.local_step, loop.global_step,
                     loop.epoch_first_global_step))
        for last_step in loop.runs_of_epoch():
            seen.append(("run", last_step, loop.local_step, loop.running_steps))
            loop.global_step += loop.steps_per_run
    return seen


def make_loop(steps_per_epoch, starting_epoch=1, max_epoch=2, steps_per_run=1,
              starting_local_step=0, global_step=0):
    loop = tfloop.TrainLoop()
    loop.configure(steps_per_epoch, starting_epoch, max_epoch)
    loop.steps_per_run = steps_per_run
    loop.starting_local_step = starting_local_step
    loop.global_step = global_step
    return loop


def test_check_bounds_returns_ints_and_leaves_the_loop_as_it_was():
    loop = tfloop.TrainLoop()
    loop.steps_per_run = 3
    assert loop.check_bounds(np.int64(6), 2, np.int32(4)) == (6, 2, 4)
    assert loop.check_bounds(6.0, "2", np.float32(4.0)) == (6, 2, 4)    # tensorpack's int()
    assert (loop.steps_per_epoch, loop.starting_epoch, loop.max_epoch, loop.epoch_num) == \
        (1, 1, 1, 0)


@pytest.mark.parametrize("bounds, error, message", [
    ((7, 1, 2), ValueError, r"^steps_per_epoch \(7\) must be a multiple of steps_per_run \(3\)\.$"),
    ((0, 1, 2), ValueError, r"^steps_per_epoch must be a positive int, got 0\.$"),
    (("6.5", 1, 2), TypeError, r"^steps_per_epoch must be an int, got '6\.5'\.$"),
    ((6, True, 2), TypeError, r"^starting_epoch must be an int, got True\.$"),
    ((6, 0, 2), ValueError, r"^starting_epoch must be >= 1, got 0\.$"),
    ((6, 3, 2), ValueError, r"^max_epoch \(2\) must be >= starting_epoch \(3\)\.$"),
])
def test_bad_bounds_are_refused_naming_the_value(bounds, error, message):
    loop = tfloop.TrainLoop()
    loop.steps_per_run = 3
    with pytest.raises(error, match=message):
        loop.configure(*bounds)
    assert (loop.steps_per_epoch, loop.epoch_num) == (1, 0)


def test_a_fresh_loop_runs_every_step_of_every_epoch():
    loop = make_loop(3)
    assert (loop.epoch_num, loop.local_step, loop.running_steps) == (0, -1, False)
    assert walk(loop) == [
        ("epoch", 1, 1, -1, 0, 0),
        ("run", 0, 0, True), ("run", 1, 1, True), ("run", 2, 2, True),
        ("epoch", 2, 2, -1, 3, 3),
        ("run", 0, 0, True), ("run", 1, 1, True), ("run", 2, 2, True),
    ]
    assert (loop.epoch_num, loop.local_step, loop.global_step, loop.running_steps) == \
        (2, 2, 6, False)


def test_the_epochs_go_from_starting_epoch_to_max_epoch():
    loop = make_loop(2, starting_epoch=3, max_epoch=4, global_step=10)
    assert loop.epoch_num == 2
    assert walk(loop) == [
        ("epoch", 3, 3, -1, 10, 10), ("run", 0, 0, True), ("run", 1, 1, True),
        ("epoch", 4, 4, -1, 12, 12), ("run", 0, 0, True), ("run", 1, 1, True),
    ]


def test_a_resumed_loop_starts_its_first_epoch_at_starting_local_step_only():
    loop = make_loop(3, starting_epoch=2, max_epoch=3, starting_local_step=1, global_step=4)
    assert walk(loop) == [
        ("epoch", 2, 2, 0, 4, 3),
        ("run", 1, 1, True), ("run", 2, 2, True),
        ("epoch", 3, 3, -1, 6, 6),
        ("run", 0, 0, True), ("run", 1, 1, True), ("run", 2, 2, True),
    ]
    assert loop.starting_local_step == 1


def test_a_loop_resumed_at_the_end_of_an_epoch_runs_no_step_in_it():
    loop = make_loop(3, max_epoch=2, starting_local_step=3, global_step=3)
    assert walk(loop) == [
        ("epoch", 1, 1, 2, 3, 0),
        ("epoch", 2, 2, -1, 3, 3),
        ("run", 0, 0, True), ("run", 1, 1, True), ("run", 2, 2, True),
    ]


def test_with_steps_per_run_each_run_ends_at_every_kth_step():
    loop = make_loop(6, steps_per_run=3)
    assert walk(loop) == [
        ("epoch", 1, 1, -1, 0, 0), ("run", 2, 2, True), ("run", 5, 5, True),
        ("epoch", 2, 2, -1, 6, 6), ("run", 2, 2, True), ("run", 5, 5, True),
    ]


def test_with_steps_per_run_a_resumed_loop_continues_at_the_next_run():
    loop = make_loop(6, steps_per_run=2, starting_local_step=4, global_step=4)
    assert walk(loop) == [
        ("epoch", 1, 1, 3, 4, 0), ("run", 5, 5, True),
        ("epoch", 2, 2, -1, 6, 6), ("run", 1, 1, True), ("run", 3, 3, True), ("run", 5, 5, True),
    ]


def test_resuming_between_the_steps_of_a_run_is_refused_when_the_first_epoch_is_asked_for():
    loop = make_loop(6, steps_per_run=2, starting_local_step=3)
    epochs = loop.epochs()
    assert loop.epoch_num == 0
    with pytest.raises(ValueError, match=r"^Cannot resume at step 3 of the epoch with "
                                         r"steps_per_run=2: it is not a multiple of it\.$"):
        next(epochs)
    assert loop.epoch_num == 0


def test_a_loop_left_during_its_steps_says_so():
    loop = make_loop(3)
    for _ in loop.epochs():
        for last_step in loop.runs_of_epoch():
            if last_step == 1:
                break
        break
    assert (loop.epoch_num, loop.local_step, loop.running_steps) == (1, 1, True)
    loop = make_loop(3, max_epoch=1)
    for _ in loop.epochs():
        for _ in loop.runs_of_epoch():
            pass
        assert loop.running_steps is False


X, Y = make_regression_data(24)


class StartAt(tfloop.Callback):
    """Puts the loop at a step of the first epoch, as a resumed run does before the main loop."""

    _chief_only = False

    def __init__(self, local_step):
        self.local_step_to_start_at = local_step

    def _setup_graph(self):
        self.trainer.loop.starting_local_step = self.local_step_to_start_at


def test_callbacks_of_a_run_resumed_with_steps_per_run_see_each_runs_last_step():
    log = []
    trainer = train_linear([StartAt(4), RecordingCallback("r", log)], extra_callbacks=[],
                           data=tfloop.DatasetInput(dataset_fn(X, Y, 4)), steps_per_epoch=6,
                           steps_per_run=2, max_epoch=2)
    assert [entry[1:5] for entry in log[1:]] == [
        ("before_train", 0, 0, -1),
        ("before_epoch", 1, 0, 3),
        ("before_run", 1, 0, 5), ("after_run", 1, 2, 5), ("trigger_step", 1, 2, 5),
        ("after_epoch", 1, 2, 5), ("trigger", 1, 2, 5),
        ("before_epoch", 2, 2, -1),
        ("before_run", 2, 2, 1), ("after_run", 2, 4, 1), ("trigger_step", 2, 4, 1),
        ("before_run", 2, 4, 3), ("after_run", 2, 6, 3), ("trigger_step", 2, 6, 3),
        ("before_run", 2, 6, 5), ("after_run", 2, 8, 5), ("trigger_step", 2, 8, 5),
        ("after_epoch", 2, 8, 5), ("trigger", 2, 8, 5),
        ("after_train", 2, 8, 5),
    ]
    assert trainer.loop.epoch_first_global_step == 2


def test_a_run_resumed_between_the_steps_of_a_run_fails_after_before_train():
    log = []
    trainer = tfloop.SimpleTrainer(steps_per_run=2)
    with pytest.raises(ValueError, match="Cannot resume at step 1 of the epoch with "
                                         "steps_per_run=2") as info:
        train_linear([StartAt(1), RecordingCallback("r", log)], extra_callbacks=[],
                     data=tfloop.DatasetInput(dataset_fn(X, Y, 4)), steps_per_epoch=6,
                     trainer=trainer)
    assert [entry[1:5] for entry in log] == [("setup_graph",), ("before_train", 0, 0, -1),
                                             ("after_train", 0, 0, -1)]
    assert trainer.training_error is info.value


def test_a_loop_counts_only_the_first_run_of_each_training_step():
    loop = tfloop.TrainLoop()
    loop.configure(steps_per_epoch=2, starting_epoch=1, max_epoch=1)
    loop.count_run()                               # before training: not a training step
    counted = []
    for _ in loop.epochs():
        for _ in loop.runs_of_epoch():
            loop.count_run()
            loop.count_run()                       # a second run in the same step
            counted.append(loop.global_step)
        loop.count_run()                           # after the epoch's steps
    assert counted == [1, 2] and loop.global_step == 2


def test_the_state_of_a_loop_is_the_step_after_the_last_finished_one():
    loop = make_loop(3, max_epoch=3)
    states = []
    for _ in loop.epochs():
        states.append(("epoch start", loop.state_dict()["epoch"], loop.state_dict()["local_step"]))
        for _ in loop.runs_of_epoch():
            loop.count_run()
            states.append(("step", loop.state_dict()["epoch"], loop.state_dict()["local_step"]))
        loop.end_epoch()
        states.append(("epoch end", loop.state_dict()["epoch"], loop.state_dict()["local_step"]))
        if loop.epoch_num == 2:
            break
    assert states == [("epoch start", 1, 0), ("step", 1, 1), ("step", 1, 2), ("step", 1, 3),
                      ("epoch end", 2, 0),
                      ("epoch start", 2, 0), ("step", 2, 1), ("step", 2, 2), ("step", 2, 3),
                      ("epoch end", 3, 0)]
    assert loop.state_dict() == {"epoch": 3, "local_step": 0, "global_step": 6,
                                 "steps_per_epoch": 3}


def test_a_loop_continues_where_its_state_says():
    first = make_loop(4, max_epoch=3, steps_per_run=2)

    def train_until_step_6():
        for _ in first.epochs():
            for _ in first.runs_of_epoch():
                first.count_run()
                if first.global_step == 6:
                    return
            first.end_epoch()

    train_until_step_6()
    state = first.state_dict()
    assert state == {"epoch": 2, "local_step": 2, "global_step": 6, "steps_per_epoch": 4}
    second = make_loop(4, max_epoch=3, steps_per_run=2, global_step=6)
    second.load_state_dict(state)
    assert (second.starting_epoch, second.starting_local_step) == (2, 2)
    second.configure(4, second.starting_epoch, 3)
    assert [(epoch, list(second.runs_of_epoch())) for epoch in second.epochs()] == \
        [(2, [3]), (3, [1, 3])]


def test_the_position_of_a_step_without_a_resume_state():
    assert tfloop.TrainLoop.position_of_step(7, 3) == {
        "epoch": 3, "local_step": 1, "global_step": 7, "steps_per_epoch": 3}
    assert tfloop.TrainLoop.position_of_step(6, 3) == {
        "epoch": 3, "local_step": 0, "global_step": 6, "steps_per_epoch": 3}


def test_a_stop_request_keeps_its_first_reason():
    loop = tfloop.TrainLoop()
    assert not loop.stop_requested and loop.stop_reason is None
    loop.request_stop("SIGTERM received")
    loop.request_stop("a callback requested a stop after step 3")
    assert loop.stop_requested and loop.stop_reason == "SIGTERM received"


def test_loading_a_state_of_another_steps_per_epoch_continues_at_its_global_step(log_warnings):
    loop = make_loop(2, max_epoch=5)
    state = {"epoch": 2, "local_step": 2, "global_step": 5, "steps_per_epoch": 3}
    assert loop.load_state_dict(state, "model-5.resume.json") is False
    assert (loop.starting_epoch, loop.starting_local_step, loop.finished_epoch) == (3, 1, None)
    assert log_warnings == [
        "model-5.resume.json was written with steps_per_epoch=3, this run has 2: continuing at "
        "global step 5 (epoch 3, step 1); the input restarts from its beginning."]


def test_loading_only_a_global_step_continues_at_its_position(log_warnings):
    loop = make_loop(3, max_epoch=4)
    assert loop.load_state_dict({"global_step": 6}, "model-6") is False
    assert (loop.starting_epoch, loop.starting_local_step) == (3, 0)
    assert log_warnings == []      # at an epoch's start nothing of the epoch is lost
    assert loop.load_state_dict({"global_step": 7}, "model-7") is False
    assert (loop.starting_epoch, loop.starting_local_step) == (3, 1)
    assert log_warnings == ["model-7 has no resume state: continuing at global step 7 (epoch 3, "
                            "step 1), but the input restarts from its beginning and the "
                            "callbacks start afresh."]


@pytest.mark.parametrize("max_epoch, finished", [(1, 1), (2, None), (3, None)])
def test_a_state_past_max_epoch_is_an_already_finished_run(max_epoch, finished):
    loop = make_loop(3, max_epoch=max_epoch)
    assert loop.load_state_dict({"epoch": 2, "local_step": 0, "global_step": 3,
                                 "steps_per_epoch": 3}) is True
    assert loop.finished_epoch == finished
    if finished is None:
        assert [epoch for epoch in loop.epochs()] == list(range(2, max_epoch + 1))


# ---- epochs that are passes ----------------------------------------------------------------------
def walk_passes(loop, lengths, save_at=None):
    """Walk ``loop`` whose epochs are passes of ``lengths`` steps, the trainer's way (the step
    that ends a pass calls ``end_pass`` after it ran, ``end_epoch`` after the epoch); record the
    counters, and the loop's state right after global step ``save_at``."""
    seen, saved = [], None
    lengths = iter(lengths)
    for epoch in loop.epochs():
        length = next(lengths)
        seen.append(("epoch", epoch, loop.local_step, loop.steps_per_epoch, loop.is_last_step))
        for step in loop.runs_of_epoch():
            loop.global_step += 1
            if step == length - 1:
                loop.end_pass()
            seen.append(("run", step, loop.is_last_step))
            if loop.global_step == save_at:
                saved = loop.state_dict()
        loop.end_epoch()
    return seen, saved


def test_an_epoch_that_is_a_pass_runs_until_the_pass_ended_and_learns_its_length():
    loop = make_loop(None, max_epoch=3)
    assert loop.passes and loop.steps_per_epoch is None
    seen, _ = walk_passes(loop, [2, 3, 1])
    assert seen == [
        ("epoch", 1, -1, None, False), ("run", 0, False), ("run", 1, True),
        ("epoch", 2, -1, 2, False), ("run", 0, False), ("run", 1, False), ("run", 2, True),
        ("epoch", 3, -1, 3, False), ("run", 0, True),
    ]
    assert loop.steps_per_epoch == loop.pass_steps == 1


@pytest.mark.parametrize("save_at, continues", [(3, (2, 1, False)), (5, (2, 3, True))])
def test_a_pass_resumes_where_it_was_and_one_whose_pass_ended_only_ends(save_at, continues):
    _, state = walk_passes(make_loop(None, max_epoch=3), [2, 3, 2], save_at=save_at)
    assert state == {"epoch": 2, "local_step": continues[1], "global_step": save_at,
                     "steps_per_epoch": None, "pass_steps": 2, "pass_ended": continues[2]}
    loop = make_loop(None, max_epoch=3)
    assert loop.load_state_dict(state, "model.resume.json") is True
    assert (loop.starting_epoch, loop.starting_local_step, loop.steps_per_epoch) == \
        (2, continues[1], 2)
    loop.global_step = save_at
    seen, _ = walk_passes(loop, [3, 2])
    first_epoch = [("epoch", 2, continues[1] - 1, 2, continues[2])] + \
        [("run", step, step == 2) for step in range(continues[1], 3)]
    assert seen == first_epoch + [("epoch", 3, -1, 3, False), ("run", 0, False), ("run", 1, True)]


def test_an_epoch_cut_short_hands_the_rest_of_its_pass_to_the_next_epoch():
    loop = make_loop(None, max_epoch=2)
    epochs = loop.epochs()
    next(epochs)
    runs = loop.runs_of_epoch()
    next(runs)
    loop.global_step += 1
    loop.end_epoch_early()
    loop.end_epoch()
    assert loop.state_dict() == {"epoch": 2, "local_step": 1, "global_step": 1,
                                 "steps_per_epoch": None, "pass_steps": None,
                                 "pass_ended": False}
    next(epochs)
    assert (loop.epoch_num, loop.local_step, loop.epoch_first_global_step) == (2, 0, 0)
