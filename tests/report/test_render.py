"""Reports: golden files per format, escaping of untrusted text, trimming to a comment."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from retrieval_gate.errors import InputError
from retrieval_gate.gate.result import canonical_json, error_document
from retrieval_gate.report import (
    COMMENT_BUDGET,
    annotations_of,
    read_result,
    render,
    render_markdown,
    summary_of,
    validate_result,
)
from tests.helpers.report import (
    GOLDEN,
    check_golden,
    elements,
    first_screen,
    pinned_records,
    with_golden_trend,
)

ZWSP = "\u200b"
NOT_JUDGED = "\u2796"  # the heavy minus sign that marks rows without an enforced verdict
TIMES = "\u00d7"
ALPHA = "\u03b1"

QUERIES = 60
HOSTILE = {
    "q000": "<img src=x onerror=alert(1)> refund",
    "q006": "ping @someone about #12 invoices",
    "q009": "[free money](http://evil.example) ](http://evil) www.evil.example",
    "q012": "a | b | c` rm -rf `` ``` --> <!-- **bold** _x_",
    "q018": "line one\nline two\r\n# heading $x$ ~~gone~~ ![i](x.png)",
}
SMALL_SLICE = "legal|<b>@team</b>"

RETRIEVER = """\
def search(query, k, metadata):
    i = int(metadata["n"])
    if MODE == "current" and i == 58:
        raise RuntimeError("upstream timed out after 2.0 s")
    docs = [f"d{(i + j) % 60}" for j in range(1, k)]
    rank = 0
    if MODE == "current":
        if metadata["intent"] == "billing" and i % 4 != 3:
            rank = 6
            docs[0:2] = [f"new-{i}", f"new-{i + 1}"]
        elif metadata["intent"] == "how-to":
            rank = {1: 3, 4: 9}.get(i % 6, 0)
        elif metadata["intent"] == "troubleshooting" and (i % 5 == 0 or i in (8, 11)):
            rank = 1
    docs.insert(rank, f"d{i}")
    return docs[:k]
"""

CONFIG = """\
version: 1
name: support-search
dataset: {queries: queries.jsonl}
retriever: {type: python, target: "@MODULE@:search"}
k: 10
metrics:
  ndcg@10: {max_drop: 2pt}
  recall@10: {max_drop: 5pt, min: 0.5}
  mrr@10: {max_drop: 3pt}
  ndcg(gain=linear)@10: {}
slices:
  by: [intent]
  min_size: 10
gate: {resamples: 2000, error_budget: 0.05}
"""


def build_scenario(root: Path, *, regressed: bool = True) -> dict[str, Any]:
    """The result document of the scenario, built under `root` (a fresh folder)."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.gate.decide import decide

    intents = ["billing", "how-to", "troubleshooting"]
    with (root / "queries.jsonl").open("w") as handle:
        for i in range(QUERIES):
            qid = f"q{i:03d}"
            intent = SMALL_SLICE if i >= 55 else intents[i % 3]
            row = {
                "id": qid,
                "text": HOSTILE.get(qid, f"how do I change my {intent} setting {i}"),
                "intent": intent,
                "n": i,
                "qrels": {f"d{i}": 2, f"d{(i + 1) % QUERIES}": 1, f"d{(i + 30) % QUERIES}": 1},
            }
            handle.write(json.dumps(row) + "\n")
    baseline, records = pinned_records(root, CONFIG, RETRIEVER, "{mode}_retriever")
    current = records["current" if regressed else "baseline"]
    config = load(root / "current.yaml")
    result = decide(
        baseline,
        current.record,
        config,
        current.dataset,
        current.warnings,
        failed_queries=current.failed_queries,
    )
    return result.document()


@pytest.fixture(scope="module")
def regressed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_scenario(tmp_path_factory.mktemp("regressed"))


@pytest.fixture(scope="module")
def passed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_scenario(tmp_path_factory.mktemp("passed"), regressed=False)


def test_the_json_result_is_pinned(regressed: dict[str, Any]) -> None:
    check_golden("regressed.json", render(regressed, "json"))
    assert render(regressed, "json") == canonical_json(regressed)


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("markdown", "md"), ("html", "html"), ("junit", "junit.xml")]
)
def test_each_format_is_pinned(regressed: dict[str, Any], fmt: Any, suffix: str) -> None:
    document = json.loads((GOLDEN / "regressed.json").read_text(encoding="utf-8"))
    check_golden(f"regressed.{suffix}", render(document, fmt))


def test_a_pass_and_an_error_are_pinned(passed: dict[str, Any]) -> None:
    assert passed["status"] == "pass"
    check_golden("pass.md", render(passed, "markdown"))
    error = error_document(
        "support-search",
        "the baseline cannot be compared with this run:\n  - k differs: baseline 10, now 20",
    )
    check_golden("error.md", render(error, "markdown"))
    check_golden("error.junit.xml", render(error, "junit"))


def test_rendering_is_deterministic(regressed: dict[str, Any]) -> None:
    for fmt in ("markdown", "html", "junit", "json"):
        assert render(regressed, fmt) == render(json.loads(json.dumps(regressed)), fmt)


def _visible(text: str) -> str:
    return " ".join(text.replace(ZWSP, "").split())


def test_hostile_query_text_renders_inert_in_markdown(regressed: dict[str, Any]) -> None:
    # GitHub's renderer is cmark-gfm; markdown-it's gfm-like preset (raw HTML on, tables,
    # autolinks) parses the same constructs, so what it turns into markup GitHub would too.
    rendered = MarkdownIt("gfm-like").render(render(regressed, "markdown"))
    found = elements(rendered)
    assert not {"img", "a", "b", "script"} & set(found.tags)
    assert found.cell_tags == [], "text in a table cell became markup"
    rows = {row[0]: row for row in found.cells if len(row) == 6 and row[0] in HOSTILE}
    assert set(rows) == set(HOSTILE), "a hostile query broke its table row"
    for query_id, text in HOSTILE.items():
        assert _visible(rows[query_id][1]) == " ".join(text.split())
    assert "@" + ZWSP + "someone" in rendered
    assert "#" + ZWSP + "12" in rendered
    slice_rows = [row for row in found.cells if len(row) == 9 and SMALL_SLICE in _visible(row[1])]
    assert len(slice_rows) == 4, "the hostile slice name broke the slice table"


def test_hostile_query_text_renders_inert_in_html(regressed: dict[str, Any]) -> None:
    found = elements(render(regressed, "html"))
    assert not {"img", "a", "b", "script", "iframe"} & set(found.tags)
    assert set(found.cell_tags) <= {"br", "span"}  # span: a label hole's tooltip, ours
    texts = {row[0]: row[1] for row in found.cells if row and row[0] in HOSTILE}
    for query_id, text in HOSTILE.items():
        assert texts[query_id] == " ".join(text.split())


def test_junit_is_well_formed_with_hostile_names(regressed: dict[str, Any]) -> None:
    import xml.etree.ElementTree as ET

    root = ET.fromstring(render(regressed, "junit"))
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == len(regressed["comparisons"])
    failed = [case for case in cases if case.find("failure") is not None]
    assert len(failed) == len(regressed["failures"]) == int(suite.get("failures", "-1"))
    skipped = [
        (case.get("classname", "").rpartition(".support-search.")[2], case.get("name"))
        for case in cases
        if case.find("skipped") is not None
    ]
    small = [(m, f"intent={SMALL_SLICE}") for m in ("ndcg@10", "recall@10", "rr@10")]
    report_only = [
        ("ndcg(gain=linear)@10", c["slice"])
        for c in regressed["comparisons"]
        if c["metric"] == "ndcg(gain=linear)@10"
    ]
    assert sorted(skipped) == sorted(small + report_only)
    assert int(suite.get("skipped", "-1")) == len(skipped)
    # An inconclusive check the gate passes is a passing testcase that says so, not skipped.
    inconclusive = next(
        case
        for case in cases
        if case.get("classname", "").endswith(".ndcg@10")
        and case.get("name") == "intent=troubleshooting"
    )
    assert inconclusive.find("failure") is None
    assert inconclusive.find("skipped") is None
    out = inconclusive.findtext("system-out") or ""
    assert out.startswith(
        "inconclusive, past the threshold, the test leaning towards a drop without the "
        "evidence to fail it"
    )
    error = ET.fromstring(render(error_document("x", "no baseline\x01"), "junit"))
    assert error.find("testsuite/testcase/error") is not None


def test_annotations_name_every_failure_and_each_inconclusive_check(
    regressed: dict[str, Any],
) -> None:
    result = validate_result(regressed)
    lines = annotations_of(result)
    assert [level for level, _ in lines].count("error") == len(regressed["failures"])
    assert all("\n" not in message for _, message in lines)
    worst = lines[0][1]
    assert worst.startswith("rr@10 fell 63.2 pt on intent=billing (p < 0.004)")
    assert lines[-1] == (
        "warning",
        "ndcg@10 fell 6.0 pt on intent=troubleshooting (p = 0.0781): inconclusive, past the "
        "threshold, the test leaning towards a drop without the evidence to fail it; detects "
        "9.3 pt (80% power), needs 116 queries for 3 pt (1.5x max_drop); depends on 144 "
        "unjudged documents (worst case inconclusive at -5.96 pt, best case pass at -1.89 pt): "
        "label them (`retrieval-gate label-queue`) or judge them (`retrieval-gate judge`)",
    )


def _inflated(document: dict[str, Any], slices: int) -> dict[str, Any]:
    """`document` with `slices` more slice rows and long query texts."""
    row = next(c for c in document["comparisons"] if c["slice"] != "all")
    extra = [{**row, "slice": f"segment=s{i:05d}"} for i in range(slices)]
    changes = [
        {**change, "text": change["text"] + " lorem ipsum" * 100}
        for change in document["query_changes"]
    ]
    warnings = [f"warning {i}: " + "x" * 200 for i in range(50)]
    return {
        **document,
        "comparisons": document["comparisons"] + extra,
        "query_changes": changes,
        "warnings": warnings,
    }


def test_a_long_report_drops_whole_sections_to_fit_a_comment(regressed: dict[str, Any]) -> None:
    result = validate_result(_inflated(regressed, 2_000))
    full = render_markdown(result)
    assert len(full) > COMMENT_BUDGET
    trimmed = render_markdown(result, limit=COMMENT_BUDGET)
    assert len(trimmed) <= COMMENT_BUDGET
    assert "Trimmed to fit a GitHub comment: slices." in trimmed
    assert "<summary>Slices" not in trimmed
    assert "Most regressed queries" in trimmed
    assert "mermaid" in trimmed
    assert trimmed.count("❌") >= len(regressed["failures"])  # failures are never cut
    small = render_markdown(validate_result(_inflated(regressed, 20)), limit=COMMENT_BUDGET)
    assert "Trimmed" not in small
    tight = render_markdown(result, limit=8_500)
    assert "Trimmed to fit a GitHub comment: slices, warnings." in tight
    assert "Most regressed queries" in tight


def test_a_report_that_cannot_fit_is_cut_at_a_line_and_says_so(regressed: dict[str, Any]) -> None:
    whole = render_markdown(validate_result(regressed))
    text = render_markdown(validate_result(regressed), limit=500)
    assert len(text) <= 500
    kept, _, note = text.rpartition("\n\n**This report was cut at 500 characters**")
    assert whole.startswith(kept + "\n")
    assert note.endswith("): the whole report is in the job's `report.md` and `result.json`.\n")


def test_results_are_validated_before_rendering(tmp_path: Path, regressed: dict[str, Any]) -> None:
    bad = {**regressed, "comparisons": [{**regressed["comparisons"][0], "delta": "lots"}]}
    with pytest.raises(InputError, match=r"comparisons\.0\.delta"):
        render(bad, "markdown")
    path = tmp_path / "result.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"result\.json:1: not JSON"):
        read_result(path)
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InputError, match=r"result\.json: nested too deeply"):
        read_result(path)
    with pytest.raises(InputError, match="no such result file"):
        read_result(tmp_path / "missing.json")
    path.write_text(json.dumps({**regressed, "schema_version": 3}), encoding="utf-8")
    with pytest.raises(InputError, match="schema_version"):
        read_result(path)


def _older(row: dict[str, Any]) -> dict[str, Any]:
    """A comparison as versions before the one-sided rule wrote it."""
    kept = {k: v for k, v in row.items() if k not in ("p_bound", "level", "detectable_drop")}
    verdict = "noise" if row["verdict"] == "inconclusive" else row["verdict"]
    return {**kept, "mde": row["detectable_drop"], "verdict": verdict}


def test_a_result_of_an_older_version_is_refused(tmp_path: Path, regressed: dict[str, Any]) -> None:
    older = {
        **regressed,
        "comparisons": [_older(row) for row in regressed["comparisons"]],
        "failures": [_older(row) for row in regressed["failures"]],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_result(path)
    message = str(caught.value)
    assert "a result of an older retrieval-gate (its comparisons have `mde`" in message
    assert "failures.0.p_bound: Field required" in message
    assert message.endswith("run `retrieval-gate check --json FILE` again with this version")
    noise = [row for row in older["comparisons"] if row["verdict"] == "noise"]
    assert noise, "the scenario has an inconclusive check"
    without_mde = {
        **regressed,
        "comparisons": [{**row, "verdict": "noise"} for row in regressed["comparisons"][:1]],
    }
    with pytest.raises(InputError, match=r"the `noise` verdict, which became `inconclusive`"):
        validate_result(without_mde)


def test_the_histogram_counts_every_query_once(regressed: dict[str, Any]) -> None:
    from retrieval_gate.report.context import report_context

    context = report_context(validate_result(regressed))
    counts = [b["count"] for b in context["histogram"]]
    assert sum(counts) == len(regressed["current"]["query_ids"])
    unchanged = next(b for b in context["histogram"] if b["low"] == b["high"] == 0.0)
    assert unchanged["count"] == sum(1 for d in context["deltas"] if d["delta"] == 0)
    assert re.search(r"bar \[" + ", ".join(map(str, counts)) + r"\]", render(regressed, "markdown"))


def test_the_per_query_chart_has_a_bar_per_query_up_to_a_pixel_each(
    regressed: dict[str, Any],
) -> None:
    from retrieval_gate.report.context import CHART_BARS, report_context

    small = report_context(validate_result(regressed))["chart"]
    assert small["per_bar"] == 1
    assert len(small["bars"]) == len(regressed["current"]["query_ids"])
    # 20,000 queries: the HTML holds at most CHART_BARS bars, each the mean of a run of them.
    rng = random.Random(3)
    ids = [f"q{i:05d}" for i in range(20_000)]
    metric = regressed["failures"][0]["metric"]
    before = [rng.random() for _ in ids]
    after = [min(max(b + rng.choice([-0.1, 0.0, 0.0, 0.05]), 0.0), 1.0) for b in before]
    document = {
        **regressed,
        "current": {**regressed["current"], "query_ids": ids, "scores": {metric: after}},
        "baseline": {**regressed["baseline"], "scores": {metric: before}},
    }
    chart = report_context(validate_result(document))["chart"]
    assert len(chart["bars"]) <= CHART_BARS
    assert chart["per_bar"] == 23
    worse = sum(1 for b, a in zip(before, after, strict=True) if a < b)
    assert chart["worse"] == worse
    html = render(document, "html")
    assert html.count("<rect x=") <= CHART_BARS + 200  # the bars, and the other charts' few
    assert f"{worse} worse" in html
    assert "a bar is the mean of 23 queries" in html


def test_thousands_of_failing_slices_still_fit_a_comment(regressed: dict[str, Any]) -> None:
    failing = next(c for c in regressed["comparisons"] if c["failed"] and c["slice"] != "all")
    extra = [{**failing, "slice": f"segment=s{i:05d}"} for i in range(3_000)]
    document = {
        **regressed,
        "comparisons": regressed["comparisons"] + extra,
        "failures": regressed["failures"] + extra,
    }
    trimmed = render_markdown(validate_result(document), limit=COMMENT_BUDGET)
    assert len(trimmed) <= COMMENT_BUDGET
    assert f"and {len(document['failures']) - 20} more failing checks" in trimmed


def _advice(label: str, judge: str) -> str:
    return f"label them ({label}) or judge them ({judge})"


def _depends(hole: Any, label: str | None = None, judge: str | None = None) -> str:
    """A label hole's bounds, with the advice when `label` and `judge` (the commands) are given."""
    bounds = (
        f"depends on {hole.unjudged} unjudged documents (worst case {hole.worst} at "
        f"{hole.worst_delta * 100:+.2f} pt, best case {hole.best.replace('_', ' ')} at "
        f"{hole.best_delta * 100:+.2f} pt)"
    )
    return bounds if label is None or judge is None else f"{bounds}: {_advice(label, judge)}"


def test_every_format_puts_the_label_holes_next_to_their_checks(
    regressed: dict[str, Any],
) -> None:
    record = validate_result(regressed)
    holes = {(h.metric, h.slice): h for h in record.label_holes}
    bounded = [
        (c["metric"], c["slice"])
        for c in regressed["comparisons"]
        if c["failed"] or (c["gated"] and c["verdict"] == "inconclusive")
    ]
    assert sorted(holes) == sorted(bounded)  # every failing or inconclusive check, no other
    billing, how_to = holes["ndcg@10", "intent=billing"], holes["ndcg@10", "intent=how-to"]
    assert not billing.robust
    assert (billing.worst, billing.best) == ("regressed", "improved")
    assert how_to.robust
    assert how_to.worst == how_to.best == "regressed"
    markdown = render(record, "markdown").splitlines()
    code = ("`retrieval-gate label-queue`", "`retrieval-gate judge`")
    # A column of the failing checks' table; the advice once under the tables; the bounds
    # folded below it.
    row = "| ❌ ndcg@10 on intent=billing | -46.93 [-61.05, -32.81] | < 0.004 | drop ≤ 2 pt |"
    assert f"{row} depends on 180 unjudged |" in markdown
    row = "| ❌ ndcg@10 on intent=how-to | -37.55 [-40.23, -34.88] | < 0.00219 | drop ≤ 2 pt |"
    assert f"{row} holds either way |" in markdown  # no warning
    advice = f"6 checks depend on unjudged documents: {_advice(*code)}"
    at = markdown.index(f"⚠️ {advice}.")
    assert markdown[at + 2].startswith("<details><summary>Label holes:")
    bounds = markdown[at + 2 : markdown.index("</details>", at)]
    assert f"- ndcg@10 on intent=billing: {_depends(billing)}" in bounds
    held = "holds whatever the 144 unjudged documents turn out to be"
    assert f"- ndcg@10 on intent=how-to: {held}" in bounds
    html = render(record, "html")
    tags = ("<code>retrieval-gate label-queue</code>", "<code>retrieval-gate judge</code>")
    cell = f'<td class="labels inconclusive"><span title="{_depends(billing)}">'
    assert f"{cell}depends on 180 unjudged</span></td>" in html
    assert f'<td class="labels"><span title="{held}">holds either way</span></td>' in html
    advice = f"6 checks depend on unjudged documents: {_advice(*tags)}"
    assert html.count(advice) == 1
    assert f"<li>ndcg@10 on intent=billing: {_depends(billing)}</li>" in html
    assert f"<li>ndcg@10 on intent=how-to: {held}</li>" in html
    summary = summary_of(record).splitlines()
    # The console says the advice once, at the first label-dependent check, then points back.
    notes = [line for line in summary if line.startswith("    depends on")]
    assert notes[0] == "    " + _depends(holes["ndcg@10", "all"], *code)
    assert all(line.endswith(", as above") for line in notes[1:])
    at = summary.index("  x ndcg@10 fell 46.9 pt on intent=billing (p < 0.004)")
    assert summary[at + 1] == "    depends on 180 unjudged documents, as above"
    at = summary.index("  x ndcg@10 fell 37.6 pt on intent=how-to (p < 0.00219)")
    assert summary[at + 1] == f"    {held}"
    annotations = annotations_of(record)
    at = annotations.index(
        ("error", "ndcg@10 fell 46.9 pt on intent=billing (p < 0.004): regressed")
    )
    assert annotations[at + 1] == (
        "warning",
        f"ndcg@10 fell 46.9 pt on intent=billing (p < 0.004): {_depends(billing, *code)}",
    )
    # A failure that holds needs no warning of its own: the next annotation is another error.
    at = annotations.index(
        ("error", "ndcg@10 fell 37.6 pt on intent=how-to (p < 0.00219): regressed")
    )
    assert annotations[at + 1][0] == "error"
    import xml.etree.ElementTree as ET

    messages = {
        case.get("name"): failure.get("message")
        for case in ET.fromstring(render(record, "junit")).iter("testcase")
        if (failure := case.find("failure")) is not None
        and case.get("classname", "").endswith(".ndcg@10")
    }
    note = _depends(billing, "retrieval-gate label-queue", "retrieval-gate judge")
    assert (
        messages["intent=billing"] == f"ndcg@10 fell 46.9 pt on intent=billing (p < 0.004) — {note}"
    )
    assert (
        messages["intent=how-to"] == f"ndcg@10 fell 37.6 pt on intent=how-to (p < 0.00219) — {held}"
    )


def test_the_label_hole_advice_is_said_once_per_table(regressed: dict[str, Any]) -> None:
    """Six failing checks and a passing inconclusive one depend on unjudged documents: the
    failing checks' table says which in a column and what to do once under it, the bounds
    folded; the folded list of inconclusive checks says it once too."""
    record = validate_result(regressed)
    for fmt in ("markdown", "html"):
        report = render(record, fmt)
        shown = first_screen(report)
        assert shown.count("retrieval-gate label-queue") == 1, fmt
        assert "worst case" not in shown, fmt
        assert report.count("retrieval-gate label-queue") == 2, fmt  # and under the list
        assert report.count("worst case") >= 7, fmt  # every bound, where one looks for it


def test_the_unjudged_note_shows_judged_at_k_before_and_after(regressed: dict[str, Any]) -> None:
    unjudged = regressed["unjudged"]
    assert unjudged["judged_before"] > unjudged["judged_after"]
    shown = "part of a drop there may be theirs (judged@10 0.20 → 0.19; 486 of 590"
    assert shown in render(regressed, "markdown")
    assert shown in render(regressed, "html")


def test_malformed_label_holes_are_named(regressed: dict[str, Any]) -> None:
    for field, value in (("worst", "::error::x"), ("unjudged", "many"), ("robust", "maybe")):
        hole = {**regressed["label_holes"][0], field: value}
        with pytest.raises(InputError, match=rf"label_holes\.0\.{field}"):
            render({**regressed, "label_holes": [hole]}, "markdown")
    unjudged = {k: v for k, v in regressed["unjudged"].items() if k != "judged_after"}
    with pytest.raises(InputError, match=r"unjudged\.judged_after"):
        render({**regressed, "unjudged": unjudged}, "markdown")
    assert "depends on" not in render({**regressed, "label_holes": []}, "markdown")


def test_a_result_written_before_the_bounds_still_renders(regressed: dict[str, Any]) -> None:
    old = {k: v for k, v in regressed.items() if k != "label_holes"}
    gap = {"metric": "ndcg@10", "slice": "all", "judged_before": 0.2, "judged_after": 0.19}
    markdown = render({**old, "labelling_gaps": [gap]}, "markdown")
    assert "depends on" not in markdown
    assert "holds whatever" not in markdown
    assert "ndcg@10" in markdown


# --------------------------------------------------------------------------------------------
# The decision rule's wording: inconclusive checks, p-value bounds, report-only rows, intervals
# that cannot be bounded, and the settings that give up the false-alarm control
# --------------------------------------------------------------------------------------------

SYNTHETIC_QUERIES = 43


def synthetic_result(frame: dict[str, Any], **gate: Any) -> dict[str, Any]:
    """A result whose checks come from compare() on seeded scores: 43 queries of which most
    lost a few points with a spread of 20 (four checks past max_drop, their tests leaning
    towards the drop without the evidence to fail), a slice of
    3 (too few for an interval), recall@10 report only. `gate` overrides the ComparisonSettings;
    `frame`, a real result, gives the name, config and tool version around the checks."""
    import numpy as np

    from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare

    rng = np.random.default_rng(11)
    metrics = ("ndcg@10", "rr@10", "recall@10")
    baseline = {m: rng.uniform(0.3, 0.9, SYNTHETIC_QUERIES) for m in metrics}
    current = {
        m: np.clip(v + rng.normal(-0.05, 0.2, SYNTHETIC_QUERIES), 0.0, 1.0)
        for m, v in baseline.items()
    }
    slices = {
        "all": np.arange(SYNTHETIC_QUERIES),
        "intent=a": np.arange(0, 20),
        "intent=b": np.arange(20, 40),
        "intent=tiny": np.arange(40, 43),
    }
    thresholds = {
        "ndcg@10": Threshold(max_drop=0.02),
        "rr@10": Threshold(max_drop=0.03),
        "recall@10": Threshold(),
    }
    settings = ComparisonSettings(min_size=10, resamples=2000, **gate)
    checks = [
        dataclasses.asdict(c) for c in compare(baseline, current, slices, thresholds, {}, settings)
    ]
    failures = sorted(
        (c for c in checks if c["failed"]),
        key=lambda c: (c["verdict"] != "regressed", c["verdict"], c["delta"]),
    )
    config = {
        **frame["config"],
        "gate": {**frame["config"]["gate"], **dataclasses.asdict(settings)},
    }
    return {
        **frame,
        "status": "fail" if failures else "pass",
        "comparisons": checks,
        "failures": failures,
        "query_changes": [],
        "hits_lost": [],
        "hits_gained": [],
        "warnings": [],
        "unjudged": None,
        "label_holes": [],
        "config": config,
        "baseline": None,
        "current": None,
    }


def _row(document: dict[str, Any], metric: str, slice_name: str) -> dict[str, Any]:
    return next(
        c for c in document["comparisons"] if c["metric"] == metric and c["slice"] == slice_name
    )


def _junit_cases(text: str) -> dict[tuple[str, str], Any]:
    import xml.etree.ElementTree as ET

    return {
        (case.get("classname", "").rpartition(".")[2], case.get("name", "")): case
        for case in ET.fromstring(text).iter("testcase")
    }


def test_inconclusive_checks_are_counted_in_every_headline(regressed: dict[str, Any]) -> None:
    document = synthetic_result(regressed)
    inconclusive = [
        c for c in document["comparisons"] if c["gated"] and c["verdict"] == "inconclusive"
    ]
    assert document["status"] == "pass", "the scenario's premise"
    assert len(inconclusive) >= 2, "the scenario's premise"
    record = validate_result(document)
    why = "past the threshold, the test leaning towards a drop without the evidence to fail it"
    headline = f"{len(inconclusive)} checks inconclusive: {why}"
    markdown = render(record, "markdown")
    assert f"## ✅ PASS · retrieval-gate · support-search\n\n**{headline}**\n" in markdown
    assert markdown.count(f": inconclusive, {why}") == len(inconclusive)
    assert f'<p class="headline pass">{headline}</p>' in render(record, "html")
    assert summary_of(record).startswith(f"retrieval-gate support-search: PASS; {headline}\n")
    annotations = annotations_of(record)
    assert [level for level, _ in annotations] == ["warning"] * len(inconclusive)
    assert all(": inconclusive, past the threshold" in message for _, message in annotations)
    cases = _junit_cases(render(record, "junit"))
    for c in inconclusive:
        case = cases[(c["metric"], c["slice"])]
        assert case.find("failure") is None
        assert case.find("skipped") is None
        assert (case.findtext("system-out") or "").startswith("inconclusive, past the threshold")
    # With failures, the inconclusive ones that pass are still counted.
    first = render(regressed, "markdown").splitlines()[2]
    assert first.endswith("and 6 more failing checks; 1 check inconclusive**")
    assert (
        summary_of(validate_result(regressed))
        .splitlines()[0]
        .endswith("and 6 more failing checks; 1 check inconclusive")
    )


def test_a_p_value_bound_prints_as_p_below_in_every_format(regressed: dict[str, Any]) -> None:
    row = _row(regressed, "rr@10", "intent=billing")
    assert row["p_bound"]
    assert row["p_adjusted"] == pytest.approx(0.004, abs=1e-5)
    record = validate_result(regressed)
    sentence = "rr@10 fell 63.2 pt on intent=billing (p < 0.004)"
    markdown = render(record, "markdown")
    assert f"**{sentence} and 6 more" in markdown
    assert "| ❌ regressed | intent=billing | rr@10 | 19 | 1.0000 | 0.3684 |" in markdown
    assert "| -63.16 [-82.16, -44.16] | < 0.004 |  |" in markdown
    assert "(p = 0.0781)" in markdown  # an exact p keeps its "="
    assert "p = <" not in markdown
    html = render(record, "html")
    assert sentence.replace("<", "&lt;") in html
    assert '<td class="num">&lt; 0.004</td>' in html
    summary = summary_of(record)
    assert f"  x {sentence}\n" in summary
    assert re.search(r"rr@10 +intent=billing .* < 0\.004 +regressed\n", summary)
    assert ("error", f"{sentence}: regressed") in annotations_of(record)
    failure = _junit_cases(render(record, "junit"))[("rr@10", "intent=billing")].find("failure")
    assert failure is not None
    assert (failure.get("message") or "").startswith(sentence)
    assert ", p < 0.004, n 19," in (failure.text or "")
    # A bound rounds up, never down: "< x" stays true.
    rounded = _row(regressed, "rr@10", "all")
    assert rounded["p_adjusted"] < 0.00234
    assert "| ❌ rr@10 | -21.67 [-31.49, -11.84] | < 0.00234 | drop ≤ 3 pt |" in markdown
    # Checks outside the correction show their raw one-sided p, bounded or not.
    assert f"| {NOT_JUDGED} report only | intent=billing | ndcg(gain=linear)@10 |" in markdown
    assert "| -46.23 [-60.13, -32.32] | < 0.001 | no max\\_drop or min |" in markdown


def test_report_only_rows_carry_no_verdict(regressed: dict[str, Any]) -> None:
    record = validate_result(regressed)
    report_only = [c for c in regressed["comparisons"] if c["verdict"] is None]
    assert {c["metric"] for c in report_only} == {"ndcg(gain=linear)@10"}
    markdown = render(record, "markdown").splitlines()
    rows = [line for line in markdown if "ndcg(gain=linear)@10" in line and line.startswith("|")]
    assert len(rows) == len(report_only)
    assert all(row.startswith(f"| {NOT_JUDGED} report only |") for row in rows)
    assert not any("✅" in row or "pass" in row for row in rows)
    assert rows[0].endswith("| -25.95 [-32.55, -19.35] | < 0.001 | none |")
    found = elements(render(record, "html"))
    cells = [row for row in found.cells if any("ndcg(gain=linear)@10" in c for c in row)]
    assert len(cells) == len(report_only)
    assert all(row[0] == "report only" for row in cells)  # a word, no emoji in HTML
    summary = summary_of(record).splitlines()
    line = next(line for line in summary if line.startswith("ndcg(gain=linear)@10"))
    assert line.endswith("  report only")
    cases = _junit_cases(render(record, "junit"))
    for c in report_only:
        case = cases[(c["metric"], c["slice"])]
        skipped = case.find("skipped")
        assert skipped is not None
        assert skipped.get("message") == "report only: no max_drop or min"
        assert (case.findtext("system-out") or "").startswith("report only: baseline ")
    assert not any("ndcg(gain=linear)" in message for _, message in annotations_of(record))


def test_an_interval_too_few_queries_bound_renders_as_n_a(regressed: dict[str, Any]) -> None:
    document = synthetic_result(regressed)
    tiny = _row(document, "ndcg@10", "intent=tiny")
    assert tiny["ci_low"] is None, "3 queries bound no interval"
    assert tiny["ci_high"] is None
    overall = {**_row(document, "ndcg@10", "all"), "ci_low": None, "ci_high": None}
    document["comparisons"] = [
        overall if (c["metric"], c["slice"]) == ("ndcg@10", "all") else c
        for c in document["comparisons"]
    ]
    record = validate_result(document)
    delta = f"{round(tiny['delta'] * 100, 2) + 0.0:+.2f}"
    markdown = render(record, "markdown")
    assert f"| {delta} [n/a] |" in markdown
    assert "Δ pt [95% CI, unadjusted]" in markdown
    html = render(record, "html")
    assert f'<td class="num">{delta} [n/a]</td>' in html
    assert "<th>Δ pt [95% CI, unadjusted]</th>" in html
    summary = summary_of(record).splitlines()
    assert "95% CI unadj." in summary[2]
    row = next(line for line in summary if line.startswith("ndcg@10 ") and " all " in line)
    assert re.search(r" n/a +", row)
    out = _junit_cases(render(record, "junit"))[("ndcg@10", "intent=tiny")].findtext("system-out")
    assert f"delta {delta} pt (95% CI n/a, unadjusted)" in (out or "")


CAVEATS = {
    "require_significance": (
        False,
        "Significance is not required ({code}): any drop past max_drop fails, false alarms are "
        "not controlled.",
        "require_significance: false",
    ),
    "correction": (
        "none",
        "No multiple-testing correction ({code}): with 6 checks each tested at {alpha} = 0.05, "
        "false alarms add up.",
        "correction: none",
    ),
    "on_inconclusive": (
        "fail",
        "Inconclusive checks fail the gate ({code}): a drop past max_drop fails on a test "
        "leaning towards it (adjusted p within 2{times}{alpha}), so false alarms are not held "
        "to {alpha}.",
        "on_inconclusive: fail",
    ),
}


@pytest.mark.parametrize("setting", sorted(CAVEATS))
def test_settings_that_give_up_false_alarm_control_are_stated_in_every_format(
    regressed: dict[str, Any], setting: str
) -> None:
    value, sentence, code = CAVEATS[setting]
    record = validate_result(synthetic_result(regressed, **{setting: value}))
    markdown = render(record, "markdown")
    assert f"> ⚠️ {sentence.format(code=f'`{code}`', alpha=ALPHA, times=TIMES)}\n" in markdown
    html = render(record, "html")
    shown = sentence.format(code=f"<code>{code}</code>", alpha=ALPHA, times=TIMES)
    assert f'<p class="caveat"><span aria-hidden="true">⚠️</span> {shown}</p>' in html
    summary = summary_of(record).splitlines()
    assert summary[1] == f"note: {sentence.format(code=f'`{code}`', alpha='alpha', times='x')}"
    import xml.etree.ElementTree as ET

    properties = ET.fromstring(render(record, "junit")).iter("property")
    caveats = [p.get("value") for p in properties if p.get("name") == "caveat"]
    assert caveats == [sentence.format(code=code, alpha=ALPHA, times=TIMES)]
    # The default settings state none of them.
    default = validate_result(synthetic_result(regressed))
    for fmt in ("markdown", "html", "junit"):
        assert "false alarms" not in render(default, fmt)  # type: ignore[arg-type]
    assert "false alarms" not in summary_of(default)


def test_the_method_names_the_one_sided_test_and_its_correction(
    regressed: dict[str, Any],
) -> None:
    method = (
        "one-sided paired randomization test, weighted Holm over 12 checks (overall checks "
        f"share 50% of {ALPHA}), {ALPHA} = 0.05; other checks show an unadjusted p"
    )
    assert method in render(regressed, "markdown")
    assert method in render(regressed, "html")
    assert f'<property name="method" value="{method}"/>' in render(regressed, "junit")
    for gate, expected in [
        (
            {"correction": "bh", "overall_share": 0.25},
            "weighted Benjamini-Hochberg over 6 checks (overall checks share 25% of "
            f"{ALPHA}), {ALPHA} = 0.05",
        ),
        (
            {"correction": "none"},
            f"one-sided paired randomization test, uncorrected, {ALPHA} = 0.05 ·",
        ),
        ({"test": "t"}, "one-sided paired t-test, weighted Holm over"),
    ]:
        assert expected in render(synthetic_result(regressed, **gate), "markdown")


def test_an_inconclusive_check_that_fails_says_why(regressed: dict[str, Any]) -> None:
    document = synthetic_result(regressed, on_inconclusive="fail")
    assert document["status"] == "fail"
    assert all(c["verdict"] == "inconclusive" for c in document["failures"])
    record = validate_result(document)
    worst = document["failures"][0]
    why = ": inconclusive, which fails this gate ({})"
    markdown = render(record, "markdown")
    fails = "(inconclusive, which fails this gate)"
    assert f"| ❌ {worst['metric']} on {worst['slice']} {fails} |" in markdown
    count = len(document["failures"])
    headline = (
        f"{worst['metric']} fell {abs(worst['delta']) * 100:.1f} pt on {worst['slice']} "
        f"(p = {worst['p_adjusted']:.3g}) and {count - 1} more failing checks; {count} checks "
        "inconclusive, which fail this gate ({})"
    )
    assert f"**{headline.format('`on_inconclusive: fail`')}**" in markdown
    assert markdown.count(fails) == count
    assert "⚠️ **" not in markdown  # failing, so listed once, with the failures
    summary = summary_of(record)
    first = f"retrieval-gate support-search: FAIL; {headline.format('`on_inconclusive: fail`')}"
    assert summary.splitlines()[0] == first
    assert summary.count(why.format("`on_inconclusive: fail`")) == count
    errors = [message for level, message in annotations_of(record) if level == "error"]
    assert len(errors) == len(document["failures"])
    assert all(message.endswith(why.format("`on_inconclusive: fail`")) for message in errors)
    cases = _junit_cases(render(record, "junit"))
    failure = cases[(worst["metric"], worst["slice"])].find("failure")
    assert failure is not None
    assert failure.get("type") == "inconclusive"


def test_what_a_check_can_detect_is_said_when_it_falls_short(
    regressed: dict[str, Any], passed: dict[str, Any]
) -> None:
    # Differences without variation leave the detectable drop unknown: nothing to say.
    assert all(c["detectable_drop"] is None for c in passed["comparisons"])
    record = validate_result(passed)
    for text in (render(record, "markdown"), render(record, "html"), summary_of(record)):
        assert "detects" not in text
        assert "too few queries to catch" not in text
    document = synthetic_result(regressed)
    row = _row(document, "ndcg@10", "intent=b")
    assert row["verdict"] == "pass"
    assert row["gated"]
    short = {**row, "detectable_drop": row["max_drop"] * 2, "queries_needed": 1234}
    none = {**_row(document, "rr@10", "intent=b"), "detectable_drop": None, "queries_needed": None}
    changed = {(c["metric"], c["slice"]): c for c in (short, none)}
    document["comparisons"] = [
        changed.get((c["metric"], c["slice"]), c) for c in document["comparisons"]
    ]
    record = validate_result(document)
    markdown = render(record, "markdown")
    assert (
        "- ndcg@10 on intent=b detects 4.0 pt (80% power), needs 1234 queries "
        f"for 3 pt (1.5{TIMES} max_drop)\n"
    ) in markdown
    level = f"{none['level']:.2g}"
    assert (
        "- rr@10 on intent=b too few queries to catch any drop (20 at level "
        f"{level}), needs more queries for 4.5 pt (1.5{TIMES} max_drop)\n"
    ) in markdown
    summary = summary_of(record)
    assert "too few queries to enforce the threshold: " in summary
    assert "ndcg@10 on intent=b detects 4.0 pt (80% power), needs 1234 queries for 3 pt " in summary
    assert "(1.5x max_drop)" in summary


def test_an_overall_check_that_is_not_gated_says_why(regressed: dict[str, Any]) -> None:
    document = synthetic_result(regressed)
    reason = (
        "5 queries cannot give p <= 0.0083, this check's level (the smallest p they can give "
        "is 0.031)"
    )
    row = {
        **_row(document, "ndcg@10", "all"),
        "gated": False,
        "reason": reason,
        "p_adjusted": None,
        "level": None,
    }
    document["comparisons"] = [
        row if (c["metric"], c["slice"]) == ("ndcg@10", "all") else c
        for c in document["comparisons"]
    ]
    record = validate_result(document)
    markdown = render(record, "markdown")
    assert f"| {NOT_JUDGED} not gated | ndcg@10 (exp gain) |" in markdown
    assert (
        "- ndcg@10 is not gated: 5 queries cannot give p &lt;= 0.0083, this "
        "check&#39;s level (the smallest p they can give is 0.031)\n"
    ) in markdown
    assert "<li>ndcg@10 is not gated: 5 queries" in render(record, "html")
    assert f"\nndcg@10 is not gated: {reason}\n" in summary_of(record)


def test_a_hostile_slice_name_cannot_leave_the_forest_plot(regressed: dict[str, Any]) -> None:
    document = json.loads(json.dumps(regressed))
    hostile = "intent=x```\n::error::forged\x1b[31m`"
    for key in ("comparisons", "failures"):
        for c in document[key]:
            if c["slice"] == "intent=billing":
                c["slice"] = hostile
    markdown = render(validate_result(document), "markdown")
    start = markdown.index("```text\n") + len("```text\n")
    block = markdown[start : markdown.index("\n```\n", start)]
    assert "`" not in block
    assert "\x1b" not in block
    assert not any(line.lstrip().startswith("::") for line in block.splitlines())
    assert "intent=x'''" in block  # the label is there, its backticks made harmless


# --------------------------------------------------------------------------------------------
# The main branch's trend (report/trend.py): pinned here so one command regenerates every golden
# --------------------------------------------------------------------------------------------


def test_a_result_with_a_trend_is_pinned_in_every_format() -> None:
    document = json.loads((GOLDEN / "regressed.json").read_text(encoding="utf-8"))
    record = validate_result(with_golden_trend(document))
    check_golden("trend.md", render(record, "markdown"))
    check_golden("trend.html", render(record, "html"))
    check_golden("trend.summary.txt", summary_of(record))
    # JUnit and annotations carry no trend: the same bytes as without one.
    plain = validate_result(document)
    assert render(record, "junit") == render(plain, "junit")
    assert annotations_of(record) == annotations_of(plain)


def test_the_console_lists_twenty_failing_checks_and_counts_the_rest(
    regressed: dict[str, Any],
) -> None:
    failing = next(c for c in regressed["comparisons"] if c["failed"] and c["slice"] != "all")
    extra = [{**failing, "slice": f"segment=s{i:03d}"} for i in range(100)]
    document = {
        **regressed,
        "comparisons": regressed["comparisons"] + extra,
        "failures": regressed["failures"] + extra,
    }
    summary = summary_of(validate_result(document)).splitlines()
    assert sum(1 for line in summary if line.startswith("  x ")) == 20
    assert f" ... and {len(document['failures']) - 20} more failing checks in the reports" in (
        summary
    )
    # Every one is still in the reports.
    assert render(document, "markdown").count("segment=s099") >= 1


def test_a_hostile_label_hole_reason_is_harmless_in_every_sink(regressed: dict[str, Any]) -> None:
    hole = {**regressed["label_holes"][0], "reason": "x\n::error::pwned <script>alert(1)</script>"}
    record = validate_result({**regressed, "label_holes": [hole]})
    texts = {fmt: render(record, fmt) for fmt in ("markdown", "html", "junit")}
    texts["summary"] = summary_of(record)
    texts["annotations"] = "\n".join(message for _, message in annotations_of(record))
    for fmt, text in texts.items():
        if fmt != "annotations":  # which warn only of label-dependent checks
            assert "pwned" in text, fmt  # said, made harmless
        assert not any(line.lstrip().startswith("::") for line in text.splitlines()), fmt
        if fmt in ("markdown", "html", "junit"):  # markup: no live tag
            assert "<script>" not in text, fmt


@pytest.mark.parametrize(
    "chances",
    [[float("nan"), 0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 1.0, 1.5, 2.0], [0.1] * 6, [-0.1] * 5],
)
def test_an_operating_characteristic_that_is_not_five_probabilities_is_refused(
    regressed: dict[str, Any], chances: list[float]
) -> None:
    document = json.loads(json.dumps(regressed))
    document["comparisons"][0]["fail_chances"] = chances
    with pytest.raises(InputError, match=r"fail_chances must be 5 probabilities within \[0, 1\]"):
        validate_result(document)
