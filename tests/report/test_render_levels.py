"""Reports of a chunked corpus: the other level's table after the gating level's, pinned; its
failures named with their level and their own label holes; hostile levels refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.pipeline.check import check
from retrieval_gate.report import render, validate_result
from retrieval_gate.report.render import annotations_of, summary_of
from tests.helpers.chunkings import copy_chunked_example
from tests.helpers.report import check_golden, elements

PR = "example-chunked-pr.yaml"


def _result(root: Path, other_level: str) -> dict[str, Any]:
    """The chunked example's pull request (chunks of 200 characters for 300), gated at the
    document level with the chunk level as `other_level` says."""
    project = copy_chunked_example(root / "project")
    text = (project / PR).read_text(encoding="utf-8")
    path = project / f"{other_level}.yaml"
    path.write_text(
        text.replace("  level: document\n", f"  level: document\n  other_level: {other_level}\n"),
        encoding="utf-8",
    )
    return json.loads(check(path, cache=False).to_json())


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _result(tmp_path_factory.mktemp("gated"), "gate")


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _result(tmp_path_factory.mktemp("reported"), "report")


@pytest.mark.parametrize(("fmt", "suffix"), [("markdown", "md"), ("html", "html")])
def test_each_format_is_pinned(gated: dict[str, Any], fmt: Any, suffix: str) -> None:
    check_golden(f"levels.{suffix}", render(gated, fmt))


def test_the_terminal_summary_is_pinned(gated: dict[str, Any]) -> None:
    check_golden("levels.summary.txt", summary_of(validate_result(gated)))


def test_junit_tests_the_other_level_only_when_it_gates(
    gated: dict[str, Any], reported: dict[str, Any]
) -> None:
    both, one = render(gated, "junit"), render(reported, "junit")
    assert both.count("<testcase ") == len(gated["comparisons"]) + len(
        gated["other_level"]["comparisons"]
    )
    assert one.count("<testcase ") == len(reported["comparisons"])
    assert 'classname="retrieval-gate.example-chunked-pr.chunk-level.rr@10" name="all"' in both
    assert f'failures="{len(gated["failures"])}"' in both
    assert "chunk-level" not in one


def test_the_other_level_s_table_follows_the_gating_level_s(reported: dict[str, Any]) -> None:
    summary = summary_of(validate_result(reported))
    first = summary.index("at the document level (chunks rolled up to their source documents):")
    second = summary.index("at the chunk level, report only: the gate decides at the document")
    assert first < second
    assert summary.startswith("retrieval-gate example-chunked-pr: PASS;")
    markdown = render(reported, "markdown")
    assert markdown.index("**At the document level") < markdown.index("**At the chunk level**")
    rows = [r for r in elements(render(reported, "html")).cells if r and r[1] == "all"]
    # The chunk level's overall rows, would-be regressions that fail nothing.
    assert [r[0] for r in rows] == ["regressed"] * 3
    assert "❌" not in markdown.split("**At the chunk level**")[1]


def test_a_gated_level_s_failures_say_their_level_and_their_own_label_holes(
    gated: dict[str, Any],
) -> None:
    summary = summary_of(validate_result(gated))
    assert summary.startswith("retrieval-gate example-chunked-pr: FAIL; rr@10 fell 97.6 pt on ")
    assert "  x rr@10 fell 88.8 pt at the chunk level (p < 0.001)\n    depends on 2083 " in summary
    assert "gated too: each level's checks at half of alpha" in summary
    errors = [message for level, message in annotations_of(validate_result(gated))]
    assert errors
    assert all("at the chunk level" in message for message in errors)
    # The document level passed: its checks have no bounds, so none was borrowed.
    assert not gated["label_holes"]
    assert gated["other_level"]["label_holes"]


def test_an_unchunked_result_has_no_level_headings(tmp_path: Path) -> None:
    from tests.helpers.builders import copy_example

    document = json.loads(check(copy_example(tmp_path) / "example.yaml", cache=False).to_json())
    for text in (render(document, "markdown"), summary_of(validate_result(document))):
        assert "level" not in text.lower().replace("level 0", "")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["other_level"].update(level="paragraph"), "other_level.level"),
        (lambda d: d["other_level"].update(gating_level="chunk"), "two levels differ"),
        (lambda d: d["other_level"]["comparisons"][0].update(view="document"), "has view"),
        (lambda d: d["comparisons"][0].update(view="chunk"), "have no view"),
        (
            lambda d: d["other_level"]["comparisons"][0].update(p_value=float("nan")),
            "p_value is a probability",
        ),
        (lambda d: d["other_level"].update(comparisons=[{"metric": "x"}] * 3), "other_level"),
    ],
)
def test_a_hostile_other_level_is_refused_by_name(
    reported: dict[str, Any], edit: Any, message: str
) -> None:
    document = copy.deepcopy(reported)
    edit(document)
    with pytest.raises(InputError, match=message):
        validate_result(document)


def test_control_characters_and_workflow_commands_in_its_checks_stay_text(
    reported: dict[str, Any],
) -> None:
    document = copy.deepcopy(reported)
    for check_ in document["other_level"]["comparisons"]:
        check_["metric"] = "::error::evil\x1b[31m\nnext"
    summary = summary_of(validate_result(document))
    assert "\x1b" not in summary
    assert not any(line.startswith("::") for line in summary.splitlines())
    markdown = render(document, "markdown")
    assert "\x1b" not in markdown
    assert "\nnext" not in markdown
