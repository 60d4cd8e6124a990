"""Every benchmark script still runs: its --help, as a person runs it from the repository root."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

from tests.helpers.paths import BENCHMARKS, REPO

MODULES = sorted(path for path in BENCHMARKS.glob("*/*.py") if path.name != "__init__.py")
SCRIPTS = [path for path in MODULES if '__name__ == "__main__"' in path.read_text("utf-8")]
"""The modules a person runs; the others (benchmarks/common/, mutation's mutants) are imported."""
STANDARD_LINE = "sys.path.insert(0, str(Path(__file__).resolve().parents[2]))"


def short(path: Path) -> str:
    return path.relative_to(BENCHMARKS).as_posix()


@cache
def helps() -> dict[Path, subprocess.CompletedProcess[str]]:
    """Every script's --help, a few at a time: each costs an interpreter and its imports."""

    def run(script: Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(script.relative_to(REPO)), "--help"]
        return subprocess.run(
            command, cwd=REPO, capture_output=True, text=True, timeout=120, check=False
        )

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(SCRIPTS, pool.map(run, SCRIPTS), strict=True))


def test_the_scripts_are_found() -> None:
    assert len(SCRIPTS) > len(MODULES) / 2


@pytest.mark.parametrize("script", SCRIPTS, ids=short)
def test_every_script_prints_its_usage(script: Path) -> None:
    done = helps()[script]
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
