"""Shared fixtures: the reference data folder beside the repository, a PostgreSQL server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import SHARED_DATA


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
