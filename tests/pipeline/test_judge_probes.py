"""The probes' report: when it makes the judge provisional, and the re-ask's spread by hand."""

from __future__ import annotations

from retrieval_gate.datasets.llm_layer import LlmJudgment
from retrieval_gate.judging.probes import CUT, STUFFED, ProbeRate
from retrieval_gate.pipeline.judge_probes import ProbeReport, ReAsked, reasked_of


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
