"""`comment` prints no more annotations than GitHub shows, and says how many more there are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.pipeline.check import check
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS


@pytest.fixture(scope="module")
def regressed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled regressed example's result: 17 failing checks, 15 inconclusive ones."""
    result = check(CONFIGS / "example-regressed.yaml", cache=False)
    path = tmp_path_factory.mktemp("result") / "result.json"
    path.write_text(json.dumps(result.document()))
    return path


def annotations(*argv: str) -> list[tuple[str, str]]:
    code, out, err = run_cli("comment", *argv, "--no-summary")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("::")]
    return [(line[2:].split(" ", 1)[0], line.split("::", 2)[2]) for line in lines]


def test_at_most_ten_of_each_kind_the_last_counting_the_rest(regressed: Path) -> None:
    document = json.loads(regressed.read_text())
    failures = document["failures"]
    assert len(failures) > 10  # the example shows the limit
    shown = annotations(str(regressed), "--no-pr-comment")
    errors = [message for level, message in shown if level == "error"]
    warnings = [message for level, message in shown if level == "warning"]
    assert len(errors) == 10
    assert len(warnings) <= 10
    # The worst failures first, as the result orders them; the tenth says what is left.
    for message, failure in zip(errors[:9], failures, strict=False):
        assert message.startswith(f"{failure['metric']} fell")
    assert errors[9].startswith(f"and {len(failures) - 9} more failing checks")
    assert "step summary" in errors[9]


def test_a_warning_is_kept_for_the_pull_request_comment(regressed: Path) -> None:
    shown = annotations(str(regressed), "--no-pr-comment")
    assert len([1 for level, _ in shown if level == "warning"]) == 10
    # With the comment to publish (no token here: it warns instead), its warning is the tenth.
    argv = ["comment", str(regressed), "--no-summary", "--repo", "o/r", "--pr", "1"]
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GITHUB_TOKEN", raising=False)
        code, out, err = run_cli(*argv)
    assert code == 0, err
    warnings = [line for line in out.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 10
    assert "more warnings" in warnings[8]
    assert "not commenting: no token" in warnings[9]


def test_a_non_finite_number_in_a_result_is_exit_2_naming_its_field(
    regressed: Path, tmp_path: Path
) -> None:
    text = regressed.read_text().replace('"delta": ', '"delta": NaN, "was": ', 1)
    forged = tmp_path / "forged.json"
    forged.write_text(text)
    code, _, err = run_cli("comment", str(forged), "--no-pr-comment", "--no-summary")
    assert code == 2, err
    assert "forged.json" in err
    assert "failures.0.delta is not a finite number" in err


def test_a_report_too_long_for_any_cut_section_is_cut_and_says_so(
    regressed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = json.loads(regressed.read_text())
    document["comparisons"] = document["comparisons"] * (20_000 // len(document["comparisons"]))
    forged = tmp_path / "many.json"
    forged.write_text(json.dumps(document))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, _, err = run_cli("comment", str(forged), "--no-pr-comment", "--no-annotations")
    assert code == 0, err
    text = summary.read_text(encoding="utf-8")
    assert len(text) <= 1_000_000
    assert text.rstrip().endswith("the whole report is in the job's `report.md` and `result.json`.")
    assert "This report was cut at 1,000,000 characters" in text
