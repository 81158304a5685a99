"""The arguments tensorpack passed through ``int()``, ``float()`` or ``sorted()`` take what
tensorpack took: numbers as strings read from a config file (``'25'``, ``'1e-5'``), whole floats
from a division (``1000 / 250``), points out of order. Every such site of tensorpack 0.11's source
is found by reading it (the test fails on a site the table below does not cover)."""
import ast
import os
import re

import numpy as np
import pytest

import tfloop
from tfloop import tfv1 as tf
from tfloop.dataflow import imgaug
from tfloop.tfutils import gradproc, optimizer, symbolic_functions
from tfloop.utils.timer import IterSpeedCounter

TENSORPACK = pytest.importorskip("tensorpack")


def df():
    return tfloop.DataFromList([[np.zeros((4, 4, 3), np.float32), 1]] * 8, shuffle=False)


# (module, name, argument): a call with the argument as a string and as a whole float, and the
# attribute holding the value taken (both must give the int or float tensorpack's call made).
SITES = {
    ("callbacks.prof", "ThroughputTracker", "samples_per_step"):
        (lambda v: tfloop.ThroughputTracker(v), lambda o: o._samples_per_step, 32),
    ("callbacks.steps", "SessionRunTimeout", "timeout_in_ms"):
        (lambda v: tfloop.SessionRunTimeout(v), lambda o: o._timeout, 1000),
    ("callbacks.summary", "MergeAllSummaries", "period"):
        (lambda v: tfloop.MergeAllSummaries(v), lambda o: o._period, 10),
    ("callbacks.summary", "SimpleMovingAverage", "window_size"):
        (lambda v: tfloop.SimpleMovingAverage(["cost"], v), lambda o: o._window, 10),
    ("dataflow.common", "BatchData", "batch_size"):
        (lambda v: tfloop.BatchData(df(), v), lambda o: o.batch_size, 4),
    ("dataflow.common", "FixedSizeData", "size"):
        (lambda v: tfloop.FixedSizeData(df(), v), len, 4),
    ("dataflow.common", "RepeatedDataPoint", "num"):
        (lambda v: tfloop.RepeatedDataPoint(df(), v), lambda o: o.num, 2),
    ("dataflow.common", "TestDataSpeed", "size"):
        (lambda v: tfloop.TestDataSpeed(df(), v), lambda o: o.test_size, 5),
    ("dataflow.common", "TestDataSpeed", "warmup"):
        (lambda v: tfloop.TestDataSpeed(df(), 5, v), lambda o: o.warmup, 2),
    ("dataflow.image", "ImageFromFile", "channel"):
        (lambda v: tfloop.ImageFromFile(["a.png"], channel=v), lambda o: o.channel, 3),
    ("dataflow.imgaug.misc", "ResizeShortestEdge", "size"):
        (lambda v: imgaug.ResizeShortestEdge(v), lambda o: o.size, 32),
    ("dataflow.raw", "FakeData", "size"):
        (lambda v: tfloop.FakeData([[2]], v), len, 4),
    ("dataflow.remote", "RemoteDataZMQ", "hwm"):
        (lambda v: tfloop.RemoteDataZMQ("ipc:///tmp/never-bound", hwm=v), lambda o: o._hwm, 50),
    ("input_source.input_source", "BatchQueueInput", "batch_size"):
        (lambda v: tfloop.BatchQueueInput(df(), v), lambda o: o.batch_size, 4),
    ("input_source.input_source", "TensorInput", "size"):
        (lambda v: tfloop.TensorInput(lambda: [], v), lambda o: o.size(), 4),
    ("input_source.input_source", "ZMQInput", "hwm"):
        (lambda v: tfloop.ZMQInput("ipc:///tmp/never-bound", v), lambda o: o.data.hwm, 50),
    ("tfutils.gradproc", "GlobalNormClip", "global_norm"):
        (lambda v: gradproc.GlobalNormClip(v), lambda o: o._norm, 5.0),
    ("tfutils.optimizer", "AccumGradOptimizer", "niter"):
        (lambda v: optimizer.AccumGradOptimizer(tf.train.GradientDescentOptimizer(0.1), v),
         lambda o: o._niter, 2),
    ("tfutils.symbolic_functions", "psnr", "maxp"):
        (lambda v: _psnr(v), lambda o: o, 20 * np.log10(255.0)),
    ("train.config", "TrainConfig", "steps_per_epoch"):
        (lambda v: tfloop.TrainConfig(steps_per_epoch=v), lambda o: o.steps_per_epoch, 4),
    ("train.config", "TrainConfig", "starting_epoch"):
        (lambda v: tfloop.TrainConfig(starting_epoch=v, max_epoch=9), lambda o: o.starting_epoch,
         3),
    ("train.config", "TrainConfig", "max_epoch"):
        (lambda v: tfloop.TrainConfig(max_epoch=v), lambda o: o.max_epoch, 3),
    ("utils.timer", "IterSpeedCounter", "print_every"):
        (lambda v: IterSpeedCounter(v), lambda o: o.print_every, 10),
    ("utils.utils", "fix_rng_seed", "seed"):
        (lambda v: _fixed_seed(v), lambda o: o, 7),
}

# Sites that are no argument a script gives, or whose tfloop counterpart is tested elsewhere.
OTHER_SITES = {
    # put_scalar takes numpy scalars as numbers (tests/monitors); the printers' own float().
    ("callbacks.monitor", "Monitors.put_scalar", "val"),
    ("callbacks.monitor", "ScalarHistory.process_scalar", "val"),
    ("callbacks.monitor", "ScalarPrinter.process_scalar", "val"),
    # the schedule: tests/callbacks and test_string_epochs_... below.
    ("callbacks.param", "ScheduledHyperParamSetter", "schedule"),
    # tensorpack's own helpers' internals.
    ("tfutils.summary", "create_scalar_summary", "v"),
    ("tfutils.tower", "TrainTowerContext", "index"),
    ("tfutils.tower", "TrainTowerContext", "total"),
    ("utils.utils", "humanize_time_delta", "sec"),
    # the loop's bounds, set by the trainer from TrainConfig's (above) or train()'s arguments:
    # tests/train/test_loop.py.
    ("train.base", "TrainLoop.config", "max_epoch"),
    ("train.base", "TrainLoop.config", "starting_epoch"),
    ("train.base", "TrainLoop.config", "steps_per_epoch"),
}


def _psnr(maxp):
    with tf.Graph().as_default():
        one = tf.constant(1.0)
        with tf.Session() as sess:
            return sess.run(symbolic_functions.psnr(one, one + 1, maxp=maxp))


def _fixed_seed(seed):
    """The first number of an RNG made after ``fix_rng_seed(seed)``."""
    tfloop.fix_rng_seed(seed)
    try:
        return tfloop.get_rng().randint(2 ** 30)
    finally:
        tfloop.fix_rng_seed(None)


def tensorpack_coercion_sites():
    """``(module, callable, argument)`` for every public function or constructor of tensorpack
    0.11 that passes one of its arguments to ``int()``, ``float()`` or ``sorted()``."""
    root = os.path.dirname(TENSORPACK.__file__)
    sites = set()
    for directory, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".py") or name.endswith("_test.py"):
                continue
            path = os.path.join(directory, name)
            module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
            with open(path, encoding="utf-8") as f:
                sites.update((module, *site) for site in _sites_in(ast.parse(f.read()), None))
    return sites


def _sites_in(node, owner):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            yield from _sites_in(child, child.name)
        elif isinstance(child, ast.FunctionDef) and (child.name == "__init__" or
                                                     not child.name.startswith("_")):
            params = {a.arg for a in child.args.args + child.args.kwonlyargs}
            where = owner if child.name == "__init__" else \
                ".".join(n for n in (owner, child.name) if n)
            for call in ast.walk(child):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and
                        call.func.id in ("int", "float", "sorted") and call.args and
                        isinstance(call.args[0], ast.Name) and call.args[0].id in params):
                    yield where, call.args[0].id


def test_every_coercion_of_tensorpack_is_covered():
    assert tensorpack_coercion_sites() == set(SITES) | OTHER_SITES


@pytest.mark.parametrize("site", sorted(SITES), ids=lambda s: f"{s[1]}-{s[2]}")
def test_a_string_or_a_whole_float_is_taken_as_tensorpack_took_it(site, log_warnings):
    make, read, value = SITES[site]
    expected = read(make(value))
    assert read(make(str(value))) == expected
    assert read(make(float(value))) == expected
    assert log_warnings == []


def test_string_epochs_are_converted_and_the_points_sorted(log_lines):
    # a schedule read from a config file, its points in any order
    setter = tfloop.ScheduledHyperParamSetter("learning_rate",
                                              [("25", "1e-5"), ("0", "0.1"), (10.0, 1e-3)])
    assert setter.schedule == [(0, 0.1), (10, 1e-3), (25, 1e-5)]
    assert [line for line in log_lines if "increasing order" in line] == [
        "ScheduledHyperParamSetter: the schedule's points are not in increasing order; they are "
        "taken sorted, as tensorpack sorted them: [(0, 0.1), (10, 0.001), (25, 1e-05)]."]


def test_a_fraction_is_truncated_with_a_warning(log_warnings):
    assert tfloop.BatchData(df(), 2.5).batch_size == 2
    assert log_warnings == ["BatchData: batch_size is 2.5, not a whole number: it is taken as 2, "
                            "as tensorpack's int() took it; pass 2 (or the int you mean) to "
                            "silence this."]


@pytest.mark.parametrize("value", ["2.5", "four", True, None, [4]])
def test_what_int_refuses_is_refused_naming_the_value(value):
    with pytest.raises(ValueError, match=re.escape(f"BatchData: batch_size must be a positive "
                                                   f"int, got {value!r}.")):
        tfloop.BatchData(df(), value)
