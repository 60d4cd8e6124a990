"""The package's shape (no import circle, no oversize module) and the tests' (named as it is)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import PACKAGE, REPO

MAX_LINES = 600
TESTS = REPO / "tests"
CROSS_CUTTING = (
    # Tests of the whole tool: the shipped configs and docs, other tools' values, safety.
    "examples/",
    "oracles/",
    "safety/",
    # The package's shape, its wheel, its public names.
    "test_architecture.py",
    "test_packaging.py",
    "test_public_api.py",
    # Every benchmark script's --help: benchmarks/ is no module of the package.
    "test_benchmarks.py",
    # action.yml's run steps, which no module of the package holds.
    "integrations/test_action.py",
    "integrations/test_action_history.py",
    "integrations/test_action_judge.py",
    "integrations/test_action_ratchet.py",
)
"""Test files (paths under tests/; a folder ending in / holds only such files) that test no
one module, so need not be named after one."""


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


def module_tested_by(test: Path, tests: Path = TESTS, package: Path = PACKAGE) -> str | None:
    """The module `tests/<path>/test_<name>[_<aspect>].py` is named after: retrieval_gate's
    `<path>/<name>.py`, or the package `<path>/<name>/` (the longest name that fits)."""
    folder = test.parent.relative_to(tests).parts
    stem = test.stem.removeprefix("test_")
    named = []
    for module in module_files(package):
        *where, name = module.split(".")
        if tuple(where[1:]) == folder and (stem == name or stem.startswith(f"{name}_")):
            named.append(module)
    return max(named, key=len, default=None)


def misnamed_tests(tests: Path = TESTS, package: Path = PACKAGE) -> list[str]:
    """Test files named after no module of the package and not listed as cross-cutting."""
    found = []
    for test in sorted(tests.rglob("test_*.py")):
        relative = test.relative_to(tests).as_posix()
        if relative.startswith(CROSS_CUTTING):
            continue
        if module_tested_by(test, tests, package) is None:
            found.append(relative)
    return found


def climbs_from_its_file(source: str) -> list[int]:
    """Lines of `source` that find a folder by climbing from `__file__`: `.parents[N]`,
    `.parent.parent`, `dirname(dirname(...))` or `/ ".."`, which moving the file breaks."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "parents":
            below: ast.AST = node.value
        elif isinstance(node, ast.Attribute) and node.attr == "parent":
            if not (isinstance(node.value, ast.Attribute) and node.value.attr == "parent"):
                continue
            below = node.value
        elif isinstance(node, ast.Call) and _called(node) == "dirname":
            if not any(isinstance(a, ast.Call) and _called(a) == "dirname" for a in node.args):
                continue
            below = node
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if not (isinstance(node.right, ast.Constant) and node.right.value == ".."):
                continue
            below = node.left
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(below)):
            lines.append(node.lineno)
    return sorted(set(lines))


def _called(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def test_every_test_file_is_named_after_the_module_it_tests() -> None:
    found = misnamed_tests()
    assert not found, (
        "name these tests/<path>/test_<module>[_<aspect>].py after the module of "
        "retrieval_gate/<path>/ they test (or list a test of the whole tool in CROSS_CUTTING): "
        + ", ".join(found)
    )


def test_the_name_check_sees_a_test_named_after_no_module(tmp_path: Path) -> None:
    package, tests = tmp_path / "retrieval_gate", tmp_path / "tests"
    for path in ("__init__.py", "sub/__init__.py", "sub/low.py", "sub/deep/__init__.py"):
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text("")
    named = ["sub/test_low.py", "sub/test_low_edges.py", "sub/test_deep.py", "test_sub.py"]
    wrong = ["sub/test_lower.py", "test_low.py", "sub/deep/test_low.py", "safety2/test_x.py"]
    for path in [*named, *wrong, "examples/test_anything.py", "sub/helpers.py"]:
        (tests / path).parent.mkdir(parents=True, exist_ok=True)
        (tests / path).write_text("")
    assert (
        module_tested_by(tests / "sub/test_low_edges.py", tests, package)
        == "retrieval_gate.sub.low"
    )
    assert module_tested_by(tests / "test_sub.py", tests, package) == "retrieval_gate.sub"
    assert misnamed_tests(tests, package) == sorted(wrong)


def test_no_test_file_finds_the_repository_from_its_own_depth() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != TESTS / "helpers" / "paths.py"
        for line in climbs_from_its_file(path.read_text(encoding="utf-8"))
    ]
    assert not found, "import REPO, CONFIGS, DOCS... from tests/helpers/paths.py: " + ", ".join(
        found
    )


@pytest.mark.parametrize(
    "line",
    [
        "ROOT = Path(__file__).resolve().parents[2]",
        "ROOT = pathlib.Path(__file__).parent.parent",
        "ROOT = Path(__file__).resolve().parent.parent.parent / 'configs'",
        "ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))",
        "DATA = Path(__file__).parent / '..' / 'shared'",
    ],
)
def test_the_depth_check_sees_each_way_of_climbing(line: str) -> None:
    assert climbs_from_its_file(f"x = 1\n{line}\n") == [2]


def test_the_depth_check_leaves_a_file_beside_it_and_code_in_strings_alone() -> None:
    source = (
        'HERE = Path(__file__).with_name("runs.txt")\n'
        "DATA = Path(__file__).parent / 'data'\n"
        "UP = copy.parents[1]\n"
        'CODE = "ROOT = Path(__file__).parents[2]"\n'
    )
    assert climbs_from_its_file(source) == []


def test_every_test_folder_is_a_package() -> None:
    """Package-style test modules: without __init__.py two test_files.py would collide."""
    folders = {path.parent for path in TESTS.rglob("*.py")}
    missing = sorted(str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").exists())
    assert not missing, f"add an __init__.py to {missing}"
