"""tensorpack's argtools: memoization, call-once methods, map_arg, shape helpers."""
import pytest

from tfloop.compat import tf
from tfloop.utils.argtools import (
    call_only_once,
    graph_memoized,
    map_arg,
    memoized,
    memoized_ignoreargs,
    memoized_method,
    shape2d,
    shape4d,
)


def test_memoizers_cache_as_documented():
    calls = []

    @memoized
    def square(x):
        calls.append(x)
        return x * x

    @memoized_ignoreargs
    def first(x):
        calls.append(("first", x))
        return x

    assert (square(3), square(3), first(1), first(2)) == (9, 9, 1, 1)
    assert calls == [3, ("first", 1)]

    class Model:
        made = 0

        @memoized_method
        def opt(self, lr=0.1):
            Model.made += 1
            return object()

    a, b = Model(), Model()
    assert a.opt() is a.opt() and a.opt() is not b.opt() and a.opt(lr=1) is not a.opt()
    assert Model.made == 3


def test_graph_memoized_is_per_graph():
    @graph_memoized
    def constant():
        return tf.constant(1.0)

    with tf.Graph().as_default():
        assert constant() is constant()
        first = constant()
    with tf.Graph().as_default():
        assert constant() is not first


def test_call_only_once_and_map_arg():
    class Trainer:
        @call_only_once
        def setup(self):
            return "done"

    t = Trainer()
    assert t.setup() == "done"
    with pytest.raises(RuntimeError, match="Trainer.setup can only be called once"):
        t.setup()
    assert Trainer().setup() == "done"

    @map_arg(gpus=lambda g: list(range(g)) if isinstance(g, int) else g)
    def devices(gpus, scale=1):
        return gpus, scale

    assert devices(2) == ([0, 1], 1) and devices(gpus=[3], scale=2) == ([3], 2)


def test_shapes():
    assert shape2d(3) == [3, 3] and shape2d((2, 5)) == [2, 5]
    assert shape4d(2) == [1, 2, 2, 1] and shape4d([2, 3], "NCHW") == [1, 1, 2, 3]
    with pytest.raises(ValueError, match="shape2d takes an int or a pair"):
        shape2d([1, 2, 3])


def test_log_once_logs_each_message_once_at_its_level(tfloop_log):
    from tfloop.utils.argtools import log_once
    for _ in range(3):
        log_once("image 7 is filtered for training: no boxes", "warn")
        log_once("image 8 is filtered for training: no boxes")
    assert tfloop_log == [("WARNING", "image 7 is filtered for training: no boxes"),
                          ("INFO", "image 8 is filtered for training: no boxes")]
    with pytest.raises(ValueError, match="'shout'"):
        log_once("x", "shout")
