"""The test suite's own rules: plain ``pytest`` leaves out the slow tests (tests/conftest.py), and
waits are scaled by TFLOOP_TEST_TIMEOUT_SCALE (tests/support.py)."""
import types

import conftest
import pytest
import support
import timeout_support


class Item:
    """A collected test as the selection sees it: a name, and a slow mark or none."""

    def __init__(self, name, slow):
        self.name, self.slow = name, slow

    def get_closest_marker(self, name):
        return pytest.mark.slow.mark if name == "slow" and self.slow else None


def select(args=("tests",), run_slow=False, markexpr=""):
    """(kept, deselected) test names after the conftest's selection of a fast and a slow test."""
    deselected = []
    config = types.SimpleNamespace(
        getoption={"--run-slow": run_slow}.__getitem__,
        option=types.SimpleNamespace(markexpr=markexpr), args=list(args),
        hook=types.SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)))
    items = [Item("fast", False), Item("slow", True)]
    conftest.pytest_collection_modifyitems(config, items)
    return [item.name for item in items], [item.name for item in deselected]


def test_plain_pytest_leaves_out_the_slow_tests():
    assert select() == (["fast"], ["slow"])
    assert select(args=["tests/train", "tests/input"]) == (["fast"], ["slow"])


@pytest.mark.parametrize("how", [{"run_slow": True}, {"markexpr": "slow"},
                                 {"markexpr": "not soak"}, {"args": ["tests/x.py::test_a"]}],
                         ids=["--run-slow", "-m slow", "-m not soak", "node id"])
def test_run_slow_a_mark_expression_or_a_node_id_decide_instead(how):
    assert select(**how) == (["fast", "slow"], [])


def test_timeouts_scale_by_the_environment(monkeypatch):
    assert support.scaled_timeout(4) == 4 * timeout_support.TIMEOUT_SCALE
    monkeypatch.delenv("TFLOOP_TEST_TIMEOUT_SCALE", raising=False)
    assert timeout_support._timeout_scale() == 3
    monkeypatch.setenv("TFLOOP_TEST_TIMEOUT_SCALE", "7.5")
    assert timeout_support._timeout_scale() == 7.5
    for bad in ["0", "-1", "slow", "nan"]:
        monkeypatch.setenv("TFLOOP_TEST_TIMEOUT_SCALE", bad)
        with pytest.raises(ValueError, match=f"TFLOOP_TEST_TIMEOUT_SCALE must be a number > 0, "
                                             f"got '{bad}'; unset it for the default 3"):
            timeout_support._timeout_scale()
