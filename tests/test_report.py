"""Reports: golden files per format, escaping of untrusted text, trimming to a comment."""

from __future__ import annotations

import dataclasses
import html.parser
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from retrieval_gate.errors import InputError
from retrieval_gate.gate import canonical_json, error_document
from retrieval_gate.report import (
    COMMENT_BUDGET,
    annotations_of,
    read_result,
    render,
    render_markdown,
    validate_result,
)

GOLDEN = Path(__file__).parent / "golden" / "report"
UPDATE = os.environ.get("RETRIEVAL_GATE_UPDATE_GOLDEN") == "1"
ZWSP = "\u200b"

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
        elif metadata["intent"] == "troubleshooting" and i % 5 == 0:
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
    from retrieval_gate.config import load
    from retrieval_gate.gate import decide, record_current

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
    records = {}
    for mode in ("baseline", "current"):
        (root / f"{mode}_retriever.py").write_text(f"MODE = {mode!r}\n" + RETRIEVER)
        path = root / f"{mode}.yaml"
        path.write_text(CONFIG.replace("@MODULE@", f"{mode}_retriever"))
        records[mode] = record_current(load(path), cache=False, repo_dir=root)
    baseline = dataclasses.replace(
        records["baseline"].record,
        created_at="2026-11-20T09:30:00Z",
        git_commit="0123456789abcdef0123456789abcdef01234567",
        git_dirty=False,
    )
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


def check_golden(name: str, text: str) -> None:
    """`text` equals the golden file byte for byte (RETRIEVAL_GATE_UPDATE_GOLDEN=1 rewrites)."""
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
    assert path.read_text(encoding="utf-8") == text, f"{name} differs from its golden file"


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


class _Elements(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.cell_tags: list[str] = []
        self.cells: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if self._cell is not None:
            self.cell_tags.append(tag)
        if tag == "tr":
            self.cells.append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _elements(markup: str) -> _Elements:
    parser = _Elements()
    parser.feed(markup)
    parser.close()
    return parser


def _visible(text: str) -> str:
    return " ".join(text.replace(ZWSP, "").split())


def test_hostile_query_text_renders_inert_in_markdown(regressed: dict[str, Any]) -> None:
    # GitHub's renderer is cmark-gfm; markdown-it's gfm-like preset (raw HTML on, tables,
    # autolinks) parses the same constructs, so what it turns into markup GitHub would too.
    rendered = MarkdownIt("gfm-like").render(render(regressed, "markdown"))
    found = _elements(rendered)
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
    found = _elements(render(regressed, "html"))
    assert not {"img", "a", "b", "script", "iframe"} & set(found.tags)
    assert set(found.cell_tags) <= {"br"}
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
    skipped = [case.get("name") for case in cases if case.find("skipped") is not None]
    assert skipped == [f"intent={SMALL_SLICE}"] * 4
    error = ET.fromstring(render(error_document("x", "no baseline\x01"), "junit"))
    assert error.find("testsuite/testcase/error") is not None


def test_annotations_name_every_failure_and_each_noisy_drop(regressed: dict[str, Any]) -> None:
    result = validate_result(regressed)
    lines = annotations_of(result)
    assert [level for level, _ in lines].count("error") == len(regressed["failures"])
    assert ("warning", next(m for level, m in lines if level == "warning")) in lines
    assert all("\n" not in message for _, message in lines)
    worst = lines[0][1]
    assert worst.startswith("rr@10 fell 63.2 pt on intent=billing (p = 0.008)")


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
    tight = render_markdown(result, limit=8_000)
    assert "Trimmed to fit a GitHub comment: slices, warnings." in tight
    assert "Most regressed queries" in tight


def test_a_report_that_cannot_fit_says_so(regressed: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="characters even without its details"):
        render_markdown(validate_result(regressed), limit=500)


def test_results_are_validated_before_rendering(tmp_path: Path, regressed: dict[str, Any]) -> None:
    bad = {**regressed, "comparisons": [{**regressed["comparisons"][0], "delta": "lots"}]}
    with pytest.raises(InputError, match=r"comparisons\.0\.delta"):
        render(bad, "markdown")
    path = tmp_path / "result.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"result\.json:1: not JSON"):
        read_result(path)
    with pytest.raises(InputError, match="no such result file"):
        read_result(tmp_path / "missing.json")
    path.write_text(json.dumps({**regressed, "schema_version": 2}), encoding="utf-8")
    with pytest.raises(InputError, match="schema_version"):
        read_result(path)


def test_the_histogram_counts_every_query_once(regressed: dict[str, Any]) -> None:
    from retrieval_gate.report.context import report_context

    context = report_context(validate_result(regressed))
    counts = [b["count"] for b in context["histogram"]]
    assert sum(counts) == len(regressed["current"]["query_ids"])
    unchanged = next(b for b in context["histogram"] if b["low"] == b["high"] == 0.0)
    assert unchanged["count"] == sum(1 for d in context["deltas"] if d["delta"] == 0)
    assert re.search(r"bar \[" + ", ".join(map(str, counts)) + r"\]", render(regressed, "markdown"))


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


GAP = (
    "judged@10 fell 0.20 {arrow} 0.13 on these queries: the drop may be a labelling gap rather "
    "than a retriever fault; {command} lists the unjudged documents"
)


def test_every_format_puts_the_labelling_gap_next_to_its_failing_check(
    regressed: dict[str, Any],
) -> None:
    from retrieval_gate.report import summary_of

    gaps = {(g["metric"], g["slice"]) for g in regressed["labelling_gaps"]}
    assert ("ndcg@10", "intent=billing") in gaps
    assert ("ndcg@10", "intent=how-to") not in gaps  # failing, but its judged@10 held
    record = validate_result(regressed)
    assert [(g.metric, g.slice) for g in record.labelling_gaps] == [
        (g["metric"], g["slice"]) for g in regressed["labelling_gaps"]
    ]
    markdown = render(record, "markdown").splitlines()
    note = GAP.format(arrow="→", command="`retrieval-gate label-queue`")
    assert f"- ❌ ndcg@10 fell 46.9 pt on intent=billing (p = 0.008) — {note}" in markdown
    assert "- ❌ ndcg@10 fell 37.6 pt on intent=how-to (p = 0.008)" in markdown
    html = render(record, "html")
    note = GAP.format(arrow="→", command="<code>retrieval-gate label-queue</code>")
    assert f"❌ ndcg@10 fell 46.9 pt on intent=billing (p = 0.008) — {note}</li>" in html
    assert "❌ ndcg@10 fell 37.6 pt on intent=how-to (p = 0.008)</li>" in html
    summary = summary_of(record).splitlines()
    note = GAP.format(arrow="->", command="`retrieval-gate label-queue`")
    at = summary.index("  x ndcg@10 fell 46.9 pt on intent=billing (p = 0.008)")
    assert summary[at + 1] == f"    {note}"
    at = summary.index("  x ndcg@10 fell 37.6 pt on intent=how-to (p = 0.008)")
    assert summary[at + 1].startswith("  x ")
    annotations = annotations_of(record)
    at = annotations.index(
        ("error", "ndcg@10 fell 46.9 pt on intent=billing (p = 0.008): regressed")
    )
    assert annotations[at + 1] == (
        "warning",
        f"ndcg@10 fell 46.9 pt on intent=billing (p = 0.008): {note}",
    )
    at = annotations.index(
        ("error", "ndcg@10 fell 37.6 pt on intent=how-to (p = 0.008): regressed")
    )
    assert annotations[at + 1][0] == "error"
    import xml.etree.ElementTree as ET

    messages = {
        case.get("name"): failure.get("message")
        for case in ET.fromstring(render(record, "junit")).iter("testcase")
        if (failure := case.find("failure")) is not None
        and case.get("classname", "").endswith(".ndcg@10")
    }
    note = GAP.format(arrow="→", command="retrieval-gate label-queue")
    assert (
        messages["intent=billing"] == f"ndcg@10 fell 46.9 pt on intent=billing (p = 0.008) — {note}"
    )
    assert messages["intent=how-to"] == "ndcg@10 fell 37.6 pt on intent=how-to (p = 0.008)"


def test_the_unjudged_note_shows_judged_at_k_before_and_after(regressed: dict[str, Any]) -> None:
    unjudged = regressed["unjudged"]
    assert unjudged["judged_before"] > unjudged["judged_after"]
    shown = "part of a drop there may be a labelling gap (judged@10 0.20 → 0.17; 486 of 590"
    assert shown in render(regressed, "markdown")
    assert shown in render(regressed, "html")


def test_malformed_labelling_gaps_are_named(regressed: dict[str, Any]) -> None:
    gap = {**regressed["labelling_gaps"][0], "judged_before": "most"}
    with pytest.raises(InputError, match=r"labelling_gaps\.0\.judged_before"):
        render({**regressed, "labelling_gaps": [gap]}, "markdown")
    unjudged = {k: v for k, v in regressed["unjudged"].items() if k != "judged_after"}
    with pytest.raises(InputError, match=r"unjudged\.judged_after"):
        render({**regressed, "unjudged": unjudged}, "markdown")
    assert render({**regressed, "labelling_gaps": []}, "markdown").count("labelling gap") == 1
