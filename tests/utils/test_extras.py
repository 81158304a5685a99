"""import_extra: a missing integration package is an ImportError naming the extra to install."""
import sys

import pytest

import tfloop
from tfloop.utils.extras import import_extra


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
    with pytest.raises(ImportError, match=rf"`pip install tfloop\[{extra}\]`"):
        make()
