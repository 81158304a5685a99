"""import_extra: a missing integration package is an ImportError naming the extra to install
(install_command: the pip command, under the distribution's name)."""
import sys

import pytest

import tfloop
from tfloop.utils.extras import import_extra, install_command


def test_a_present_package_is_imported():
    assert import_extra("json", "json", "me").dumps(1) == "1"


@pytest.mark.parametrize("make,module,extra", [
    (lambda: tfloop.MLflowMonitor(), "mlflow", "mlflow"),
    (lambda: tfloop.OptunaPruningCallback(None, "cost"), "optuna", "optuna"),
    (lambda: tfloop.WandbMonitor(), "wandb", "wandb"),
    (lambda: tfloop.RayReportCallback(), "ray.train", "ray"),
])
def test_a_missing_package_names_the_extra(monkeypatch, make, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # what `import module` sees when it is missing
    with pytest.raises(ImportError, match=rf"`pip install 'tfloop-train\[{extra}\]'`"):
        make()


def test_install_command_names_the_distribution_quoted_for_the_shell():
    assert install_command("hdf5") == "pip install 'tfloop-train[hdf5]'"
    assert install_command("cpu", upgrade=True) == "pip install -U 'tfloop-train[cpu]'"
