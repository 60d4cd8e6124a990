"""The package's shape: no import circle through any import statement, no oversize module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import PACKAGE

MAX_LINES = 600


def module_files(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, packages by their `__init__.py`."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(path: Path, module: str, is_package: bool) -> Iterator[tuple[str, str]]:
    """(module, name) of every import statement of `path`, wherever it stands (top level,
    inside a function, under TYPE_CHECKING), relative imports resolved; name is "" for
    `import module`."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, "") for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            yield from ((base, alias.name) for alias in node.names)


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports: the one each statement names, and the packages
    Python imports on the way to it (but not the importer's own packages, imported before
    it whatever it says)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        own_packages = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        is_package = path.name == "__init__.py"
        for base, attribute in imported_names(path, name, is_package):
            if not base.startswith(PACKAGE.name):
                continue
            # `from pkg import submodule` imports the submodule; `from pkg import name`, pkg.
            named = f"{base}.{attribute}" if f"{base}.{attribute}" in modules else base
            while named and named not in modules:
                named = named.rpartition(".")[0]
            parts = named.split(".")
            on_the_way = {".".join(parts[:i]) for i in range(1, len(parts))} - own_packages
            graph[name].update(({named} | on_the_way) - {name})
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    graph = import_graph(module_files())
    found = cycles(graph)
    shown = [
        " <-> ".join(c) + ": " + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
        for c in found
    ]
    assert not found, "import circles:\n" + "\n".join(shown)


def test_the_cycle_finder_sees_a_circle_hidden_in_a_function(tmp_path: Path) -> None:
    root = tmp_path / "retrieval_gate"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("from retrieval_gate.sub import low\n")
    (root / "sub" / "low.py").write_text("def f():\n    from retrieval_gate.sub import helper\n")
    (root / "sub" / "helper.py").write_text("")
    (root / "top.py").write_text("import retrieval_gate.sub.low\n")
    (root / "low2.py").write_text("def g():\n    from retrieval_gate import top\n")
    (root / "sub" / "x.py").write_text("from retrieval_gate import low2\n")
    modules = module_files(root)
    assert cycles(import_graph(modules)) == []
    (root / "sub" / "helper.py").write_text("def h():\n    from retrieval_gate.sub import low\n")
    assert cycles(import_graph(module_files(root))) == [
        ["retrieval_gate.sub.helper", "retrieval_gate.sub.low"]
    ]
    (root / "top.py").write_text("import retrieval_gate.sub.x\n")  # x -> low2 -> top -> x
    assert ["retrieval_gate.low2", "retrieval_gate.sub.x", "retrieval_gate.top"] in cycles(
        import_graph(module_files(root))
    )


@pytest.mark.parametrize("name", sorted(module_files()))
def test_no_module_is_over_600_lines(name: str) -> None:
    lines = module_files()[name].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it by job"
