"""Fixtures of the CLI tests."""
import pytest
from cli_support import make_logdir


@pytest.fixture
def run_dir(tmp_path):
    return make_logdir(tmp_path / "run")
