"""Shared fixtures (the reference data beside the repository, PostgreSQL); bytecode kept."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import SHARED_DATA

_BYTECODE: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """With PYTHONDONTWRITEBYTECODE set (and no PYTHONPYCACHEPREFIX), every Python the suite
    starts (the command line, the action's steps, pytest's workers, some hundreds) compiled
    each module it imported, a fifth of the suite's time: they share a private temporary
    folder of bytecode instead, removed at the end, and nothing is written into the tree."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return  # bytecode is kept already, or a worker of this run: the folder is set
    folder = Path(tempfile.mkdtemp(prefix="test-bytecode-"))
    _BYTECODE.append(folder)
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    sys.pycache_prefix = str(folder)
    sys.dont_write_bytecode = False


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: half as many workers again as cores. A worker spends about a fifth of its
    time waiting (on a server, a child process, a retry's wait) rather than computing, and on
    two cores a third worker fills that time (benchmarks/timings/README.md, the test suite)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) * 3 // 2)


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _BYTECODE:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data`; a failure in CI (RETRIEVAL_GATE_REQUIRE_SHARED=1), a skip elsewhere."""
    if not SHARED_DATA.is_dir():
        message = f"reference data not found at {SHARED_DATA} (expected ../shared/data)"
        if os.environ.get("RETRIEVAL_GATE_REQUIRE_SHARED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA.resolve()


@pytest.fixture(scope="session")
def trec_eval_test(shared_data: Path) -> Path:
    """trec_eval's own test inputs and expected outputs."""
    return shared_data / "trec_eval_test"


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """The DSN of a real PostgreSQL server with pgvector, started once per test session."""
    from tests.helpers.postgres import postgres_server

    with postgres_server() as dsn:
        yield dsn
