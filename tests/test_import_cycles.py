"""No import cycle among tfloop's modules, counting every import statement: at module level,
inside functions and under ``if TYPE_CHECKING:`` (the statements ``test_layers.imports_of``
finds). A cycle is reported with the modules it goes through."""
from test_layers import MODULES, imports_of


def import_graph():
    """``{module: {tfloop modules it imports}}`` for every module of tfloop."""
    graph = {}
    for module, path in MODULES.items():
        graph[module] = {target for target, _, _ in imports_of(path)
                         if target in MODULES and target != module}
    return graph


def cycles(graph):
    """Each cycle of ``graph`` once, as the list of its modules in import order, the first again
    at the end (``[a, b, a]``: a imports b, b imports a)."""
    found, done = [], set()

    def visit(node, path, on_path):
        for target in sorted(graph.get(node, ())):
            if target in on_path:
                cycle = path[path.index(target):] + [target]
                if frozenset(cycle) not in {frozenset(c) for c in found}:
                    found.append(cycle)
            elif target not in done:
                visit(target, path + [target], on_path | {target})
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start], {start})
    return found


def test_cycles_are_found_and_reported_in_import_order():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_tfloop_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (each import counts, also inside functions and under " \
        "TYPE_CHECKING):\n" + "\n".join(" -> ".join(cycle) for cycle in found)
