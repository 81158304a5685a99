"""tensorpack's paths without a module of their own (tfloop/tensorpack_paths.py): every import
form a tensorpack script uses works as for a file, ``import tfloop`` stays lazy, the table is
true, and it is the one place: no other module of tfloop is only imports, and library code never
imports through a path of the table."""
import ast
import importlib
import inspect
import json
import os
import pickle
import subprocess
import sys

import pytest
from support import scaled_timeout
from test_layers import MODULES, PACKAGE_DIR

from tfloop.tensorpack_paths import EVERY_NAME, PATHS

TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat", "tensorpack_tree.json")


def only_imports(path):
    """Whether a module holds nothing but a docstring, imports and ``__all__``."""
    body = ast.parse(open(path, encoding="utf-8").read(), path).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]

    def is_import_or_all(node):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        return bool(targets) and all(ast.unparse(t) == "__all__" for t in targets)

    return all(is_import_or_all(node) for node in body)


def imports_of_paths(path):
    """``(line, imported name)`` of each import statement of a file that names a path of the
    table, or a module below one (a package's ``__init__``)."""
    def is_path(name):
        return any(name == p or name.startswith(p + ".") for p in PATHS)

    found = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if is_path(node.module) else \
                [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names if is_path(name)]
    return sorted(found)


def test_no_module_of_tfloop_is_only_imports_but_package_inits():
    # A package's __init__ gathers its public names (``from tfloop.callbacks import ...``); any
    # other module made only of imports is a path that belongs in tensorpack_paths.PATHS.
    found = [module for module, path in MODULES.items()
             if not path.endswith("__init__.py") and only_imports(path)]
    assert found == [], f"{found} only import names: make them rows of tensorpack_paths.PATHS"


def test_only_imports_tells_a_module_of_imports_from_one_with_code(tmp_path):
    imports = tmp_path / "imports.py"
    imports.write_text('"""Doc."""\nfrom a import b\nimport c\n__all__ = ["b"]\n__all__ += []\n')
    code = tmp_path / "code.py"
    code.write_text('from a import b\n__all__ = ["B"]\nB = b\n')
    assert only_imports(str(imports)) and not only_imports(str(code))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_library_code_never_imports_a_tensorpack_path(module):
    assert imports_of_paths(MODULES[module]) == [], \
        f"{module} imports tensorpack's paths: import the modules that define the names"


def test_an_import_through_a_path_is_found(tmp_path):
    path = tmp_path / "fake.py"
    path.write_text("from tfloop.callbacks.saver import ModelSaver\n"
                    "from tfloop.callbacks import saver, model_saver\n"
                    "def f():\n    import tfloop.input_source.input_source\n"
                    "from tfloop.callbacks.model_saver import ModelSaver\n")
    assert imports_of_paths(str(path)) == [
        (1, "tfloop.callbacks.saver"), (2, "tfloop.callbacks.saver"),
        (4, "tfloop.input_source.input_source")]


def test_every_row_is_a_tensorpack_module_that_tfloop_has_no_file_for():
    with open(TREE, encoding="utf-8") as f:
        tensorpack = json.load(f)
    for path in PATHS:
        assert "tensorpack" + path[len("tfloop"):] in tensorpack, f"{path} is not tensorpack's"
        file = os.path.join(os.path.dirname(PACKAGE_DIR), *path.split("."))
        assert not os.path.exists(file + ".py") and not os.path.isdir(file), \
            f"{path} is a file of tfloop and a row of PATHS"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_row_binds_its_names_from_the_modules_that_define_them(path):
    module = importlib.import_module(path)
    row = PATHS[path]
    expected = []
    for source, names in row.names.items():
        assert source in MODULES, f"{path} takes names from {source}, which is no file of tfloop"
        real = importlib.import_module(source)
        names = real.__all__ if list(names) == [EVERY_NAME] else names
        assert all(getattr(module, name) is getattr(real, name) for name in names)
        expected += names
    expected += list(row.aliases)
    assert module.__all__ == (expected if row.star else [])
    namespace = {}
    exec(f"from {path} import *", namespace)  # noqa: S102
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(module.__all__)
    assert module.__spec__.origin == inspect.getfile(sys.modules["tfloop.tensorpack_paths"])


def test_import_forms_of_a_tensorpack_script():
    import tfloop.callbacks.saver
    import tfloop.graph_builder.model_desc as model_desc
    from tfloop.callbacks.saver import ModelSaver
    from tfloop.input_source import QueueInput, TFDatasetInput
    assert ModelSaver is tfloop.ModelSaver is tfloop.callbacks.saver.ModelSaver
    assert ModelSaver.__module__ == "tfloop.callbacks.model_saver"
    assert model_desc.ModelDesc is tfloop.ModelDesc and model_desc.__all__ == []
    assert QueueInput is tfloop.QueueInput and TFDatasetInput is tfloop.DatasetInput
    trainers = importlib.import_module("tfloop.train.trainers")
    assert importlib.reload(trainers) is trainers and trainers.SimpleTrainer is tfloop.SimpleTrainer
    assert pickle.loads(pickle.dumps(trainers.SimpleTrainer)) is tfloop.SimpleTrainer
    serialize = importlib.import_module("tfloop.utils.compatible_serialize")
    assert serialize.loads(serialize.dumps({"a": [1, 2]})) == {"a": [1, 2]}
    assert pickle.loads(pickle.dumps(serialize.loads)) is serialize.loads


def test_a_real_package_keeps_its_own_loader_and_its_own_missing_names():
    import tfloop.callbacks
    assert tfloop.callbacks.__spec__.origin == os.path.join(PACKAGE_DIR, "callbacks", "__init__.py")
    assert "ModelSaver" in inspect.getsource(tfloop.callbacks)
    with pytest.raises(AttributeError, match="module 'tfloop.callbacks' has no attribute 'savers'"):
        tfloop.callbacks.savers  # noqa: B018
    with pytest.raises(ModuleNotFoundError, match="tfloop.callbacks.savers"):
        importlib.import_module("tfloop.callbacks.savers")


# In a new interpreter: what `import tfloop` loads, and each path as an attribute of its package
# before anything imported it, as after tensorpack's `import tensorpack.callbacks`.
FRESH = """
import importlib, sys
import tfloop
print(sorted(m for m in sys.modules if m.startswith("tfloop")), "tensorflow" in sys.modules)
import tfloop.libinfo, tfloop.utils.compatible_serialize
print(tfloop.libinfo.__version__ == tfloop.__version__, "tensorflow" in sys.modules)
for path in sorted(tfloop.tensorpack_paths.PATHS):
    package, _, name = path.rpartition(".")
    if path not in sys.modules:
        assert getattr(importlib.import_module(package), name) is sys.modules[path], path
print("attributes ok")
"""


@pytest.mark.slow
def test_import_tfloop_stays_lazy_and_paths_are_attributes_of_their_packages():
    out = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                         timeout=scaled_timeout(60), cwd=os.path.dirname(PACKAGE_DIR))
    assert out.stdout.splitlines() == [
        "['tfloop', 'tfloop.tensorpack_paths', 'tfloop.version'] False", "True False",
        "attributes ok"], out.stdout + out.stderr
