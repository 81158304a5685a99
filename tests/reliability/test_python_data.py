"""Python data given to FeedInput/QueueInput (issue 23, data): a ragged datapoint names its
input, empty data is not called a one-shot generator, a ``__len__`` longer than a pass warns."""
import numpy as np
import pytest
from support import batches, make_regression_data, train_linear

import tfloop


def test_a_ragged_datapoint_names_its_input():
    x, y = make_regression_data(4)
    ragged = [list(x[0]), list(x[1][:2]), list(x[2]), list(x[3])]
    with pytest.raises(ValueError, match=r"FeedInput datapoint 0: the value for input x: float32 "
                                         r"\(None, 3\) is ragged \(its rows differ in length\)"):
        train_linear(data=tfloop.FeedInput([(ragged, y)]), max_epoch=1)


@pytest.mark.parametrize("source", [tfloop.FeedInput, tfloop.QueueInput])
def test_empty_data_is_called_empty(source):
    with pytest.raises(ValueError, match=r"data yields no datapoint: it is empty") as info:
        train_linear(data=source([]), steps_per_epoch=2, max_epoch=1)
    assert "one-shot" not in str(info.value)


class LongerThanItIs:
    """Yields 2 batches, says it has 5."""

    def __init__(self):
        x, y = make_regression_data(8)
        self.batches = batches(x, y, 4)

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return 5


def test_a_len_longer_than_a_pass_warns_once_with_both_numbers(caplog):
    train_linear(data=tfloop.FeedInput(LongerThanItIs()), max_epoch=3)
    warnings = [r.getMessage() for r in caplog.records if "len(data)" in r.getMessage()]
    assert warnings == ["FeedInput: len(data) is 5, but a pass over the data yielded only 2 "
                        "datapoint(s); epochs (steps_per_epoch defaults to len(data)) do not "
                        "match passes. Make __len__ return what __iter__ yields."]


def test_a_len_that_matches_does_not_warn(caplog):
    x, y = make_regression_data(8)
    train_linear(data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=2)
    assert not [r for r in caplog.records if "len(data)" in r.getMessage()]


def test_numbers_still_cast_as_before():
    x, y = make_regression_data(8)
    data = [(x[i:i + 4].astype(np.float64).tolist(), y[i:i + 4]) for i in (0, 4)]
    train_linear(data=tfloop.FeedInput(data), max_epoch=1)
