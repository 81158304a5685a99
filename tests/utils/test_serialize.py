"""tensorpack's utils.serialize: dumps and loads round-trip objects and arrays."""
import numpy as np

from tfloop.utils.serialize import dumps, loads


def test_round_trip():
    obj = {"a": [1, "x"], "b": np.arange(4, dtype=np.int16)}
    data = dumps(obj)
    assert isinstance(data, bytes)
    back = loads(data)
    assert back["a"] == [1, "x"] and back["b"].dtype == np.int16
    np.testing.assert_array_equal(back["b"], obj["b"])
