"""Reports of a two-stage retriever: the documents lost, by the stage that lost them, pinned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.report import render, validate_result
from retrieval_gate.report.render import summary_of
from tests.helpers.report import check_golden, pinned_records

QUERIES = 30

RETRIEVER = """\
def search(query, k, metadata):
    i = int(metadata["n"])
    relevant = [f"d{i}", f"d{i}-b"]
    candidates = relevant + [f"filler-{i}-{j}" for j in range(12)]
    hits = list(candidates)
    if MODE == "current" and i % 3 == 0:  # the first stage loses d{i}
        candidates.remove(f"d{i}")
        hits = list(candidates)
    if MODE == "current" and i % 3 == 1:  # the reranker pushes both out of the top k
        hits = candidates[2:]
    return {"hits": hits[:k], "candidates": candidates}
"""

CONFIG = """\
version: 1
name: two-stage-search
dataset: {queries: queries.jsonl}
retriever: {type: python, target: "@MODULE@:search"}
k: 10
metrics:
  ndcg@10: {max_drop: 2pt}
  recall(rel=2)@10: {max_drop: 5pt}
  candidates:recall@20: {max_drop: 5pt}
slices:
  by: [intent]
  min_size: 10
gate: {resamples: 2000}
"""


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The result document of a two-stage retriever whose first stage loses one relevant
    document of every third query and whose reranker demotes two of every third."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.gate.decide import decide

    root = tmp_path_factory.mktemp("stages")
    with (root / "queries.jsonl").open("w") as handle:
        for i in range(QUERIES):
            row = {
                "id": f"q{i:03d}",
                "text": f"how do I change setting {i}",
                "intent": "billing" if i % 2 else "how-to",
                "n": i,
                "qrels": {f"d{i}": 2, f"d{i}-b": 1},
            }
            handle.write(json.dumps(row) + "\n")
    baseline, records = pinned_records(root, CONFIG, RETRIEVER, "staged_{mode}")
    current = records["current"]
    result = decide(baseline, current.record, load(root / "current.yaml"), current.dataset)
    return result.document()


def test_the_losses_by_stage_are_counted_per_check(staged: dict[str, Any]) -> None:
    overall = {
        c["metric"]: (c["first_stage"], c["reranker"])
        for c in staged["stage_losses"]["checks"]
        if c["slice"] == "all"
    }
    # 10 queries lose d{i} in the first stage; 10 lose both documents to the reranker.
    assert overall == {"ndcg@10": (10, 20), "recall(rel=2)@10": (10, 10)}
    assert staged["stage_losses"]["query_count"] == 20


@pytest.mark.parametrize(("fmt", "suffix"), [("markdown", "md"), ("html", "html")])
def test_each_format_is_pinned(staged: dict[str, Any], fmt: Any, suffix: str) -> None:
    check_golden(f"stages.{suffix}", render(staged, fmt))


def test_the_terminal_summary_is_pinned(staged: dict[str, Any]) -> None:
    check_golden("stages.summary.txt", summary_of(validate_result(staged)))


def test_a_result_without_losses_shows_no_stage_section(staged: dict[str, Any]) -> None:
    quiet = {
        **staged,
        "stage_losses": {
            "checks": [
                {**c, "first_stage": 0, "reranker": 0} for c in staged["stage_losses"]["checks"]
            ],
            "queries": [],
            "query_count": 0,
        },
    }
    for fmt in ("markdown", "html"):
        assert "demoted by the reranker" not in render(quiet, fmt)
    assert "demoted by the reranker" not in summary_of(validate_result(quiet))


def test_the_markdown_drops_the_stage_table_last_to_fit(staged: dict[str, Any]) -> None:
    from retrieval_gate.report.render import render_markdown

    full = render(staged, "markdown")
    shorter = render_markdown(validate_result(staged), limit=len(full) - 1)
    assert "demoted by the reranker" in shorter  # other sections went first
    assert "Trimmed to fit" in shorter


def test_malformed_stage_losses_are_named(staged: dict[str, Any], tmp_path: Path) -> None:
    from retrieval_gate.errors import InputError

    bad = {**staged, "stage_losses": {"checks": [{"metric": "ndcg@10"}]}}
    with pytest.raises(InputError, match="stage_losses"):
        validate_result(bad)
