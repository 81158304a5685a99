"""Every public module and name of tensorpack 0.11's ``tensorpack.dataflow`` tree exists at the
same path under ``tfloop.dataflow``.

tensorpack is read, not imported (it does not import on today's TensorFlow): its modules are
found with pkgutil and their names taken from the source with ast — a module's literal
``__all__``, else its public top-level functions, classes and assignments. A package's names are
those of its modules and subpackages (tensorpack's ``__init__`` files import them all). Test
modules (``*_test``, ``unit_tests``) are not part of the surface.
"""
import ast
import importlib
import importlib.util
import os
import pkgutil

import pytest

# Modules another change brings to tfloop; their names are left out of the packages too.
PENDING = {"dataflow.remote"}


def _is_test(name):
    return name.endswith("_test") or name == "unit_tests"


def module_names(path):
    """The public names of the module at ``path``: its literal ``__all__``, else its public
    top-level definitions."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:
                break  # built at run time: fall back to the definitions
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def package_surface(directory, name, pending=frozenset()):
    """``{module path: [public names]}`` of the package ``name`` in ``directory`` and all its
    modules, without importing them."""
    surface, names = {}, []
    for _, sub, is_package in pkgutil.iter_modules([directory]):
        full = f"{name}.{sub}"
        if sub.startswith("_") or _is_test(sub) or full in pending:
            continue
        if is_package:
            surface.update(package_surface(os.path.join(directory, sub), full, pending))
            names.append(sub)
        else:
            surface[full] = module_names(os.path.join(directory, sub + ".py"))
            names += surface[full]
    surface[name] = names
    return surface


def missing_from(surface, prefix):
    """``{module path: [names missing under prefix]}``; a missing module misses all its names."""
    missing = {}
    for module, names in sorted(surface.items()):
        try:
            mod = importlib.import_module(f"{prefix}.{module}")
        except ImportError:
            missing[module] = ["<module>"] + names
            continue
        absent = [n for n in names if not hasattr(mod, n)]
        if absent:
            missing[module] = absent
    return missing


def tensorpack_dir():
    spec = importlib.util.find_spec("tensorpack")  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("tensorpack is not installed (pip install 'tfloop[test]')")
    return list(spec.submodule_search_locations)[0]


def test_every_public_name_of_tensorpack_dataflow_is_in_tfloop():
    surface = package_surface(os.path.join(tensorpack_dir(), "dataflow"), "dataflow", PENDING)
    assert len(surface) >= 30 and sum(map(len, surface.values())) >= 200  # the walk saw the tree
    assert missing_from(surface, "tfloop") == {}


def test_the_walk_reports_missing_modules_and_names(tmp_path):
    package = tmp_path / "dataflow"
    (package / "imgaug").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "imgaug" / "__init__.py").write_text("")
    (package / "common.py").write_text("__all__ = ['BatchData', 'NoSuchFlow']\n")
    (package / "imgaug" / "fancy.py").write_text("import os\n\nclass Swirl:\n    pass\n\n"
                                                 "def _private():\n    pass\n")
    (package / "common_test.py").write_text("class NotSurface:\n    pass\n")
    surface = package_surface(str(package), "dataflow")
    assert surface == {"dataflow.common": ["BatchData", "NoSuchFlow"],
                       "dataflow.imgaug.fancy": ["Swirl"], "dataflow.imgaug": ["Swirl"],
                       "dataflow": ["BatchData", "NoSuchFlow", "imgaug"]}
    assert missing_from(surface, "tfloop") == {
        "dataflow": ["NoSuchFlow"], "dataflow.common": ["NoSuchFlow"],
        "dataflow.imgaug": ["Swirl"], "dataflow.imgaug.fancy": ["<module>", "Swirl"]}
