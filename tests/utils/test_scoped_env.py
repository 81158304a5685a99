"""scoped_environ: variables set while blocks run, the process's own values back after the last."""
import contextlib
import os
import threading

from tfloop.utils.scoped_env import scoped_environ, value_before

NAME = "TFLOOP_TEST_SCOPED_ENV"


def test_a_block_sets_the_variable_and_gives_the_value_before_back(monkeypatch):
    monkeypatch.setenv(NAME, "mine")
    with scoped_environ({NAME: "block"}):
        assert os.environ[NAME] == "block"
        assert value_before(NAME) == "mine"
    assert os.environ[NAME] == "mine"
    assert value_before(NAME) == "mine"


def test_a_variable_unset_before_is_unset_after(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    with scoped_environ({NAME: "block"}):
        assert os.environ[NAME] == "block" and value_before(NAME) is None
    assert NAME not in os.environ


def test_overlapping_blocks_keep_the_latest_running_value_until_the_last_ends(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    first, second = scoped_environ({NAME: "first"}), scoped_environ({NAME: "second"})
    first.__enter__()
    second.__enter__()
    assert os.environ[NAME] == "second"
    first.__exit__(None, None, None)            # not in the order they started
    assert os.environ[NAME] == "second"
    second.__exit__(None, None, None)
    assert NAME not in os.environ
    with scoped_environ({NAME: "outer"}):
        with scoped_environ({NAME: "inner"}):
            assert os.environ[NAME] == "inner"
        assert os.environ[NAME] == "outer"
    assert NAME not in os.environ


def test_a_block_that_raises_gives_the_value_back(monkeypatch):
    monkeypatch.setenv(NAME, "mine")
    with contextlib.suppress(RuntimeError), scoped_environ({NAME: "block"}):
        raise RuntimeError("failed inside")
    assert os.environ[NAME] == "mine"


def test_blocks_in_many_threads_leave_the_process_as_it_was(monkeypatch):
    monkeypatch.setenv(NAME, "mine")
    start, seen = threading.Barrier(8), []

    def run():
        start.wait()
        for _ in range(200):
            with scoped_environ({NAME: "0"}):
                seen.append(os.environ[NAME])

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["0"] * 1600                 # never another block's end inside a block
    assert os.environ[NAME] == "mine"


def test_no_values_changes_nothing(monkeypatch):
    monkeypatch.setenv(NAME, "mine")
    environment = dict(os.environ)
    with scoped_environ({}):
        assert dict(os.environ) == environment
    assert dict(os.environ) == environment
