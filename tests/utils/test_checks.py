"""tfloop.utils.checks: what each check accepts, returns, and the exact message it refuses with."""
import doctest

import numpy as np
import pytest

from tfloop.utils import checks
from tfloop.utils.checks import (
    check_bool,
    check_callable,
    check_int,
    check_list_of,
    check_name,
    check_names,
    check_number,
    check_one_of,
    check_positive_int,
    check_positive_number,
    is_int,
    is_number,
)


def test_docstring_examples_run():
    assert doctest.testmod(checks).failed == 0


@pytest.mark.parametrize("value, expected", [
    (3, True), (np.int64(3), True), (0, True), (True, False), (False, False), (2.0, False),
    ("3", False), (None, False)])
def test_is_int(value, expected):
    assert is_int(value) is expected


@pytest.mark.parametrize("value, expected", [
    (3, True), (2.5, True), (np.float32(1.5), True), (True, False), ("1", False), (None, False)])
def test_is_number(value, expected):
    assert is_number(value) is expected


def test_check_int_returns_a_plain_int():
    got = check_int(np.int32(4), "n", at_least=1)
    assert got == 4 and type(got) is int
    assert check_int(0, "n", at_least=0) == 0
    assert check_int(None, "n", at_least=1, allow_none=True) is None
    assert check_int(1, "timeout_in_ms", above=0) == 1


@pytest.mark.parametrize("value, kwargs, message", [
    (0, dict(at_least=1), "StagingInput's nr_stage must be an int >= 1, got 0."),
    (True, dict(at_least=1), "StagingInput's nr_stage must be an int >= 1, got True."),
    (2.0, dict(at_least=1), "StagingInput's nr_stage must be an int >= 1, got 2.0."),
    ("3", dict(at_least=1), "StagingInput's nr_stage must be an int >= 1, got '3'."),
    (None, dict(at_least=1), "StagingInput's nr_stage must be an int >= 1, got None."),
    (0, dict(at_least=1, allow_none=True),
     "StagingInput's nr_stage must be an int >= 1 or None, got 0."),
    (0, dict(above=0), "StagingInput's nr_stage must be an int > 0, got 0."),
    (-1, dict(at_least=0, note="0: once per epoch"),
     "StagingInput's nr_stage must be an int >= 0 (0: once per epoch), got -1."),
])
def test_check_int_refusals(value, kwargs, message):
    with pytest.raises(ValueError) as info:
        check_int(value, "StagingInput's nr_stage", **kwargs)
    assert str(info.value) == message


def test_check_int_needs_exactly_one_bound():
    with pytest.raises(TypeError, match="exactly one of at_least= and above="):
        check_int(3, "n")
    with pytest.raises(TypeError, match="exactly one of at_least= and above="):
        check_int(3, "n", at_least=1, above=0)


@pytest.mark.parametrize("value, allow_none, message", [
    (0, False, "TFEventWriter: max_queue must be a positive int, got 0."),
    (False, False, "TFEventWriter: max_queue must be a positive int, got False."),
    (1.5, False, "TFEventWriter: max_queue must be a positive int, got 1.5."),
    (-2, True, "TFEventWriter: max_queue must be a positive int or None, got -2."),
])
def test_check_positive_int(value, allow_none, message):
    assert check_positive_int(7, "TFEventWriter: max_queue") == 7
    assert check_positive_int(None, "m", allow_none=True) is None
    with pytest.raises(ValueError) as info:
        check_positive_int(value, "TFEventWriter: max_queue", allow_none=allow_none)
    assert str(info.value) == message


def test_check_number():
    assert check_number(-3.5, "scale") == -3.5
    assert check_number(0, "timeout_s", at_least=0) == 0
    assert check_number(None, "x", above=0, allow_none=True) is None
    for value, kwargs, message in [
            ("2", {}, "scale must be a number, got '2'."),
            (True, {}, "scale must be a number, got True."),
            (-1, dict(at_least=0), "scale must be a number >= 0, got -1."),
            (0, dict(above=0), "scale must be a number > 0, got 0."),
            (float("nan"), dict(above=0), "scale must be a number > 0, got nan.")]:
        with pytest.raises(ValueError) as info:
            check_number(value, "scale", **kwargs)
        assert str(info.value) == message


def test_check_positive_number():
    assert check_positive_number(0.25, "interval") == 0.25
    assert check_positive_number(None, "timeout", allow_none=True) is None
    for value, kwargs, message in [
            (0, {}, "interval must be a positive number, got 0."),
            (float("nan"), {}, "interval must be a positive number, got nan."),
            (-1, dict(unit="seconds"), "interval must be a positive number of seconds, got -1."),
            ("1", dict(unit="seconds", allow_none=True),
             "interval must be a positive number of seconds or None, got '1'.")]:
        with pytest.raises(ValueError) as info:
            check_positive_number(value, "interval", **kwargs)
        assert str(info.value) == message


def test_check_bool():
    assert check_bool(True, "verbose") is True
    for value in (1, 0, "no", None):
        with pytest.raises(TypeError) as info:
            check_bool(value, "ScaleGradient: verbose")
        assert str(info.value) == f"ScaleGradient: verbose must be True or False, got {value!r}."
    with pytest.raises(TypeError) as info:
        check_bool("max", "EarlyStopping: reverse", note="True: larger is better")
    assert str(info.value) == ("EarlyStopping: reverse must be True or False (True: larger is "
                               "better), got 'max'.")


def test_check_one_of():
    assert check_one_of("min", "mode", ["min", "max"]) == "min"
    with pytest.raises(ValueError) as info:
        check_one_of("mean", "mode", ["min", "max"])
    assert str(info.value) == "mode must be one of min, max; got 'mean'."


def test_check_name():
    assert check_name("acc", "summary_name") == "acc"
    with pytest.raises(TypeError) as info:
        check_name(3, "summary_name")
    assert str(info.value) == "summary_name must be a non-empty string, got 3."
    with pytest.raises(TypeError) as info:
        check_name("", "summary_name")
    assert str(info.value) == "summary_name must be a non-empty string, got ''."


def test_check_callable():
    assert check_callable(len, "func") is len
    assert check_callable(None, "func", allow_none=True) is None
    with pytest.raises(TypeError) as info:
        check_callable(0.5, "func")
    assert str(info.value) == "func must be callable, got 0.5."
    with pytest.raises(TypeError) as info:
        check_callable("f", "func", signature="func(grad, var) -> grad")
    assert str(info.value) == "func must be callable as func(grad, var) -> grad, got 'f'."


@pytest.mark.parametrize("value", [[], "", ["cost", ""], ["cost", 3], 3, None])
def test_check_names_refuses_anything_but_a_non_empty_list_of_names(value):
    with pytest.raises(ValueError, match=r"TensorPrinter needs a list of tensor names, got "):
        check_names(value, "TensorPrinter")


def test_check_names_turns_one_name_or_a_tuple_into_a_list():
    assert check_names("cost", "CheckNumerics", "tensor or variable") == ["cost"]
    assert check_names(("a", "b"), "TensorPrinter") == ["a", "b"]


class Base:
    pass


class Special(Base):
    pass


def test_check_list_of_takes_none_one_object_or_an_iterable_and_names_a_wrong_item():
    one = Special()
    assert check_list_of(None, "monitors", Special) is None
    assert check_list_of(one, "monitors", Special) == [one]
    assert check_list_of((one,), "monitors", Special) == [one]
    with pytest.raises(TypeError, match=r"^monitors must be a list of Special; got 5 \(int\)\.$"):
        check_list_of([one, 5], "monitors", Special)
    with pytest.raises(TypeError, match=r"monitors must be a list of Special; got <.*Base"):
        check_list_of(Base(), "monitors", Special, one=Base)
    with pytest.raises(TypeError, match=r"got 5 \(int\)"):
        check_list_of(5, "callbacks", Special)


def test_repeated_lists_each_item_that_occurs_twice_once_sorted():
    assert checks.repeated(["b", "a", "b", "c", "a", "b"]) == ["a", "b"]
    assert checks.repeated(iter([1, 2, 3])) == []
