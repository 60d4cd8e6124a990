"""Where the repository and the reference data beside it are, found once for every test."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root: pyproject.toml, configs/, docs/, benchmarks/."""

CONFIGS = REPO / "configs"
DOCS = REPO / "docs"
BENCHMARKS = REPO / "benchmarks"
PACKAGE = REPO / "retrieval_gate"
SHARED_DATA = REPO.parent / "shared" / "data"
"""`../shared/data` beside the repository: trec_eval's test files, Cranfield."""
