"""The calibration card: kappa and alpha as agreement.py gives them, confusion, bias, tau-b."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau

from retrieval_gate.stats.calibration import (
    CalibrationCard,
    calibration_card,
    kendall_tau_b,
    system_agreement,
)


def test_the_card_of_a_judge_that_over_grades_by_one() -> None:
    human = [0, 0, 1, 1, 2, 2, 3, 3, 0, 1]
    judge = [1, 0, 2, 1, 3, 2, 3, 3, 0, 2]
    card = calibration_card(human, judge)
    assert card.pairs == 10
    assert card.confusion == ((2, 1, 0, 0), (0, 1, 2, 0), (0, 0, 1, 1), (0, 0, 0, 2))
    assert [b.pairs for b in card.bias] == [3, 3, 2, 2]
    assert [b.bias for b in card.bias] == pytest.approx([1 / 3, 2 / 3, 0.5, 0.0])
    reference = krippendorff.alpha(
        reliability_data=np.array([human, judge], dtype=float), level_of_measurement="ordinal"
    )
    assert card.alpha == pytest.approx(reference, abs=1e-9)
    # Quadratic kappa is Lin's concordance of positions (Fleiss & Cohen 1973).
    a, b = np.array(human, float), np.array(judge, float)
    lin = 2 * np.cov(a, b, ddof=0)[0, 1] / (a.var() + b.var() + (a.mean() - b.mean()) ** 2)
    assert card.kappa == pytest.approx(lin, abs=1e-12)


def test_a_perfect_judge_agrees_fully_and_trust_needs_both_floors() -> None:
    grades = [0, 1, 2, 3] * 30
    card = calibration_card(grades, grades)
    assert card.kappa == pytest.approx(1.0)
    assert card.alpha == pytest.approx(1.0)
    assert card.trusted(100, 0.4)
    assert not card.trusted(200, 0.4)
    assert "only 120 pairs" in card.distrust(200, 0.4)
    assert card.distrust(100, 0.4) == ""


def test_a_low_kappa_is_not_trusted() -> None:
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 300)
    judge = rng.integers(0, 4, 300)
    card = calibration_card(human, judge)
    assert card.kappa is not None
    assert abs(card.kappa) < 0.2
    assert not card.trusted(100, 0.4)
    assert "kappa" in card.distrust(100, 0.4)


def test_no_pairs_gives_an_empty_card() -> None:
    card = calibration_card([], [])
    assert (card.pairs, card.kappa, card.alpha) == (0, None, None)
    assert all(b.bias is None for b in card.bias)
    assert not card.trusted(1, 0.0)


def test_grades_outside_zero_to_three_are_refused() -> None:
    with pytest.raises(ValueError, match="0 to 3"):
        calibration_card([0, 4], [0, 1])
    with pytest.raises(ValueError, match="0 to 3"):
        calibration_card([0, 1], [0, 1.5])  # the judge's grades too, whole numbers only
    for human, judge in (([0, 1], [0]), ([[0, 1]], [[0, 1]])):
        with pytest.raises(ValueError, match="one human and one judge grade per pair"):
            calibration_card(human, judge)


def test_one_grade_throughout_leaves_kappa_and_alpha_undefined() -> None:
    card = calibration_card([2, 2, 2], [2, 2, 2])
    assert (card.pairs, card.kappa, card.alpha) == (3, None, None)
    assert card.confusion[2] == (0, 0, 3, 0)
    assert [b.bias for b in card.bias] == [None, None, 0.0, None]


def test_kendall_tau_b_matches_scipy_with_ties() -> None:
    rng = np.random.default_rng(2)
    for size in (4, 5, 9, 20):
        for _ in range(20):
            x = rng.integers(0, 4, size).astype(float)
            y = x + rng.integers(-1, 2, size)
            if len(set(x)) == 1 or len(set(y)) == 1:
                assert kendall_tau_b(x, y) is None
                continue
            assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


def test_system_agreement_needs_four_runs() -> None:
    two = system_agreement([0.5, 0.4], [0.6, 0.5])
    assert two.tau is None
    assert "base and head alone" in two.note
    runs = system_agreement([0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.3, 0.4])
    assert runs.tau == pytest.approx(kendalltau([1, 2, 3, 4], [2, 1, 3, 4]).statistic)


# A grade neither side used (2 here) moved `judge --against`'s kappa, computed over the grades
# seen, away from the calibration card's, computed over 0-3: one definition now.
UNUSED_TWO = ([0, 0, 1, 3, 3, 1, 0, 3], [0, 1, 1, 3, 1, 0, 0, 3])


def test_one_kappa_on_the_whole_scale_whatever_grades_were_used() -> None:
    from sklearn.metrics import cohen_kappa_score

    from retrieval_gate.datasets.llm_layer import LlmJudgment
    from retrieval_gate.pipeline.judge import agreement_with
    from retrieval_gate.stats.calibration import judge_kappa

    people, judge = UNUSED_TWO
    expected = cohen_kappa_score(people, judge, labels=[0, 1, 2, 3], weights="quadratic")
    assert judge_kappa(people, judge) == pytest.approx(expected, abs=1e-12)
    assert calibration_card(people, judge).kappa == pytest.approx(expected, abs=1e-12)
    rows = [
        LlmJudgment(
            query=f"q{i}", doc="d", grade=g, model="m", prompt_sha256="s", answer=str(g), time="t"
        )
        for i, g in enumerate(judge)
    ]
    human = {f"q{i}": {"d": float(g)} for i, g in enumerate(people)}
    assert agreement_with(rows, human).kappa == pytest.approx(expected, abs=1e-12)


def _card(pairs: int, kappa: float | None) -> CalibrationCard:
    return CalibrationCard(pairs=pairs, kappa=kappa, alpha=None, confusion=(), bias=())


def test_trust_holds_at_each_floor_and_fails_just_below_it() -> None:
    assert _card(100, 0.4).trusted(100, 0.4)
    assert _card(100, 0.4).distrust(100, 0.4) == ""
    assert not _card(99, 0.9).trusted(100, 0.4)
    assert _card(99, 0.9).distrust(100, 0.4) == (
        "only 99 pairs graded by both people and the judge (judge.trust.min_pairs: 100)"
    )
    assert not _card(100, 0.39).trusted(100, 0.4)
    assert _card(100, 0.39).distrust(100, 0.4) == (
        "the judge's quadratic kappa against people is 0.39 (judge.trust.min_kappa: 0.4)"
    )
    assert not _card(100, None).trusted(100, 0.0)
    assert "undefined" in _card(100, None).distrust(100, 0.0)


def test_three_runs_give_no_tau_and_four_do() -> None:
    three = system_agreement([0.1, 0.2, 0.3], [0.1, 0.2, 0.3])
    assert (three.runs, three.tau) == (3, None)
    assert three.note.startswith("3 runs: a ranking of fewer than 4 runs says nothing")
    four = system_agreement([0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4])
    assert (four.runs, four.tau, four.note) == (4, 1.0, "")
    with pytest.raises(ValueError, match="one human and one judge score per run"):
        system_agreement([0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3])
