"""Reports of an LLM-assisted gate (gate.labels human+llm): trusted and provisional, pinned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.pipeline.check import check
from retrieval_gate.report import render, summary_of, validate_result
from tests.helpers.judged_example import assisted_documents
from tests.helpers.report import check_golden, first_screen


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The regressed example's result with 70% of its judgments held back: a trusted judge,
    the same judge below a trust floor of 1,000 pairs, and a judge's layer with holes."""
    return assisted_documents(tmp_path_factory.mktemp("report"))


def test_an_assisted_result_is_pinned(documents: dict[str, dict[str, Any]]) -> None:
    record = validate_result(json.loads(json.dumps(documents["assisted"])))
    check_golden("assisted.md", render(record, "markdown"))
    check_golden("assisted.html", render(record, "html"))
    check_golden("assisted.summary.txt", summary_of(record))


def test_a_provisional_result_is_pinned(documents: dict[str, dict[str, Any]]) -> None:
    record = validate_result(json.loads(json.dumps(documents["provisional"])))
    check_golden("provisional.md", render(record, "markdown"))


def test_a_result_with_label_holes_is_pinned(documents: dict[str, dict[str, Any]]) -> None:
    record = validate_result(json.loads(json.dumps(documents["holed"])))
    check_golden("holed.md", render(record, "markdown"))
    check_golden("holed.html", render(record, "html"))


def test_label_holes_are_said_once_on_the_first_screen(
    documents: dict[str, dict[str, Any]],
) -> None:
    """17 failing checks that depend on pairs the judge has not graded: a column says which,
    one line what to do; the bounds wait in a tooltip or a folded block, not a line each."""
    record = validate_result(documents["holed"])
    depends = [h for h in record.label_holes if not h.robust and h.unjudged]
    assert len(depends) == 17
    for fmt in ("markdown", "html"):
        report = render(record, fmt)
        shown = first_screen(report)
        assert shown.count("retrieval-gate label-queue") == 1, fmt
        assert "worst case" not in shown, fmt
        assert shown.count("17 checks depend on unjudged documents") == 1, fmt
        # Still there for whoever opens it: every check's bounds.
        assert report.count("worst case") >= 17, fmt


def test_the_json_carries_both_views_and_the_card(documents: dict[str, dict[str, Any]]) -> None:
    labels = documents["assisted"]["labels"]
    assert labels["decided_by"] == "human+llm"
    assert labels["provisional_reason"] == ""
    assert len(labels["assisted"]) == len(labels["human"]) == len(labels["human_judged"])
    assert documents["assisted"]["comparisons"] == labels["assisted"]
    card = labels["calibration"]
    assert card["pairs"] == sum(map(sum, card["confusion"]))
    provisional = documents["provisional"]["labels"]
    assert provisional["decided_by"] == "human"
    assert documents["provisional"]["comparisons"] == provisional["human"]
    assert "min_pairs: 1000" in provisional["provisional_reason"]


def test_a_human_only_result_has_no_labels_block(tmp_path: Path) -> None:
    from tests.helpers.paths import CONFIGS

    document = check(CONFIGS / "example.yaml", cache=False).document()
    assert "labels" not in document
    assert "LLM" not in render(validate_result(document), "markdown")


@pytest.mark.parametrize("name", ["assisted", "provisional"])
def test_the_per_query_chart_counts_the_queries_people_judged(
    documents: dict[str, dict[str, Any]], name: str
) -> None:
    """The record's per-query scores are people's: a query nobody judged scores 0 on both
    sides and is not "unchanged", so the chart counts the human-judged queries alone."""
    record = validate_result(json.loads(json.dumps(documents[name])))
    judged = len(documents[name]["labels"]["human_query_ids"])
    assert judged == documents[name]["labels"]["human_queries"] == 39
    html = render(record, "html")
    assert f"of {judged} human-judged queries (points, recall@10 by people&#39;s labels)" in html
    assert "of 131 queries (points" not in html
    assert f"on the {judged} human-judged queries (people's labels)" in render(record, "markdown")
