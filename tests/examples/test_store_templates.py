"""The vector-store templates in configs/adapters/ run as they are on the bundled sample."""

from __future__ import annotations

import shutil
from pathlib import Path

from retrieval_gate.pipeline.execute import execute
from tests.helpers.paths import CONFIGS


def ranking(config: Path) -> dict[str, list[str]]:
    result = execute(config, cache=False)
    assert not result.run.failures
    return {query: [hit.doc_id for hit in hits] for query, hits in result.run.hits.items()}


def test_the_store_templates_run_and_the_dense_ones_agree(tmp_path: Path) -> None:
    for folder in ("adapters", "tiny"):
        shutil.copytree(
            CONFIGS / folder,
            tmp_path / folder,
            ignore=shutil.ignore_patterns("__pycache__", ".retrieval-gate", "*.py"),
        )
    qdrant = ranking(tmp_path / "adapters" / "qdrant.yaml")
    # The same wordllama vectors, brute force in Qdrant's local mode and HNSW in Chroma.
    assert ranking(tmp_path / "adapters" / "chroma.yaml") == qdrant
    hybrid = ranking(tmp_path / "adapters" / "lancedb.yaml")
    assert set(hybrid) == set(qdrant)
    assert all(hybrid.values())
    built = sorted(
        p.name.split("-")[0] for p in (tmp_path / "adapters").glob(".retrieval-gate/index/*")
    )
    assert built == ["chroma", "lancedb", "qdrant"]
