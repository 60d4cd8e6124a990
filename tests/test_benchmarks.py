"""Every benchmark script still runs: its --help, as a person runs it from the repository root."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import BENCHMARKS, REPO

MODULES = sorted(path for path in BENCHMARKS.glob("*/*.py") if path.name != "__init__.py")
SCRIPTS = [path for path in MODULES if '__name__ == "__main__"' in path.read_text("utf-8")]
"""The modules a person runs; the others (benchmarks/common/, mutation's mutants) are imported."""
STANDARD_LINE = "sys.path.insert(0, str(Path(__file__).resolve().parents[2]))"


def short(path: Path) -> str:
    return path.relative_to(BENCHMARKS).as_posix()


def test_the_scripts_are_found() -> None:
    assert len(SCRIPTS) > len(MODULES) / 2


@pytest.mark.parametrize("script", SCRIPTS, ids=short)
def test_every_script_prints_its_usage(script: Path) -> None:
    # One interpreter per test: the workers share the scripts out, none runs them all.
    command = [sys.executable, str(script.relative_to(REPO)), "--help"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: {script.name}"), done.stdout[:300]


def imported(path: Path) -> set[str]:
    """The absolute names of every module `path` imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", MODULES, ids=short)
def test_benchmark_code_is_imported_by_its_full_name_after_the_standard_line(
    module: Path,
) -> None:
    names = imported(module)
    # A bare `import bench_metrics` works only when the importer runs from the same folder.
    stems = {path.stem for path in MODULES}
    assert sorted(name for name in names if name.split(".")[0] in stems) == []
    if any(name.split(".")[0] in ("benchmarks", "tests") for name in names):
        assert STANDARD_LINE in module.read_text("utf-8")


# --- mutation.py: which tests each module's mutants run against ---------------------------

MUTATED = ("gate", "stats", "history", "judging")
"""The packages whose every module `mutation.py --modules gate,stats,history,judging` covers."""


def test_every_module_the_mutation_tool_covers_has_tests_and_every_named_test_exists() -> None:
    from benchmarks.tools import mutation

    units = mutation.units(MUTATED, REPO)
    assert "gate/decide.py" in units
    assert "stats/ppi.py" in units
    assert all(len(files) == 1 for files in units.values())
    untested = [unit for unit in units if not mutation.tests_of(unit, {}, REPO)]
    assert untested == [], "name their tests after them, or list them in EXTRA_TESTS"
    named = [path for paths in mutation.EXTRA_TESTS.values() for path in paths]
    assert [path for path in named if not (REPO / path).is_file()] == []
    modules = [f"{module}.py" for module in mutation.EXTRA_TESTS]
    package = REPO / "retrieval_gate"
    assert [module for module in modules if not (package / module).is_file()] == []


def test_every_equivalent_mutant_is_one_whole_entry_of_an_existing_module() -> None:
    # Two entries run together (a merge that lost a "),\n(") would match no mutant.
    from benchmarks.tools.mutation_equivalents import EQUIVALENTS

    assert [entry[:2] for entry in EQUIVALENTS if len(entry) != 6] == []
    assert all(isinstance(part, str) and part for entry in EQUIVALENTS for part in entry)
    keys = [entry[:5] for entry in EQUIVALENTS]
    assert len(keys) == len(set(keys)), "an equivalent is listed twice"
    package = REPO / "retrieval_gate"
    assert [e[0] for e in EQUIVALENTS if not (package / e[0]).is_file()] == []


def test_the_mutation_tool_finds_a_module_s_tests_by_the_package_s_naming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.tools import mutation

    for path in ("sub/__init__.py", "sub/low.py", "sub/low_level.py", "sub/deep/__init__.py"):
        (tmp_path / "retrieval_gate" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "retrieval_gate" / path).write_text("x = 1\n")
    tests = ["test_low.py", "test_low_edges.py", "test_low_level.py", "test_lower.py"]
    for name in [*(f"sub/{t}" for t in tests), "test_sub_paths.py", "sub/test_deep.py"]:
        (tmp_path / "tests" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / name).write_text("")
    # test_low_level.py is low_level.py's, test_lower.py nobody's.
    assert mutation.own_tests("sub/low.py", tmp_path) == [
        "tests/sub/test_low.py",
        "tests/sub/test_low_edges.py",
    ]
    assert mutation.own_tests("sub/low_level.py", tmp_path) == ["tests/sub/test_low_level.py"]
    assert mutation.own_tests("sub/__init__.py", tmp_path) == ["tests/test_sub_paths.py"]
    assert mutation.own_tests("sub/deep/__init__.py", tmp_path) == ["tests/sub/test_deep.py"]
    assert list(mutation.units(["sub"], tmp_path)) == [
        "sub/__init__.py",
        "sub/deep/__init__.py",
        "sub/low.py",
        "sub/low_level.py",
    ]
    overridden = mutation.tests_of("sub/low.py", {"sub/low": ("test_lower.py",)}, tmp_path)
    assert overridden == ["tests/sub/test_lower.py"]
    monkeypatch.setitem(mutation.EXTRA_TESTS, "sub/low", ("tests/sub/test_lower.py",))
    assert mutation.tests_of("sub/low.py", {}, tmp_path)[-1] == "tests/sub/test_lower.py"


def test_the_mutation_tool_draws_a_new_seed_unless_given_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks.tools import mutation

    seeds = set()
    for _ in range(3):
        assert mutation.main(["--modules", "stats/ppi.py", "--per-module", "3", "--list"]) == 0
        err = capsys.readouterr().err
        seeds.add(err.split()[1])
    assert len(seeds) > 1
    listed = []
    for _ in range(2):
        assert (
            mutation.main(
                ["--modules", "stats/ppi.py", "--per-module", "3", "--list", "--seed", "7"]
            )
            == 0
        )
        captured = capsys.readouterr()
        assert captured.err.startswith("seed 7 (--seed 7 draws this sample again)")
        listed.append(captured.out)
    assert listed[0] == listed[1]
    assert listed[0].startswith("stats/ppi.py: 3 of ")
