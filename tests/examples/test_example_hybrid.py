"""The hybrid example: BM25 and the dense example fused by RRF, passing against its committed
baseline, which a fresh run reproduces, and ranking as RRF of the two gated inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval_gate.adapters import build_retriever
from retrieval_gate.adapters.fusion import fuse
from retrieval_gate.config.loader import load
from retrieval_gate.datasets import load as load_dataset
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

BASELINE = Path(".retrieval-gate") / "example-hybrid" / "baseline.json"


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three example configs, the labelled set and the hybrid's baseline, copied: the
    dense index is built afresh there."""
    pytest.importorskip("wordllama")
    pytest.importorskip("qdrant_client")
    target = tmp_path_factory.mktemp("hybrid") / "configs"
    target.mkdir()
    for name in ("example.yaml", "example-dense.yaml", "example-hybrid.yaml"):
        shutil.copy(CONFIGS / name, target / name)
    shutil.copytree(
        CONFIGS / "example", target / "example", ignore=shutil.ignore_patterns("__pycache__")
    )
    (target / BASELINE).parent.mkdir(parents=True)
    shutil.copy(CONFIGS / BASELINE, target / BASELINE)
    return target


def test_the_hybrid_example_passes_and_a_fresh_run_records_its_baseline(configs: Path) -> None:
    code, out, err = run_cli("check", "-c", configs / "example-hybrid.yaml", "--no-cache")
    assert code == 0, err + out
    assert "example-hybrid: PASS" in out
    fresh = configs / "fresh.json"
    code, _, err = run_cli(
        "baseline", "-c", configs / "example-hybrid.yaml", "-o", fresh, "--no-cache", "--quiet"
    )
    assert code == 0, err
    committed = json.loads((CONFIGS / BASELINE).read_text(encoding="utf-8"))
    made = json.loads(fresh.read_text(encoding="utf-8"))
    for key in ("fingerprints", "retriever", "query_ids", "scores", "top_k"):
        assert made[key] == committed[key], key


def test_the_hybrid_fuses_exactly_the_retrievers_the_other_examples_gate(configs: Path) -> None:
    hybrid = load(configs / "example-hybrid.yaml")
    alone = {"bm25": load(configs / "example.yaml"), "dense": load(configs / "example-dense.yaml")}
    inputs = hybrid.retriever.retrievers  # type: ignore[union-attr]
    assert {name: config.retriever for name, config in alone.items()} == inputs
    dataset = load_dataset(hybrid.dataset, hybrid.base_dir)
    built = {
        name: build_retriever(config.retriever, base_dir=config.base_dir, corpus=dataset.corpus)
        for name, config in alone.items()
    }
    committed = json.loads((CONFIGS / BASELINE).read_text(encoding="utf-8"))["top_k"]
    try:
        for query in dataset.queries:
            lists = {name: retriever.search(query, 100) for name, retriever in built.items()}
            assert [hit.doc_id for hit in fuse(lists, {}, 10)] == committed[query.id], query.id
    finally:
        for retriever in built.values():
            retriever.close()
