"""The house rules that a module's text shows (docs/design.md, STYLE.md): no module over 400
lines, no function over 60, no import of another module's private name, and a short main
loop."""
import ast
import inspect

import pytest
from test_layers import MODULES

import tfloop.train.base

MAX_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_MAIN_LOOP_LINES = 25

# Private names that another module imports, each with why it cannot be made public now.
PRIVATE_IMPORTS_ALLOWED = {
    # ZMQInput's feeder is a QueueInput feeder. The class name is the key of the feeder's resume
    # state in every checkpoint of a Python-input run (``_QueueFeeder#0``): renaming it would make
    # those runs resume their data from the beginning.
    ("tfloop.input.zmq_input", "tfloop.input.queue", "_QueueFeeder"),
}


def private_imports(module, path):
    """``(importing module, imported module, name, line)`` for each ``from tfloop.x import _y``
    where ``_y`` is not a module (a private module may be imported; a private name may not)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tfloop"):
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not name.startswith("__") and \
                        f"{node.module}.{name}" not in MODULES:
                    found.append((module, node.module, name, node.lineno))
    return found


def line_count(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_400_lines(module):
    lines = line_count(MODULES[module])
    assert lines <= MAX_LINES, (
        f"{module} has {lines} lines (at most {MAX_LINES}): a module that long usually holds two "
        "concerns; split it where they meet.")


def function_lengths(path):
    """``(qualified name, first line, lines)`` of every function and method of a file, nested
    ones too: from its ``def`` line to its last line, its docstring not counted."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = child.end_lineno - child.lineno + 1
                doc = child.body[0]
                if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and \
                        isinstance(doc.value.value, str):
                    lines -= doc.end_lineno - doc.lineno + 1
                found.append((prefix + child.name, child.lineno, lines))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(open(path, encoding="utf-8").read(), path), "")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_function_is_over_60_lines(module):
    long = [(name, line, lines) for name, line, lines in function_lengths(MODULES[module])
            if lines > MAX_FUNCTION_LINES]
    assert long == [], (
        f"{module}: functions over {MAX_FUNCTION_LINES} lines (name, line, lines without the "
        f"docstring): {long}. Split each where its steps change concept.")


def test_a_functions_lines_count_its_signature_and_body_but_not_its_docstring(tmp_path):
    path = tmp_path / "fake.py"
    path.write_text('class A:\n    def f(self,\n          x):\n        """Doc\n\n        more."""\n'
                    '        def g():\n            return x\n        return g\n\n\n'
                    '@decorated\nasync def h():\n    pass\n')
    assert function_lengths(str(path)) == [("A.f", 2, 5), ("A.f.g", 7, 2), ("h", 13, 2)]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_another_modules_private_name(module):
    found = [(importer, imported, name, line)
             for importer, imported, name, line in private_imports(module, MODULES[module])
             if (importer, imported, name) not in PRIVATE_IMPORTS_ALLOWED]
    assert found == [], (
        f"{module} imports private names of other modules: {found}. Make the name public in a "
        "module where it belongs, or move the code that uses it there.")


def test_the_allowed_private_imports_still_exist():
    everything = {(i, m, n) for module, path in MODULES.items()
                  for i, m, n, _ in private_imports(module, path)}
    assert PRIVATE_IMPORTS_ALLOWED <= everything


def test_a_private_import_is_found_and_a_private_module_is_not(tmp_path):
    path = tmp_path / "fake.py"
    path.write_text("from tfloop.train.multigpu import _Hidden, DataParallelTrainer\n"
                    "from tfloop.dataflow import _workers\n"
                    "from tfloop.version import __version__\n")
    assert private_imports("tfloop.fake", str(path)) == [
        ("tfloop.fake", "tfloop.train.multigpu", "_Hidden", 1)]


def test_the_main_loop_is_short():
    lines, _ = inspect.getsourcelines(tfloop.train.base.Trainer.main_loop)
    assert len(lines) <= MAX_MAIN_LOOP_LINES, \
        f"Trainer.main_loop has {len(lines)} lines (at most {MAX_MAIN_LOOP_LINES})."
