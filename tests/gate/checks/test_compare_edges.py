"""compare() at its edges: verdicts exactly at the threshold, the win/tie/loss counts, and
the informative verdicts of checks outside the family."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.verdicts import verdict_for
from retrieval_gate.stats.significance import normal_quantile

MAX_DROP = 0.02
EPS = 1e-12  # compare's float slack: a drop equal to the threshold in exact arithmetic passes


def _unsigned(base: np.ndarray, current: np.ndarray) -> Comparison:
    """The one check of metric m over every query, max_drop MAX_DROP, without significance."""
    (found,) = compare(
        {"m": base},
        {"m": current},
        {"all": np.arange(base.size)},
        {"m": Threshold(max_drop=MAX_DROP)},
        {},
        ComparisonSettings(require_significance=False),
    )
    return found


@pytest.mark.parametrize(
    ("delta", "verdict"),
    [
        (MAX_DROP + EPS, "pass"),  # exactly at the threshold plus its slack: not past it
        (MAX_DROP + 4 * EPS, "improved"),
        (-(MAX_DROP + EPS), "pass"),
        (-(MAX_DROP + 4 * EPS), "regressed"),
    ],
)
def test_a_change_of_exactly_the_threshold_is_not_past_it(delta: float, verdict: str) -> None:
    found = verdict_for(
        delta=delta,
        current_mean=0.5,
        max_drop=MAX_DROP,
        floor=None,
        drop_evidence=True,
        rise_evidence=True,
    )
    assert found == verdict


def test_wins_ties_and_losses_count_each_query_once() -> None:
    base = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.2])
    current = np.array([0.9, 0.5, 0.4, 0.5, 0.1, 0.7])  # +, =, -, =, -, +
    found = _unsigned(base, current)
    assert (found.wins, found.ties, found.losses) == (2, 2, 2)


def small_slice(current: np.ndarray, **settings: object) -> dict[str, object]:
    """The comparison of a 5-query slice, below min_size: reported, outside the family."""
    n = 60
    base = np.full(n, 0.5)
    found = compare(
        {"m": base},
        {"m": current},
        {"all": np.arange(n), "few": np.arange(5)},
        {"m": Threshold(max_drop=MAX_DROP)},
        {},
        ComparisonSettings(**settings),  # type: ignore[arg-type]
    )
    few = next(c for c in found if c.slice == "few")
    assert not few.gated
    assert few.level is None
    return {"verdict": few.verdict, "failed": few.failed, "p": few.p_value, "within": few.p_within}


def test_outside_the_family_a_verdict_reads_the_raw_p_values() -> None:
    # 5 queries: the exact sign-flip test's smallest p is 2^-5 = 0.031 <= alpha = 0.05.
    rise = np.full(60, 0.5)
    rise[:5] = 0.9
    assert small_slice(rise) == {"verdict": "improved", "failed": False, "p": 1.0, "within": None}
    drop = np.full(60, 0.5)
    drop[:5] = 0.1
    assert small_slice(drop) == {
        "verdict": "regressed",
        "failed": False,
        "p": 2**-5,
        "within": None,
    }
    mixed = drop.copy()
    mixed[0] = 0.9  # one of five against: p = 6/32, past alpha and past the lean (2 alpha)
    assert small_slice(mixed)["verdict"] == "pass"
    leaning = np.full(60, 0.5)
    leaning[:5] = 0.1
    leaning[0] = 0.5  # four of five move: p = 2^-4 = 0.0625, past alpha, within 2 alpha
    assert small_slice(leaning)["verdict"] == "inconclusive"


def test_without_significance_a_one_query_slice_has_a_verdict_too() -> None:
    drop = np.full(60, 0.5)
    drop[0] = 0.1
    (found,) = [
        c
        for c in compare(
            {"m": np.full(60, 0.5)},
            {"m": drop},
            {"all": np.arange(60), "one": np.array([0])},
            {"m": Threshold(max_drop=MAX_DROP)},
            {},
            ComparisonSettings(require_significance=False),
        )
        if c.slice == "one"
    ]
    assert (found.n, found.verdict, found.gated, found.failed) == (1, "regressed", False, False)


def test_a_mean_exactly_at_the_floor_is_not_below_it() -> None:
    floor = 0.4

    def verdict(current_mean: float) -> str | None:
        return verdict_for(
            delta=0.0, current_mean=current_mean, max_drop=None, floor=floor, drop_evidence=True
        )

    assert verdict(floor - EPS) == "pass"
    assert verdict(floor - 4 * EPS) == "below_floor"


@pytest.mark.parametrize("share", [0.0, 1.0, -0.5])
def test_the_overall_share_of_alpha_is_strictly_between_0_and_1(share: float) -> None:
    with pytest.raises(GateError, match="overall_share must be within"):
        ComparisonSettings(overall_share=share)


def test_outside_the_family_non_inferiority_reads_the_raw_within_p_value() -> None:
    # Unchanged, the 5 differences moved up by max_drop are all positive: p = 2^-5 <= alpha
    # shows the drop within max_drop. Half up and half down by 0.1, they are not shown within
    # it: inconclusive, as a gated check would be, though it fails nothing.
    unchanged = small_slice(np.full(60, 0.5), rule="non-inferiority")
    assert (unchanged["verdict"], unchanged["within"]) == ("pass", 2**-5)
    mixed = np.full(60, 0.5)
    mixed[:5] = [0.6, 0.4, 0.6, 0.4, 0.5]
    found = small_slice(mixed, rule="non-inferiority", on_inconclusive="fail")
    assert (found["verdict"], found["failed"]) == ("inconclusive", False)
    assert found["within"] > 0.05


def test_a_two_query_check_states_the_drop_it_detects() -> None:
    # Without significance the estimate alone decides: it is past max_drop with 80% chance
    # at max_drop + z_0.8 x sd / sqrt(2), sd that of the two differences.
    base, current = np.array([0.5, 0.7]), np.array([0.4, 0.5])
    found = _unsigned(base, current)
    sd = float(np.std(current - base, ddof=1))
    assert found.detectable_drop == pytest.approx(MAX_DROP + normal_quantile(0.8) * sd / np.sqrt(2))
