"""require: an optional dependency, or an error naming the extra that installs it."""
import pytest

from tfloop.utils.optional import require


def test_require_returns_the_module():
    assert require("json", "none", "the test").dumps([]) == "[]"


def test_require_names_the_extra_when_missing():
    with pytest.raises(ImportError, match=r"HDF5Serializer needs the optional package "
                                          r"'no_such_pkg'.*pip install 'tfloop-train\[hdf5\]'"):
        require("no_such_pkg.sub", "hdf5", "HDF5Serializer")
