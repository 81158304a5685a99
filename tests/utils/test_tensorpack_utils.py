"""tensorpack's small utilities at their paths: placeholders for names that cannot work here
(``utils.develop``), ``log_deprecated``, ``enable_call_trace``, ``normpath``, the naming
constants."""
import sys

import pytest

from tfloop.utils import debug
from tfloop.utils.develop import (
    UnavailableError,
    create_dummy_class,
    create_dummy_func,
    is_unavailable,
    log_deprecated,
    unavailable,
)
from tfloop.utils.fs import normpath
from tfloop.utils.naming import MOVING_SUMMARY_OPS_KEY


def test_an_unavailable_name_imports_and_raises_with_its_reason_when_used():
    Trainer = unavailable("BytePSLike", "it needs X; use Y.")
    assert is_unavailable(Trainer) and not is_unavailable(int)
    with pytest.raises(UnavailableError, match=r"^BytePSLike is not available in tfloop: it needs "
                                               r"X; use Y\.$"):
        Trainer(1, gpus=2)
    assert isinstance(UnavailableError("x"), ImportError)   # scripts' `except ImportError` hold


def test_tensorpacks_dummy_makers_name_the_dependency():
    with pytest.raises(ImportError, match="LMDBData is not available in tfloop: it needs 'lmdb'"):
        create_dummy_class("LMDBData", "lmdb")("path")
    with pytest.raises(ImportError, match="load is not available in tfloop: it needs 'a,b'"):
        create_dummy_func("load", ["a", "b"])()


def test_log_deprecated_at_most_n_times(log_lines):
    for _ in range(3):
        log_deprecated("OldName", "Use NewName.", max_num_warnings=2)
    log_deprecated(text="Something changes.", eos="2030-01-01")
    assert log_lines == ["[Deprecated] OldName was deprecated. Use NewName."] * 2 + [
        "[Deprecated] Something changes. Legacy period ends after 2030-01-01."]
    with pytest.raises(ValueError, match="needs a name or a text"):
        log_deprecated()


def _called():
    return 1


def test_enable_call_trace_prints_each_call(capsys):
    try:
        debug.enable_call_trace()
        _called()
    finally:
        sys.settrace(None)
    out = capsys.readouterr().out
    assert "Call to `_called` on line " in out and "test_tensorpack_utils.py" in out


def test_normpath_keeps_urls():
    assert normpath("a//b/../c") == "a/c"
    assert normpath("gs://bucket//a/") == "gs://bucket//a/"


def test_the_moving_summary_collection_has_one_name():
    from tfloop.tfutils import summary
    assert summary.MOVING_SUMMARY_OPS_KEY == MOVING_SUMMARY_OPS_KEY == "MOVING_SUMMARY_OPS"
