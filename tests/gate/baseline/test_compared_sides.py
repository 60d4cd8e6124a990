"""A chunked corpus's two levels in one run: the one dataset.level names gates, the other is
reported beside it (or gates too, each at half of alpha, or is off); an unchunked corpus has
no other level."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.errors import CannotFailError, NotComparableError
from retrieval_gate.gate.baseline.compared_sides import compared_sides
from retrieval_gate.gate.baseline.record import restricted_record
from retrieval_gate.gate.checks.compare import Comparison, Threshold
from retrieval_gate.gate.checks.policy import gate_settings, gate_thresholds
from retrieval_gate.gate.decide import other_level_checks
from retrieval_gate.gate.result import GateResult
from retrieval_gate.pipeline.check import check
from tests.helpers.builders import copy_example
from tests.helpers.chunkings import copy_chunked_example
from tests.helpers.cli import run_cli

PR = "example-chunked-pr.yaml"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_chunked_example(tmp_path_factory.mktemp("levels") / "project")


def _config(project: Path, name: str, *edits: tuple[str, str]) -> Path:
    """The pull request's config with each (old, new) text edit, as `name`."""
    text = (project / PR).read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = project / name
    path.write_text(text, encoding="utf-8")
    return path


def _table(checks: tuple[Comparison, ...]) -> dict[tuple[str, str], tuple[float, float, str]]:
    return {(c.metric, c.slice): (c.baseline_mean, c.current_mean, c.verdict or "") for c in checks}


@pytest.fixture(scope="module")
def at_document(project: Path) -> GateResult:
    return check(project / PR, cache=False)


@pytest.fixture(scope="module")
def at_chunk(project: Path) -> GateResult:
    return check(_config(project, "chunk.yaml", ("level: document", "level: chunk")), cache=False)


def test_each_level_reports_the_other_as_it_gates_alone(
    at_document: GateResult, at_chunk: GateResult
) -> None:
    assert at_document.other_level is not None
    assert at_chunk.other_level is not None
    assert (at_document.other_level.level, at_chunk.other_level.level) == ("chunk", "document")
    # The same numbers and verdicts as the run that gates at that level.
    assert _table(at_document.other_level.comparisons) == _table(at_chunk.comparisons)
    assert _table(at_chunk.other_level.comparisons) == _table(at_document.comparisons)
    assert {c.view for c in at_document.other_level.comparisons} == {"chunk"}


def test_a_reported_level_fails_nothing_and_its_bounds_come_along(
    at_document: GateResult, at_chunk: GateResult
) -> None:
    # The chunk level regresses here (the split labels' chunks are unjudged), reported only.
    other = at_document.other_level
    assert other is not None
    assert not other.gated
    would = [c for c in other.comparisons if c.gated and c.verdict == "regressed"]
    assert would
    assert not any(c.failed for c in other.comparisons)
    assert at_document.status == "pass"
    assert at_chunk.status == "fail"
    holes = {(h.metric, h.slice): h for h in other.label_holes}
    assert all(not holes[(c.metric, c.slice)].robust for c in would)
    # The same bounds as the run that gates at that level, down to which are proven.
    assert other.label_holes == at_chunk.label_holes
    assert any(h.exact for h in other.label_holes)


def test_gating_both_levels_fails_on_either_and_halves_each_family_s_alpha(
    project: Path, at_document: GateResult
) -> None:
    both = check(
        _config(
            project,
            "both.yaml",
            ("  level: document\n", "  level: document\n  other_level: gate\n"),
        ),
        cache=False,
    )
    assert both.other_level is not None
    assert both.other_level.gated
    assert both.status == "fail"
    assert {c.view for c in both.failures} == {"chunk"}
    assert at_document.other_level is not None
    pairs = [
        (at_document.comparisons, both.comparisons),
        (at_document.other_level.comparisons, both.other_level.comparisons),
    ]
    for alone, halved in pairs:
        levels = [(a.level, h.level) for a, h in zip(alone, halved, strict=True) if a.level]
        assert levels
        assert all(h == pytest.approx(a / 2) for a, h in levels)
    # Weighted Holm within each family: its levels sum to its alpha; both to gate.alpha.
    gated = [c.level for c in (*both.comparisons, *both.other_level.comparisons) if c.level]
    assert sum(gated) == pytest.approx(0.05)


def test_off_computes_no_other_level(project: Path) -> None:
    off = check(
        _config(
            project, "off.yaml", ("  level: document\n", "  level: document\n  other_level: off\n")
        ),
        cache=False,
    )
    assert off.other_level is None
    assert "other_level" not in off.document()


def test_an_unchunked_corpus_has_no_other_level(tmp_path: Path) -> None:
    result = check(copy_example(tmp_path) / "example.yaml", cache=False)
    assert result.other_level is None
    assert "other_level" not in json.dumps(result.document())


def test_a_level_that_cannot_be_reported_is_a_note_and_refuses_only_when_it_gates(
    project: Path,
) -> None:
    from retrieval_gate.config.loader import load

    text = (project / "example-chunked.yaml").read_text(encoding="utf-8")
    path = project / "unchanged.yaml"
    path.write_text(text.replace("level: document", "level: chunk"), encoding="utf-8")
    result = check(path, cache=False)
    assert result.other_level is not None  # the chunking is the baseline's: no re-chunk
    config = load(path)
    # As under the judge's labels: a layer of chunks, which does not roll up to documents.
    llm = config.model_copy(update={"gate": config.gate.model_copy(update={"labels": "human+llm"})})
    assert llm.gate.uses_llm_labels
    sides = compared_sides(result.baseline, result.current, result.dataset, llm)
    assert sides.other is None
    assert sides.notes == (
        "the document level is not reported: gate.labels human+llm reads the judge's labels "
        "of chunks, which do not roll up to documents: set dataset.other_level to off or "
        "report, or gate with people's labels alone (gate.labels: human)",
    )
    gating = llm.model_copy(
        update={"dataset": llm.dataset.model_copy(update={"other_level": "gate"})}
    )
    with pytest.raises(NotComparableError, match=r"the document level cannot gate: gate\.labels"):
        compared_sides(result.baseline, result.current, result.dataset, gating)


def test_yaml_s_unquoted_off_is_off_and_on_is_refused(project: Path) -> None:
    from retrieval_gate.config.loader import load

    edit = ("  level: document\n", "  level: document\n  other_level: on\n")
    code, _, err = run_cli("check", "-c", _config(project, "on.yaml", edit), "--no-cache")
    assert code == 2
    assert "dataset.other_level" in err
    off = load(_config(project, "no.yaml", (edit[0], edit[1].replace("on", "no"))))
    assert off.dataset.other_level == "off"


@pytest.mark.parametrize("value", ["both", '"::error::x\\u001b[31m"', "[gate, gate]"])
def test_the_config_refuses_an_unknown_other_level(project: Path, value: str) -> None:
    edit = ("  level: document\n", f"  level: document\n  other_level: {value}\n")
    code, _, err = run_cli("check", "-c", _config(project, "bad.yaml", edit), "--no-cache")
    assert code == 2
    assert "bad.yaml:13: dataset.other_level" in err
    assert "'report', 'gate' or 'off'" in err
    assert "\x1b" not in err
    assert not any(line.startswith("::") for line in err.splitlines())


def test_compare_re_decides_both_levels_from_a_saved_result(project: Path) -> None:
    saved, again = project / "saved.json", project / "again.json"
    code, _, _ = run_cli("check", "-c", project / PR, "--no-cache", "--quiet", "--json", saved)
    assert code == 0
    baseline = project / ".retrieval-gate" / "example-chunked" / "baseline.json"
    argv = ("compare", "-c", project / PR, baseline, saved, "--json", again, "--no-reports")
    code, out, _ = run_cli(*argv)
    assert code == 0
    assert "at the chunk level, report only: the gate decides at the document level:" in out
    first, second = (json.loads(path.read_text()) for path in (saved, again))
    assert second["other_level"] == first["other_level"]
    assert second["other_level"]["level"] == "chunk"


def test_the_other_level_takes_the_slice_overrides_and_refuses_only_when_it_gates_strictly(
    project: Path, at_document: GateResult
) -> None:
    config = load(project / PR)
    config = config.model_copy(
        update={"dataset": config.dataset.model_copy(update={"other_level": "gate"})}
    )
    other = compared_sides(at_document.baseline, at_document.current, at_document.dataset, config)
    assert other.other is not None
    thresholds, _ = gate_thresholds(config)
    settings = gate_settings(config)
    tighter = {"intent=billing": {"ndcg@10": Threshold(max_drop=0.01)}}
    found = other_level_checks(other.other, config, thresholds, tighter, settings)
    assert {(c.metric, c.max_drop) for c in found.comparisons if c.slice == "intent=billing"} == {
        ("ndcg@10", 0.01),
        ("recall@10", 0.07),
        ("rr@10", 0.06),
    }
    # 3 queries: the sign flips' smallest p is 1/8, past every check's level.
    keep = [q.id for q in other.other.dataset.queries][:3]
    few = dataclasses.replace(
        other.other,
        baseline=restricted_record(other.other.baseline, keep),
        current=restricted_record(other.other.current, keep),
        dataset=dataclasses.replace(
            other.other.dataset,
            queries=tuple(q for q in other.other.dataset.queries if q.id in set(keep)),
        ),
    )
    blind = "3 queries cannot give p <= "
    # Not strict (a sequential run's stopped part), or a level only reported: not gated.
    for level, strict in ((few, False), (dataclasses.replace(few, gated=False), True)):
        checks = other_level_checks(level, config, thresholds, {}, settings, strict=strict)
        assert [(c.gated, c.reason.startswith(blind)) for c in checks.comparisons] == [
            (False, True)
        ] * 3
    with pytest.raises(CannotFailError, match=f"could never fail: ndcg@10 overall: {blind}"):
        other_level_checks(few, config, thresholds, {}, settings)
