"""The main branch's trend in every report: attached, worded, drawn, and inert."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from markdown_it import MarkdownIt

from retrieval_gate.errors import InputError
from retrieval_gate.gate.result import canonical_json
from retrieval_gate.history.record import TrendPoint
from retrieval_gate.report import COMMENT_BUDGET, render, render_markdown, summary_of
from retrieval_gate.report import validate_result as validate
from retrieval_gate.report.trend import (
    BLOCKS,
    GAP,
    MARKERS_MAX,
    SPARK_WIDTH,
    sparkline,
    trend_svg,
    trend_views,
    with_trend,
)
from tests.helpers.paths import DOCS
from tests.helpers.report import GOLDEN, elements, trend_points, with_golden_trend

SVG = "{http://www.w3.org/2000/svg}"
DASH = "\u2013"  # en dash, of a range


@pytest.fixture(scope="module")
def regressed() -> dict[str, Any]:
    """The pinned regressed result: ndcg@10, recall@10 and rr@10 fail overall."""
    return dict(json.loads((GOLDEN / "regressed.json").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def passed(regressed: dict[str, Any]) -> dict[str, Any]:
    """The same result with every check passing (only the primary metric's trend shows)."""
    rows = [
        {**c, "verdict": "pass" if c["verdict"] else None, "failed": False}
        for c in regressed["comparisons"]
    ]
    return {**regressed, "status": "pass", "comparisons": rows, "failures": []}


def points(*values: float | None, hostile: str = "") -> list[TrendPoint]:
    return [
        TrendPoint(
            commit=hostile or f"{i:040x}",
            pr=10 + i,
            time=f"2026-11-0{1 + i % 9}T00:00:00Z",
            value=math.nan if v is None else v,
        )
        for i, v in enumerate(values)
    ]


def shown(document: dict[str, Any]) -> dict[str, str]:
    record = validate(document)
    return {
        "markdown": render(record, "markdown"),
        "html": render(record, "html"),
        "summary": summary_of(record),
    }


def trend_lines(markdown: str) -> list[str]:
    start = markdown.index("**Trend on ")
    block = markdown[start : markdown.index("\n\n<details>", start)]
    return [line for line in block.splitlines() if line.startswith("- ")]


# --------------------------------------------------------------------------------------------
# with_trend: the document the lead's code attaches the history to
# --------------------------------------------------------------------------------------------


def test_with_trend_adds_a_section_and_leaves_its_input_alone(regressed: dict[str, Any]) -> None:
    before = json.dumps(regressed)
    document = with_trend(
        regressed,
        {
            "NDCG@10": points(0.5, None, 0.7),  # canonicalised to the result's ndcg@10
            "unknown@10": points(0.1),  # not compared by this result: dropped
            "rr@10": [{"commit": "abc", "pr": True, "time": 5, "value": "high"}],
        },
        branch="trunk",
    )
    assert json.dumps(regressed) == before
    trend = document["trend"]
    assert trend["branch"] == "trunk"
    assert [s["metric"] for s in trend["series"]] == ["ndcg@10", "rr@10"]  # the result's order
    assert [p["value"] for p in trend["series"][0]["points"]] == [0.5, None, 0.7]
    assert trend["series"][1]["points"] == [
        {"commit": "abc", "pr": None, "time": "5", "value": None}
    ]
    assert list(document)[:-1] == list(regressed)  # appended last: the rest keeps its order
    canonical_json(document)  # no NaN reaches the JSON
    assert render(document, "json") == canonical_json(document)


def test_with_trend_keeps_the_last_n_points_and_drops_an_empty_trend(
    regressed: dict[str, Any],
) -> None:
    document = with_trend(regressed, {"ndcg@10": points(0.1, 0.2, 0.3, 0.4)}, last=2)
    assert [p["value"] for p in document["trend"]["series"][0]["points"]] == [0.3, 0.4]
    assert "trend" not in with_trend(regressed, {"unknown@10": points(0.1)})
    assert "trend" not in with_trend(document, {})  # a second call replaces the section
    assert with_trend(regressed, {"ndcg@10": points(0.5)}) == with_trend(
        regressed, {"ndcg@10": points(0.5)}
    )


def test_an_error_result_takes_no_trend() -> None:
    from retrieval_gate.gate.result import error_document

    error = error_document("x", "no baseline")
    assert with_trend(error, {"ndcg@10": points(0.5)}) == error


def test_a_result_without_a_trend_renders_as_before(regressed: dict[str, Any]) -> None:
    record = validate(regressed)
    assert record.trend is None
    assert trend_views(record) == []
    assert "Trend on" not in render(record, "markdown")
    assert "Trend on" not in render(record, "html")
    assert "trend on" not in summary_of(record)


def test_a_malformed_trend_is_named(regressed: dict[str, Any]) -> None:
    document = with_trend(regressed, {"ndcg@10": points(0.5)})
    bad = json.loads(json.dumps(document))
    bad["trend"]["series"][0]["points"][0]["value"] = "lots"
    with pytest.raises(InputError, match=r"trend\.series\.0\.points\.0\.value"):
        validate(bad)
    bad["trend"]["series"][0]["points"][0] = {"value": 0.5}
    with pytest.raises(InputError, match=r"trend\.series\.0\.points\.0\.commit"):
        validate(bad)
    bad["trend"]["series"][0]["points"][0] = {"commit": "a", "pr": True, "value": 0.5}
    with pytest.raises(InputError, match=r"trend\.series\.0\.points\.0\.pr"):
        validate(bad)


def test_a_nan_in_a_hand_written_result_is_shown_as_missing(regressed: dict[str, Any]) -> None:
    document = with_trend(regressed, {"ndcg@10": points(0.5, 0.6)})
    text = json.dumps(document).replace('"value": 0.6', '"value": NaN')
    views = trend_views(validate(json.loads(text)))
    assert views[0].values == (0.5, None)
    assert views[0].missing == 1


# --------------------------------------------------------------------------------------------
# What each report says
# --------------------------------------------------------------------------------------------


def test_the_primary_metric_and_each_failing_one_are_shown(
    regressed: dict[str, Any], passed: dict[str, Any]
) -> None:
    trend = {m: points(0.5, 0.6) for m in ("ndcg@10", "recall@10", "rr@10")}
    trend["ndcg(gain=linear)@10"] = points(0.5)  # report only, not failing: not shown
    failing = trend_views(validate(with_trend(regressed, trend)))
    assert [v.metric for v in failing] == ["ndcg@10", "rr@10", "recall@10"]
    assert all(v.failing for v in failing)
    passing = trend_views(validate(with_trend(passed, trend)))
    assert [(v.metric, v.failing) for v in passing] == [("ndcg@10", False)]


@pytest.mark.parametrize(
    ("values", "markdown", "summary"),
    [
        (
            (),
            "main has no recorded results yet; this PR: 0.5852.",
            "ndcg@10 no value over 0 merges, this PR 0.5852",
        ),
        (
            (None,),
            "main's last merge recorded no value of it; this PR: 0.5852.",
            "ndcg@10 no value over 1 merge, this PR 0.5852",
        ),
        (
            (0.65,),
            "main was 0.6500 at its last merge, 000000000000 (#10); this PR: 0.5852, below it.",
            "ndcg@10 0.6500 over 1 merge, this PR 0.5852 (below)",
        ),
        (
            (0.5, 0.55),
            f"main moved within 0.5000{DASH}0.5500 over the last 2 merges, up to "
            "000000000000 (#11); this PR: 0.5852, above that range.",
            "ndcg@10 0.5000-0.5500 over 2 merges, this PR 0.5852 (above)",
        ),
        (
            (0.5852, 0.5852),
            "main stayed at 0.5852 over the last 2 merges, up to 000000000000 (#11); this PR: "
            "0.5852, equal to it.",
            "ndcg@10 0.5852 over 2 merges, this PR 0.5852 (within)",
        ),
        (
            (0.5, None, 0.7),
            f"main moved within 0.5000{DASH}0.7000 over the last 3 merges (1 without a value), "
            "up to 000000000000 (#12); this PR: 0.5852, within that range.",
            "ndcg@10 0.5000-0.7000 over 3 merges, this PR 0.5852 (within)",
        ),
    ],
)
def test_zero_one_two_and_missing_points_are_worded_in_every_format(
    passed: dict[str, Any], values: tuple[float | None, ...], markdown: str, summary: str
) -> None:
    text = shown(with_trend(passed, {"ndcg@10": points(*values)}))
    (line,) = trend_lines(text["markdown"])
    assert line.endswith(f"`: {markdown}")
    assert f'<p class="trend">{markdown}</p>' in text["html"]
    (found,) = [line for line in text["summary"].splitlines() if line.startswith("trend on main: ")]
    assert summary in found


def test_values_are_compared_as_shown(passed: dict[str, Any]) -> None:
    # 0.58521 and 0.58524 both read 0.5852: main "stayed", and so did this PR (0.5852...).
    text = shown(with_trend(passed, {"ndcg@10": points(0.58521, 0.58524)}))
    (line,) = trend_lines(text["markdown"])
    assert "main stayed at 0.5852 over the last 2 merges" in line
    assert line.endswith("this PR: 0.5852, equal to it.")
    assert "ndcg@10 0.5852 over 2 merges, this PR 0.5852 (within)" in text["summary"]


def test_the_sparkline_marks_this_pr_apart_from_main(passed: dict[str, Any]) -> None:
    inside = trend_views(validate(with_trend(passed, {"ndcg@10": points(0.5, 0.6, 0.7)})))[0]
    assert (inside.spark, inside.spark_pr) == ("▁▅█", "▄")
    below = trend_views(validate(with_trend(passed, {"ndcg@10": points(0.7, 0.8)})))[0]
    assert (below.spark, below.spark_pr, below.position) == ("▁█", "↓", "below")
    above = trend_views(validate(with_trend(passed, {"ndcg@10": points(0.3, None, 0.4)})))[0]
    assert (above.spark, above.spark_pr, above.position) == ("▁·█", "↑", "above")
    markdown = render(with_trend(passed, {"ndcg@10": points(0.7, 0.8)}), "markdown")
    assert "- ndcg@10 `▁█┊↓`: main moved within" in markdown


def test_sparkline_levels() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([0.2, 0.2]) == BLOCKS[3] * 2  # flat: the middle
    assert sparkline([None, None]) == GAP * 2
    assert sparkline([]) == ""
    assert sparkline([2.0], scale=[0.0, 1.0]) == "█"  # clamped to the scale


def test_five_hundred_merges_keep_the_pr_comment_small(regressed: dict[str, Any]) -> None:
    metrics = ("ndcg@10", "recall@10", "rr@10", "ndcg(gain=linear)@10")
    document = with_trend(regressed, {m: trend_points(500) for m in metrics})
    record = validate(document)
    comment = render_markdown(record, limit=COMMENT_BUDGET)
    plain = render_markdown(validate(regressed), limit=COMMENT_BUDGET)
    assert "Trimmed" not in comment
    assert len(comment) - len(plain) < 2_000  # three metrics shown, each one short line
    assert len(comment) < COMMENT_BUDGET // 2
    lines = trend_lines(comment)
    assert len(lines) == 3
    for line in lines:
        spark = line.split("`")[1]
        assert len(spark.split("┊")[0]) == SPARK_WIDTH
        assert line.endswith(f"<sub>500 merges drawn as 60 bars, each the mean of 8{DASH}9.</sub>")
    assert "over the last 500 merges (1 without a value)" in lines[0]
    html = render(record, "html")
    section = html[html.index('<h2 id="trend">') :]
    assert section.count("<circle") == 0  # past MARKERS_MAX, the line alone
    assert section.count("<polyline") == 3 * 2  # each split once, at the missing value
    # A comment that must be trimmed keeps its trend: it is never what is cut.
    tight = render_markdown(record, limit=8_000)
    assert "Trimmed to fit a GitHub comment" in tight
    assert len(trend_lines(tight)) == 3


def test_the_trend_renders_deterministically(regressed: dict[str, Any]) -> None:
    document = with_golden_trend(regressed)
    again = json.loads(json.dumps(document))
    for fmt in ("markdown", "html", "json"):
        assert render(document, fmt) == render(again, fmt)  # type: ignore[arg-type]
    assert summary_of(validate(document)) == summary_of(validate(again))


# --------------------------------------------------------------------------------------------
# The SVG chart
# --------------------------------------------------------------------------------------------


def chart(document: dict[str, Any], index: int = 0) -> ET.Element:
    view = trend_views(validate(document))[index]
    return ET.fromstring(str(trend_svg(view, index)))


def test_the_chart_is_accessible_svg_with_main_s_points_and_this_pr_apart(
    passed: dict[str, Any],
) -> None:
    svg = chart(with_trend(passed, {"ndcg@10": points(0.5, 0.55, None, 0.52)}))
    assert svg.get("role") == "img"
    assert svg.get("aria-labelledby") == "trend-0-title trend-0-desc"
    title = svg.find(f"{SVG}title")
    desc = svg.find(f"{SVG}desc")
    assert title is not None
    assert desc is not None
    assert title.text == "ndcg@10 on main: the last 4 merges, and this PR"
    assert desc.text == (
        "ndcg@10: main moved within 0.5000-0.5500 over the last 4 merges; this PR: 0.5852, "
        "above main's range"
    )
    circles = svg.findall(f"{SVG}circle")
    assert len(circles) == 3  # one per value; the missing one is a cross
    tips = [c.findtext(f"{SVG}title") for c in circles]
    assert tips[0] == ("000000000000 #10, 2026-11-01T00:00:00Z: 0.5000")
    assert len(svg.findall(f"{SVG}polyline")) == 1  # 0.5, 0.55 joined; 0.52 alone after a gap
    (diamond,) = svg.findall(f"{SVG}path")
    assert diamond.findtext(f"{SVG}title") == "this PR: 0.5852, above main's range"
    assert diamond.get("fill") == "#1a7f37"
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "this PR" in texts
    assert "4 merges on main, oldest to newest" in texts
    assert "000000000000 #10" in texts  # the oldest under the line's left end
    assert "000000000000 #13" in texts  # the newest under its right end


@pytest.mark.parametrize("count", [0, 1, 2, MARKERS_MAX + 1])
def test_the_chart_draws_any_number_of_points(passed: dict[str, Any], count: int) -> None:
    values = [0.5 + 0.01 * (i % 5) for i in range(count)]
    svg = chart(with_trend(passed, {"ndcg@10": points(*values)}))
    circles = svg.findall(f"{SVG}circle")
    assert len(circles) == (count if count <= MARKERS_MAX else 0)
    assert len(svg.findall(f"{SVG}polyline")) == (1 if count >= 2 else 0)
    assert len(svg.findall(f"{SVG}path")) == 1  # this PR, always
    for element in svg.iter():
        for name in ("x", "y", "cx", "cy", "width", "height"):
            value = element.get(name)
            if value is not None:
                assert math.isfinite(float(value)), (element.tag, name, value)


def test_several_charts_on_one_page_keep_their_ids_apart(regressed: dict[str, Any]) -> None:
    html = render(with_golden_trend(regressed), "html")
    ids = [f'id="trend-{i}-title"' for i in range(3)]
    assert all(html.count(found) == 1 for found in ids)


# --------------------------------------------------------------------------------------------
# Untrusted labels: commits, PR labels, branch names, reach no sink as markup or a command
# --------------------------------------------------------------------------------------------

HOSTILE = (
    "<script>x</s",
    "\x1b[31m::error",
    "\n::error::x\n",
    "[a](http://e",
    "@team #12 |`",
    "<img src=x/>",
)
"""Commits whose first 12 characters (what the reports show) carry markup or a command."""
BRANCH = "main<img src=x onerror=alert(1)>\n::warning::b\x1b[2J"


@pytest.fixture(scope="module", params=HOSTILE)
def hostile(request: pytest.FixtureRequest, passed: dict[str, Any]) -> dict[str, str]:
    trend = {"ndcg@10": points(0.5, 0.6, hostile=request.param)}
    return shown(with_trend(passed, trend, branch=BRANCH))


def test_hostile_labels_are_inert_in_the_markdown(hostile: dict[str, str]) -> None:
    markdown = hostile["markdown"]
    assert "\x1b" not in markdown
    assert "<script>" not in markdown
    assert "<img" not in markdown
    found = elements(MarkdownIt("gfm-like").render(markdown))
    assert not {"script", "img", "a"} & set(found.tags)
    (line,) = trend_lines(markdown)  # one line each, whatever the labels hold
    branch = "main&lt;img src=x onerror=alert(1)&gt; ::warning::b?\\[2J"  # newline: a space
    assert line.startswith(f"- ndcg@10 `▁█┊▇`: {branch} moved within 0.5000{DASH}0.6000")
    assert f"**Trend on {branch}**" in markdown
    assert not any(row.lstrip().startswith("::") for row in markdown.splitlines())


def test_hostile_labels_are_inert_in_the_html(hostile: dict[str, str]) -> None:
    html = hostile["html"]
    assert "\x1b" not in html
    assert "<script>" not in html
    found = elements(html)
    assert not {"script", "img", "a", "iframe"} & set(found.tags)
    start = html.index('<h2 id="trend">')
    section = html[start : html.index("</svg>", start) + len("</svg>")]
    assert "main&lt;img src=x onerror=alert(1)&gt;" in section
    svg = ET.fromstring(section[section.index("<svg") :])  # well-formed: every label escaped
    tips = [c.findtext(f"{SVG}title") or "" for c in svg.findall(f"{SVG}circle")]
    assert len(tips) == 2
    assert all("\n" not in tip and tip.endswith(("0.5000", "0.6000")) for tip in tips)


def test_hostile_labels_are_inert_in_the_console_summary(hostile: dict[str, str]) -> None:
    summary = hostile["summary"]
    assert "\x1b" not in summary
    lines = [line for line in summary.splitlines() if line.startswith("trend on ")]
    assert len(lines) == 1  # the newlines inside the labels did not break it
    assert not any(line.lstrip().startswith("::") for line in summary.splitlines())
    assert lines[0].endswith(" (#11)")


def test_hostile_labels_are_inert_in_the_json(passed: dict[str, Any]) -> None:
    for commit in HOSTILE:
        document = with_trend(passed, {"ndcg@10": points(0.5, hostile=commit)}, branch=BRANCH)
        text = render(document, "json")
        assert "\x1b" not in text
        assert "\n::" not in text
        assert json.loads(text)["trend"]["series"][0]["points"][0]["commit"] == commit


def test_the_docs_screenshot_exists() -> None:
    image = DOCS / "trend-example.png"
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
