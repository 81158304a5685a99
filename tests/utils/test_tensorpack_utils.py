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


# ---- what code copied from tensorpack imports from utils (tests/compat/test_copied_sources.py) --
def test_deprecated_logs_at_each_call_and_hide_doc_marks(log_warnings, monkeypatch):
    from tfloop.utils.develop import HIDE_DOC, building_rtfd, deprecated

    @deprecated("Use new() instead.", max_num_warnings=1)
    def old(x):
        return x + 1

    assert old(1) == 2 and old(2) == 3
    assert log_warnings == ["[Deprecated] old was deprecated. Use new() instead."]
    assert HIDE_DOC(old) is old and old.__HIDE_SPHINX_DOC__
    monkeypatch.delenv("READTHEDOCS", raising=False)
    monkeypatch.delenv("DOC_BUILDING", raising=False)
    assert building_rtfd() is False
    monkeypatch.setenv("READTHEDOCS", "True")
    assert building_rtfd() is True


def test_subproc_call_returns_output_and_exit_code(log_warnings):
    from tfloop.utils.concurrency import DIE, subproc_call
    assert subproc_call("echo hi") == (b"hi\n", 0)
    assert subproc_call("echo no >&2; exit 3") == (b"no\n", 3)
    assert subproc_call("sleep 5", timeout=0.2)[1] == -1
    assert log_warnings[0] == "Command 'echo no >&2; exit 3' failed with exit code 3: no"
    assert isinstance(DIE, type)


def test_total_timer_sums_the_blocks_under_a_message(log_lines, monkeypatch):
    from tfloop.utils import timer
    monkeypatch.setattr(timer, "_TOTALS", {})      # nothing left for the log at exit
    with timer.total_timer("load"):
        pass
    with timer.total_timer("load"):
        pass
    timer.print_total_timer()
    line = next(line for line in log_lines if line.startswith("Total time: load"))
    assert ", 2 times, " in line


def test_log_dir_is_the_logger_dir(tmp_path):
    from tfloop.utils import logger
    logger.set_logger_dir(str(tmp_path / "run"), action="k")
    try:
        assert logger.LOG_DIR == logger.get_logger_dir() == str(tmp_path / "run")
    finally:
        logger.unset_logger_dir()
    assert logger.LOG_DIR is None
    with pytest.raises(AttributeError):
        logger.NO_SUCH_NAME  # noqa: B018
