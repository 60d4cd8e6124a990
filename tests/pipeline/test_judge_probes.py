"""The probes' report: when it makes the judge provisional, and the re-ask's spread by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.datasets.llm_layer import LlmJudgment
from retrieval_gate.errors import InputError
from retrieval_gate.judging.probes import CUT, STUFFED, ProbeRate
from retrieval_gate.pipeline.judge_probes import (
    ProbeReport,
    ReAsked,
    read_verdict,
    reasked_of,
    write_verdict,
)


def _row(query: str, doc: str, grade: int) -> LlmJudgment:
    return LlmJudgment(query, doc, grade, "judge-1", "sha", str(grade), "2026-12-06T00:00:00Z")


def test_the_spread_of_a_re_ask_by_hand() -> None:
    grades = {("original", "q1", "a"): 3, ("original", "q1", "b"): 0, ("original", "q2", "a"): 2}
    again = [_row("q1", "a", 1), _row("q1", "b", 0), _row("q2", "a", 3)]
    found = reasked_of(grades, again)
    assert found == ReAsked(3, 2, 3)  # |3-1| + |0-0| + |2-3|
    assert found.share == 2 / 3
    assert found.mean_moved == 1.0
    assert ReAsked(0, 0, 0).share is None


def test_one_kind_above_the_limit_makes_the_judge_provisional_undiluted() -> None:
    # 3 of 10 stuffed probes flipped: 0.3 > 0.2, though all 90 probes flipped at 0.033.
    report = ProbeReport((ProbeRate(CUT, 80, 0), ProbeRate(STUFFED, 10, 3)), 0.2, 90, 0, ())
    assert report.total == ProbeRate("all", 90, 3)
    assert report.why_not == (
        "3 of 10 stuffed robustness probes flipped (rate 0.30, above "
        "judge.probes.max_flip_rate 0.2)"
    )
    at_limit = ProbeReport((ProbeRate(CUT, 5, 1), ProbeRate(STUFFED, 0, 0)), 0.2, 5, 0, ())
    assert at_limit.why_not == ""  # 0.2 is not above 0.2; no stuffed probe says nothing


def test_the_recorded_verdict_is_read_back_for_its_judge_only(tmp_path: Path) -> None:
    layer = tmp_path / "test.llm.jsonl"
    report = ProbeReport((ProbeRate(CUT, 4, 0), ProbeRate(STUFFED, 4, 4)), 0.1, 8, 0, ())
    path = write_verdict(layer, "judge-1", "sha", report)
    assert path == tmp_path / "test.llm.jsonl.probes.json"
    assert read_verdict(layer, "judge-1", "sha") == report.why_not != ""
    assert read_verdict(layer, "judge-2", "sha") == ""  # another judge: not its verdict
    assert read_verdict(tmp_path / "other.jsonl", "judge-1", "sha") == ""  # none recorded
    before = path.read_bytes()
    write_verdict(layer, "judge-1", "sha", report)
    assert path.read_bytes() == before  # the same probing, the same bytes


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"model": "judge-1", "prompt_sha256": "sha", "provisional_reason": NaN}',
        b'{"model": "judge-1", "prompt_sha256": "sha"}',
        b"\xff\xfe::error::x",
        b'{"model": ' * 100_000,
    ],
)
def test_a_broken_record_is_exit_2_naming_the_file(tmp_path: Path, content: bytes) -> None:
    layer = tmp_path / "test.llm.jsonl"
    (tmp_path / "test.llm.jsonl.probes.json").write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_verdict(layer, "judge-1", "sha")
    assert caught.value.source == str(tmp_path / "test.llm.jsonl.probes.json")
    assert "calibrate --probes" in str(caught.value)


def test_a_hostile_recorded_reason_reaches_reports_on_one_line_and_cut(tmp_path: Path) -> None:
    layer = tmp_path / "test.llm.jsonl"
    reason = "x\n::error::owned\x1b[2J" + "y" * 10_000
    document = {"model": "judge-1", "prompt_sha256": "sha", "provisional_reason": reason}
    (tmp_path / "test.llm.jsonl.probes.json").write_text(json.dumps(document))
    read = read_verdict(layer, "judge-1", "sha")
    assert read.startswith("x ::error::owned?[2Jyyy")
    assert "\n" not in read
    assert len(read) <= 503
