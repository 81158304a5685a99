"""The resume state's pieces in milliseconds, without a session: collecting and applying the
callbacks' states, and reading a state file written in the format of earlier versions."""
import json
import os

import pytest

import tfloop
from tfloop.resume.state import (
    apply_callback_states,
    callback_keys,
    collect_callback_states,
    read_resume_state,
)


class Counter(tfloop.Callback):
    def __init__(self, count=0):
        self.count = count

    def _state_dict(self):
        return {"count": self.count}

    def _load_state_dict(self, state):
        self.count = int(state["count"])


class Stateless(tfloop.Callback):
    pass


def test_callbacks_are_keyed_by_their_innermost_class_and_index():
    first, second = Counter(1), Counter(2)
    callbacks = [tfloop.PeriodicTrigger(first, every_k_steps=2), Stateless(), second]
    assert [key for key, _ in callback_keys(callbacks)] == ["Counter#0", "Stateless#0",
                                                            "Counter#1"]
    assert collect_callback_states(callbacks) == {"Counter#0": {"count": 1},
                                                  "Counter#1": {"count": 2}}


def test_states_go_back_to_the_callbacks_of_the_same_key(tfloop_log):
    callbacks = [Counter(), Stateless(), Counter()]
    apply_callback_states(callbacks, {"Counter#1": {"count": 7}, "Gone#0": {}}, "the file")
    assert [cb.count for cb in callbacks if isinstance(cb, Counter)] == [0, 7]
    assert ("WARNING", "the file has the state of callback(s) Gone#0 which this run does not "
            "have; ignored. (Callbacks are matched by class name and index among that class.)") \
        in tfloop_log


def test_a_state_that_does_not_load_names_the_callback_and_the_file():
    with pytest.raises(ValueError, match=r"^Callback Counter#0 \(Counter\) cannot load its state "
                                         r"from the file: KeyError"):
        apply_callback_states([Counter()], {"Counter#0": {}}, "the file")


# A resume state as tfloop wrote it before the loop and the inputs owned their states (format 1):
# the position at the top level, a Python input's position in its feeder's callback state, a
# tf.data iterator's position in the file beside it.
OLD_STATE = {
    "format": 1, "checkpoint": "model-5", "global_step": 5, "epoch": 2, "local_step": 2,
    "steps_per_epoch": 3,
    "callbacks": {"QueueFeeder#0": {"pass": 0, "index": 5, "consumed": 5},
                  "Counter#0": {"count": 5}, "JSONWriter#0": {"records": 1}},
    "iterator": {"file": "model-5.iterator", "bytes": 4}, "input_note": None}


def test_a_state_file_in_the_format_of_earlier_versions_is_read_and_applied(tmp_path):
    prefix = str(tmp_path / "model-5")
    with open(prefix + ".resume.json", "w") as f:
        json.dump(OLD_STATE, f)
    with open(prefix + ".iterator", "wb") as f:
        f.write(b"\x00\x01\x02\x03")
    state = read_resume_state(prefix)
    assert state["iterator_bytes"] == b"\x00\x01\x02\x03"
    loop = tfloop.TrainLoop()
    loop.load_state_dict(state)
    assert (loop.starting_epoch, loop.starting_local_step) == (2, 2)
    counter = Counter()
    apply_callback_states([counter], {"Counter#0": state["callbacks"]["Counter#0"]}, prefix)
    assert counter.count == 5


def test_an_iterator_file_of_another_size_is_left_out(tmp_path, tfloop_log):
    prefix = str(tmp_path / "model-5")
    with open(prefix + ".resume.json", "w") as f:
        json.dump(OLD_STATE, f)
    with open(prefix + ".iterator", "wb") as f:
        f.write(b"\x00")
    state = read_resume_state(prefix)
    assert state["iterator"] is None and "iterator_bytes" not in state
    assert any(level == "WARNING" and "missing or of another size" in message
               for level, message in tfloop_log)
    assert os.path.exists(prefix + ".iterator")
