"""Every ``Example:`` in the docstrings of tfloop.dataflow runs and shows what it prints."""
import doctest
import importlib
import pkgutil

import pytest

import tfloop.dataflow

MODULES = sorted(name for _, name, _ in pkgutil.walk_packages(tfloop.dataflow.__path__,
                                                               "tfloop.dataflow."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
