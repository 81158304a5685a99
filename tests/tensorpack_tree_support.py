"""tensorpack 0.11's public surface, read from its package tree without importing it.

``scan(root)`` returns ``{module: [names]}`` for every public module of the tensorpack package at
``root``, found by walking the files (``pkgutil.iter_modules``, no import, so TensorFlow's version
does not matter). The rules, applied to each module's source with ``ast``:

- **Modules**: every module and package except test modules (``*_test``, ``unit_tests``) and
  private ones (``_old_batch_norm``).
- **A module with ``__all__``**: the strings written in it (``__all__ = [...]``, ``+= [...]``,
  ``.extend([...])``, ``.append("x")``, and ``.append(x)`` in a top-level ``for x in`` a list
  written in the module, as ``utils.logger`` adds the logging methods).
- **A module without ``__all__``**: the public names its top-level ``def``, ``class`` and
  assignments bind, also inside top-level ``if`` blocks (not ``if __name__ == "__main__"``);
  ``try`` blocks hold import-time probing (``libinfo``): only an ``__all__`` written there counts
  (the last one: ``dataflow.remote`` sets it in the ``else`` of ``try: import zmq``).
- **A package** (``__init__.py``) adds what it re-exports: the names of each submodule it
  star-imports, written (``from .base import *``) or in its import loop (every submodule not in
  its ``_SKIP`` list when it loops over ``iter_modules``, those in ``_TO_IMPORT``, or
  ``_global_import('utils')``), and the names it imports from its own modules
  (``from .tower import TowerContext``, ``from . import imgaug``); a package without ``__all__``
  adds its own definitions too.
- Names starting with ``_`` are private; ``STATICA_HACK`` is tensorpack's import-time flag for
  IDEs, not an API.

Run as a script to rewrite ``tests/compat/tensorpack_tree.json`` from the installed tensorpack::

    python tests/tensorpack_tree_support.py
"""
import ast
import importlib.util
import json
import os
import pkgutil
import sys

TREE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat",
                         "tensorpack_tree.json")
NOT_API = {"STATICA_HACK"}


def installed_root():
    """The installed tensorpack package's directory (found without importing it), or None."""
    spec = importlib.util.find_spec("tensorpack")
    return os.path.dirname(spec.origin) if spec and spec.origin else None


def _public_module(name):
    return not (name.endswith("_test") or name == "unit_tests" or name.startswith("_"))


def modules(root):
    """Every public module under ``root``: {dotted name: source file}."""
    found = {"tensorpack": os.path.join(root, "__init__.py")}

    def walk(path, prefix):
        for info in pkgutil.iter_modules([path]):
            if not _public_module(info.name):
                continue
            sub = os.path.join(path, info.name)
            found[prefix + info.name] = os.path.join(sub, "__init__.py") if info.ispkg \
                else sub + ".py"
            if info.ispkg:
                walk(sub, prefix + info.name + ".")

    walk(root, "tensorpack.")
    return found


def _strings(node):
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    if isinstance(node, ast.Call) and node.args and not node.keywords:  # frozenset([...])
        return _strings(node.args[0])
    return None


def _is_main_guard(node):
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def _is_all(node):
    return isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]


def _statements(body):
    """Top-level statements, with the bodies of top-level ``if`` blocks and the ``__all__``
    assignments of top-level ``try`` blocks."""
    for node in body:
        if isinstance(node, ast.If) and not _is_main_guard(node):
            yield from _statements(node.body)
            yield from _statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in [node.body, *(h.body for h in node.handlers), node.orelse]:
                yield from (n for n in block if _is_all(n))
        elif not isinstance(node, ast.If):
            yield node


def _all_calls(node, literals):
    """Strings a top-level statement adds to ``__all__`` by ``+=``, extend, append or a loop."""
    if isinstance(node, ast.AugAssign) and ast.unparse(node.target) == "__all__":
        return _strings(node.value) or []
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        func = ast.unparse(call.func)
        if func == "__all__.extend":
            return _strings(call.args[0]) or []
        if func == "__all__.append" and isinstance(call.args[0], ast.Constant):
            return [call.args[0].value]
    if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and any(
            ast.unparse(s) == f"__all__.append({node.target.id})" for s in node.body):
        return _strings(node.iter) or literals.get(ast.unparse(node.iter), [])
    return []


class _Module:
    def __init__(self, name, path):
        self.name, self.is_package = name, path.endswith("__init__.py")
        with open(path, encoding="utf-8") as f:
            self.tree = ast.parse(f.read())
        self.all, self.defined, self.imported, self.star = None, [], [], []
        self.literals = {}
        for node in _statements(self.tree.body):
            self._read(node)

    def _read(self, node):
        if isinstance(node, ast.Assign):
            self._assign(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.defined.append(node.name)
        elif isinstance(node, ast.ImportFrom):
            self._import_from(node)
        if self.all is not None:
            self.all += _all_calls(node, self.literals)

    def _assign(self, node):
        for target in node.targets:
            if ast.unparse(target) == "__all__":
                self.all = _strings(node.value) or []
                continue
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            for n in names:
                if isinstance(n, ast.Name):
                    self.defined.append(n.id)
                    if _strings(node.value) is not None:
                        self.literals[n.id] = _strings(node.value)

    def _import_from(self, node):
        if node.level:
            base = self.name.split(".")[:None if self.is_package else -1]
            base = base[:len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module
        if not source.startswith("tensorpack"):
            return
        for alias in node.names:
            if alias.name == "*":
                self.star.append(source)
            elif self.is_package and (source + ".").startswith(self.name + "."):
                self.imported.append(alias.asname or alias.name)

    def loop_imports(self, submodules):
        """The submodules the package's ``__init__`` star-imports in a loop."""
        source = ast.unparse(self.tree)
        found = []
        if "iter_modules(" in source:
            skip = {n for k, v in self.literals.items() if "SKIP" in k for n in v}
            found += [m for m in submodules if m not in skip]
        found += self.literals.get("_TO_IMPORT", [])
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                    "_global_import", "global_import") and isinstance(node.args[0], ast.Constant):
                found.append(node.args[0].value)
        return [f"{self.name}.{m}" for m in found]


def scan(root):
    """{tensorpack module: sorted public names} for the package at ``root``."""
    paths = modules(root)
    parsed = {name: _Module(name, path) for name, path in paths.items()}
    result = {}

    def names(name):
        if name not in result:
            result[name] = []  # a cycle of star imports adds nothing more
            result[name] = sorted(_names(parsed[name], paths, names))
        return result[name]

    for name in paths:
        names(name)
    return dict(sorted(result.items()))


def _names(module, paths, names):
    if not module.is_package:
        found = set(module.all if module.all is not None else module.defined)
    else:
        subs = [p.rsplit(".", 1)[1] for p, f in paths.items()
                if p.rsplit(".", 1)[0] == module.name and not f.endswith("__init__.py")]
        found = set(module.all or []) | set(module.imported)
        for source in module.star + module.loop_imports(subs):
            if source in paths:
                found |= set(names(source))
        if module.all is None:
            found |= set(module.defined)
    return {n for n in found if not n.startswith("_") and n not in NOT_API}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else installed_root()
    if root is None:
        sys.exit("tensorpack is not installed: pip install tensorpack==0.11, or pass its path")
    write(scan(root))


def write(tree):
    """Write ``tree`` to ``TREE_FILE``, one module a line."""
    rows = [f"{json.dumps(module)}: {json.dumps(names)}" for module, names in tree.items()]
    with open(TREE_FILE, "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(rows) + "\n}\n")


def read():
    """The checked-in ``{tensorpack module: [names]}``."""
    with open(TREE_FILE, encoding="utf-8") as f:
        return json.load(f)


if __name__ == "__main__":
    main()
