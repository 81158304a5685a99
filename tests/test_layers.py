"""The layer rule of docs/design.md, checked on every import statement in tfloop/.

Each module belongs to the layer of the longest entry of ``LAYERS`` that names it or a package
holding it. A module may import its own layer and the layers listed before it, except that the
two packages of a pair in ``BESIDE`` (``predict`` and ``train``) never import each other.
TensorFlow (``tfloop.compat``, ``tensorflow``, ``keras``) sits above ``utils`` and ``dataflow``:
they may load it only inside a function that needs it, so importing them never loads TensorFlow.
"""
import ast
import os
import re

import pytest

import tfloop

PACKAGE_DIR = os.path.dirname(tfloop.__file__)

# Lowest first; must agree with the diagram in docs/design.md.
LAYERS = [
    ("tfloop.version",),
    ("tfloop.utils",),
    ("tfloop.dataflow",),
    ("tfloop.compat",),
    ("tfloop.tfutils",),
    ("tfloop.callbacks.base", "tfloop.callbacks.lifecycle", "tfloop.callbacks.run_args",
     "tfloop.callbacks.sendstat", "tfloop.callbacks.trainer_view", "tfloop.callbacks.schedule"),
    ("tfloop.input",),
    ("tfloop.model_desc",),
    ("tfloop.graph_builder",),
    ("tfloop.models",),
    ("tfloop.monitors",),
    ("tfloop.callbacks",),
    ("tfloop.resume",),
    ("tfloop.predict", "tfloop.train"),
    ("tfloop.contrib",),
    ("tfloop.cli",),
    ("tfloop.__main__",),
    ("tfloop.tensorpack_paths",),
    ("tfloop",),
]
BESIDE = {frozenset(("tfloop.predict", "tfloop.train"))}
TENSORFLOW = ("tensorflow", "keras")
# Below TensorFlow: these import it (through tfloop.compat) only inside functions.
TF_FREE = ("tfloop.utils", "tfloop.dataflow")


def _module_name(path):
    rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))[:-len(".py")]
    parts = rel.split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _tfloop_modules():
    for root, _, files in os.walk(PACKAGE_DIR):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                yield _module_name(path), path


MODULES = dict(_tfloop_modules())


def _within(module, package):
    return module == package or module.startswith(package + ".")


def layer_of(module):
    """``(rank, entry)`` of the longest LAYERS entry holding ``module``."""
    best = None
    for rank, row in enumerate(LAYERS):
        for entry in row:
            if _within(module, entry) and (best is None or len(entry) > len(best[1])):
                best = (rank, entry)
    return best


def imports_of(path):
    """``(imported module, line, inside a function)`` for each import statement of a file."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                assert child.level == 0, f"{path}:{child.lineno}: relative import"
                for alias in child.names:
                    submodule = f"{child.module}.{alias.name}"
                    target = submodule if submodule in MODULES else child.module
                    found.append((target, child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return found


def violations(module, path):
    """One message per import of ``module`` that breaks the layer rule."""
    rank, entry = layer_of(module)
    tf_free = any(_within(module, package) for package in TF_FREE)
    messages = []
    for target, line, in_function in imports_of(path):
        where = f"{module} ({os.path.relpath(path, PACKAGE_DIR)}:{line}) imports {target}"
        if target.split(".")[0] in TENSORFLOW or target == "tfloop.compat":
            if tf_free and not (in_function and target == "tfloop.compat"):
                messages.append(f"{where}: {entry} never imports TensorFlow at module level, "
                                "and inside a function only through tfloop.compat")
            continue
        if not _within(target, "tfloop"):
            continue
        target_rank, target_entry = layer_of(target)
        if target_rank > rank:
            messages.append(f"{where}: {entry} sits below {target_entry} in the layer order "
                            "(docs/design.md) and must not import it")
        elif frozenset((entry, target_entry)) in BESIDE:
            messages.append(f"{where}: {entry} and {target_entry} sit beside each other in "
                            "the layer order (docs/design.md) and never import each other")
    return messages


def _diagram():
    """The layer diagram of docs/design.md: the first ``text`` block after ``## Layers``."""
    path = os.path.join(os.path.dirname(PACKAGE_DIR), "docs", "design.md")
    text = open(path, encoding="utf-8").read()
    layers = text[text.index("## Layers"):]
    start = layers.index("```text") + len("```text")
    return layers[start:layers.index("```", start)]


def _diagram_name(entry):
    if entry == "tfloop":
        return "tfloop/__init__.py"
    rel = entry[len("tfloop."):].replace(".", "/")
    return rel + "/" if os.path.isdir(os.path.join(PACKAGE_DIR, rel)) else rel + ".py"


def test_design_md_draws_the_layers_in_this_order():
    drawn = []  # the names in the diagram's first column, top to bottom
    for line in _diagram().strip().splitlines():
        first_column = re.split(r"\s{2,}", line.strip())[0]
        drawn.extend(name for name in re.split(r",\s*| \| ", first_column) if name)
    ranks = []
    for rank, row in enumerate(LAYERS):
        for entry in row:
            name = _diagram_name(entry)
            assert name in drawn, f"docs/design.md's layer diagram does not show {name}"
            ranks.append((drawn.index(name), rank, name))
    assert [rank for _, rank, _ in sorted(ranks)] == sorted(rank for _, rank, _ in ranks), \
        f"docs/design.md draws the layers in another order than LAYERS: {sorted(ranks)}"


def test_every_module_has_a_layer():
    assert {name: layer_of(name) for name in MODULES if layer_of(name) is None} == {}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_follow_the_layer_order(module):
    assert violations(module, MODULES[module]) == []


@pytest.mark.parametrize("module,source,rule", [
    ("tfloop.callbacks.fake", "from tfloop.train.base import Trainer\n", "sits below tfloop.train"),
    ("tfloop.predict.fake", "def f():\n    import tfloop.train\n", "beside each other"),
    ("tfloop.train.fake", "from tfloop.predict import offline\n", "beside each other"),
    ("tfloop.dataflow.fake", "from tfloop.compat import tf\n", "never imports TensorFlow"),
    ("tfloop.utils.fake", "def f():\n    import tensorflow\n", "never imports TensorFlow"),
    ("tfloop.input.fake", "from tfloop.monitors import base\n", "sits below tfloop.monitors"),
])
def test_a_violation_names_both_modules_and_the_rule(tmp_path, module, source, rule):
    path = tmp_path / "fake.py"
    path.write_text(source)
    (message,) = violations(module, str(path))
    assert message.startswith(f"{module} (")
    assert rule in message


def test_lazy_tensorflow_in_dataflow_is_allowed(tmp_path):
    path = tmp_path / "fake.py"
    path.write_text("def save():\n    from tfloop.compat import tf\n")
    assert violations("tfloop.dataflow.fake", str(path)) == []
