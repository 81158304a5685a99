"""The example runner changes only imports, and refuses an edit that does not match exactly once."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import apply_edits, change_imports  # noqa: E402


def test_only_import_lines_change():
    source = ("import tensorflow as tf\n"
              "from tensorpack import *\n"
              "import tensorpack.utils.viz as tpviz\n"
              "    from tensorpack.dataflow import PrintData\n"
              "print('tensorpack')  # tensorpack stays in text\n")
    assert change_imports(source) == ("from tfloop import tfv1 as tf\n"
                                      "from tfloop import *\n"
                                      "import tfloop.utils.viz as tpviz\n"
                                      "    from tfloop.dataflow import PrintData\n"
                                      "print('tensorpack')  # tensorpack stays in text\n")


def test_an_edit_must_match_exactly_once():
    assert apply_edits("a = 1\nb = 2\n", [("a = 1", "a = 3")], "x.py") == "a = 3\nb = 2\n"
    for text in ("b = 2\n", "a = 1\na = 1\n"):
        with pytest.raises(AssertionError, match=r"x.py: the edit of 'a = 1' matches \d times"):
            apply_edits(text, [("a = 1", "a = 3")], "x.py")
