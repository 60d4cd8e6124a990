"""Which checks are blind at their level: too few queries, a concentrated drop out of reach, or
a detectable drop past what the metric can lose; and the refusal of a blind overall check."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.errors import CannotFailError, GateError
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.family import (
    CONCENTRATED_SHARE,
    Member,
    blind_reason,
    concentrated_p,
    family_of,
    refusal_advice,
    widest_level,
)
from retrieval_gate.stats.significance import paired_t, sign_flip


@pytest.mark.parametrize(("m", "n"), [(3, 10), (18, 60), (59, 60), (1, 2)])
def test_the_concentrated_t_p_value_is_the_t_test_of_that_vector(m: int, n: int) -> None:
    diffs = np.zeros(n)
    diffs[:m] = -0.3
    assert concentrated_p(m, n, resamples=10_000, t_test=True) == pytest.approx(
        paired_t(diffs)[0], rel=1e-9
    )


@pytest.mark.parametrize(("m", "n", "resamples"), [(8, 60, 10_000), (30, 60, 1_000)])
def test_the_concentrated_sign_flip_p_value_is_the_smallest_the_test_gives(
    m: int, n: int, resamples: int
) -> None:
    diffs = np.zeros(n)
    diffs[:m] = -0.3
    found = sign_flip(diffs, resamples=resamples, rng=np.random.default_rng(0))
    assert float(found.drop[0]) == pytest.approx(concentrated_p(m, n, resamples=resamples))


def test_a_level_only_most_queries_moving_together_reach_is_blind() -> None:
    settings = ComparisonSettings(alpha=1e-12)
    reason = blind_reason(Member(slice="all", n=60), 1e-12, settings)
    assert reason.startswith("a drop carried by 18 of its 60 queries cannot give p <= 1e-12")
    assert blind_reason(Member(slice="all", n=60), 0.025, ComparisonSettings()) == ""
    assert int(CONCENTRATED_SHARE * 60) == 18


def test_a_check_that_catches_only_more_than_the_metric_can_lose_is_blind() -> None:
    settings = ComparisonSettings()
    # 40 queries of sd 0.45 at level 0.001: it catches about 31 pt, the baseline has 20 to lose.
    member = Member(slice="all", n=40, max_drop=0.02, sd=0.45, baseline_mean=0.2)
    reason = blind_reason(member, 1e-3, settings)
    assert reason.startswith("at level 0.001 it catches with 80% power only a drop of 31.")
    assert reason.endswith("more than the 20.0 pt the baseline has to lose")
    assert (
        blind_reason(
            Member(slice="all", n=40, max_drop=0.02, sd=0.45, baseline_mean=0.9), 1e-3, settings
        )
        == ""
    )


def test_blind_slices_leave_the_family_and_their_share_goes_to_the_others() -> None:
    settings = ComparisonSettings()
    found = family_of(
        [Member(slice="all", n=500), Member(slice="a", n=5), Member(slice="b", n=400)], settings
    )
    assert set(found.levels) == {0, 2}
    assert found.levels[2] == pytest.approx(0.025)
    assert found.reasons[1].startswith("5 queries cannot give p <= 0.013")
    assert found.left_at[1] == pytest.approx(0.0125)
    # A slice is not held to the concentrated drop: 12 queries reach 0.0125 when most move.
    assert set(
        family_of([Member(slice="all", n=500), Member(slice="a", n=12)], settings).levels
    ) == {0, 1}


def test_a_blind_overall_check_is_refused_with_what_would_help() -> None:
    rng = np.random.default_rng(3)
    base = rng.beta(2.0, 2.0, 60)
    current = base.copy()
    current[:24] = 0.0  # 40% of the queries emptied
    with pytest.raises(GateError) as caught:
        compare(
            {"ndcg@10": base},
            {"ndcg@10": current},
            {"all": np.arange(60)},
            {"ndcg@10": Threshold(max_drop=0.02)},
            {},
            ComparisonSettings(alpha=1e-12),
        )
    assert isinstance(caught.value, CannotFailError)  # the drift tells it apart
    message = str(caught.value)
    assert message.startswith("the gate could never fail: ndcg@10 overall: a drop carried by")
    assert "gate.resamples" not in message  # 10^12 draws would be no advice
    assert "raise gate.alpha" in message
    assert message.endswith("or set gate.require_significance: false")
    # Accepted at the default alpha, and the emptied queries fail it.
    found = compare(
        {"ndcg@10": base},
        {"ndcg@10": current},
        {"all": np.arange(60)},
        {"ndcg@10": Threshold(max_drop=0.02)},
        {},
        ComparisonSettings(),
    )
    assert found[0].failed


def test_more_resamples_are_advised_when_they_are_what_is_missing() -> None:
    # 18 of 60 queries can give p = exp(-9) = 1.2e-4 at best with 1,000 draws, 1 / 20,001
    # with 20,000: the level 5e-5 is within reach of more draws.
    base = np.random.default_rng(4).beta(2.0, 2.0, 60)
    with pytest.raises(GateError, match=r"raise gate.resamples to 20000 or more"):
        compare(
            {"ndcg@10": base},
            {"ndcg@10": base},
            {"all": np.arange(60)},
            {"ndcg@10": Threshold(max_drop=0.02)},
            {},
            ComparisonSettings(alpha=5e-5, resamples=1000),
        )


def test_a_member_of_one_query_has_no_spread_and_of_two_has_its_sd() -> None:
    def resolve(mean: float) -> float:
        return 0.1 * mean

    assert Member.of("s", np.array([0.5]), resolve) == Member(slice="s", n=1)
    two = Member.of("s", np.array([0.2, 0.6]), resolve)
    assert two == Member(
        slice="s", n=2, max_drop=pytest.approx(0.04), sd=pytest.approx(0.4 / 2**0.5),
        baseline_mean=pytest.approx(0.4),
    )  # fmt: skip
    assert Member.of("s", np.array([0.2, 0.6]), resolve, bounded=False).baseline_mean is None


def test_no_query_moved_gives_p_1_under_either_test() -> None:
    for t_test in (False, True):
        assert concentrated_p(0, 10, resamples=10_000, t_test=t_test) == 1.0
        assert concentrated_p(3, 0, resamples=10_000, t_test=t_test) == 1.0


def test_a_level_equal_to_the_smallest_p_can_still_be_reached() -> None:
    settings = ComparisonSettings(resamples=1_000)
    five = Member(slice="intent=billing", n=5)  # exact: the smallest p is 2^-5
    assert blind_reason(five, 2.0**-5, settings) == ""
    assert blind_reason(five, 2.0**-5 * 0.99, settings) == (
        "5 queries cannot give p <= 0.031, this check's level (the smallest p they can give "
        "is 0.031)"
    )


def test_a_check_without_spread_is_not_called_blind_for_its_drop() -> None:
    # No sd (or 0): nothing says what the test can detect, so nothing says it is blind.
    settings = ComparisonSettings(resamples=10_000)
    for sd in (None, 0.0):
        flat = Member(slice="intent=billing", n=50, max_drop=0.02, sd=sd, baseline_mean=0.5)
        assert blind_reason(flat, 0.01, settings) == ""


def test_the_advice_names_each_setting_that_would_help_cheapest_first() -> None:
    overall = Member(slice="all", n=40)
    fixed = ", label more queries, or set gate.require_significance: false"
    plain = ComparisonSettings(resamples=10_000)
    assert (
        refusal_advice(overall, 1e-5, plain, 1) == "raise gate.resamples to 100000 or more" + fixed
    )
    # 1e-7 would need more than a million draws: fewer metrics or more queries instead.
    strict = ComparisonSettings(alpha=0.01, overall_share=0.4, resamples=10_000)
    assert refusal_advice(overall, 1e-7, strict, 3) == (
        "raise gate.alpha, raise gate.overall_share, give fewer of the 3 gated metrics a "
        "max_drop" + fixed
    )
    # The draws' resolution 1 / (999 + 1) is the level itself: more draws are not the fix.
    assert refusal_advice(overall, 1e-3, ComparisonSettings(resamples=999), 1) == fixed[2:]
    assert (
        refusal_advice(overall, 1e-6, plain, 1) == "raise gate.resamples to 1000000 or more" + fixed
    )
    assert refusal_advice(overall, 1e-5, ComparisonSettings(test="t"), 1) == fixed[2:]
    half = ComparisonSettings(alpha=0.05, overall_share=0.5)
    assert refusal_advice(overall, 1e-7, half, 1) == fixed[2:]


def test_alpha_is_shared_equally_within_the_overall_and_the_slice_checks() -> None:
    settings = ComparisonSettings(alpha=0.06, overall_share=0.5, resamples=100_000)
    cells = [("all", 500), ("all", 500), ("intent=a", 400), ("intent=b", 400), ("intent=c", 400)]
    levels = family_of(cells, settings).levels
    assert levels == pytest.approx({0: 0.015, 1: 0.015, 2: 0.01, 3: 0.01, 4: 0.01}, rel=1e-12)
    alone = family_of(cells[:2], settings).levels  # no slice check: the overall ones take all
    assert alone == pytest.approx({0: 0.03, 1: 0.03}, rel=1e-12)
    slices = family_of(cells[2:], settings).levels  # no overall check: the slices take all
    assert slices == pytest.approx({0: 0.02, 1: 0.02, 2: 0.02}, rel=1e-12)
    # An overall check of 5 queries cannot reach 0.03 (2^-5 = 0.031): it leaves the family,
    # and its half of alpha goes to the slice checks.
    found = family_of([("all", 5), *cells[2:]], settings)
    assert set(found.reasons) == {0}
    assert found.levels == pytest.approx({1: 0.02, 2: 0.02, 3: 0.02}, rel=1e-12)


def test_the_concentrated_drop_is_carried_by_at_least_one_query() -> None:
    # 5 queries reach 2^-5 = 0.031 together, but 30% of them is 1 query, whose p is 0.5.
    settings = ComparisonSettings(resamples=10_000)
    assert blind_reason(Member(slice="all", n=5), 0.04, settings) == (
        "a drop carried by 1 of its 5 queries cannot give p <= 0.04, this check's level "
        "(the smallest p it can give is 0.5)"
    )


def test_a_level_equal_to_the_concentrated_drop_s_smallest_p_is_reached() -> None:
    settings = ComparisonSettings(resamples=10_000)
    ten = Member(slice="all", n=10)  # 3 of 10 queries: the smallest exact p is 2^-3
    assert blind_reason(ten, 0.125, settings) == ""
    assert blind_reason(ten, 0.124, settings).startswith("a drop carried by 3 of its 10 queries")


def test_one_query_or_every_query_moved_gives_the_test_s_extremes() -> None:
    # A sign flip of one query gives 1/2; the t-test needs two queries, and gives 0 when
    # every one of them drops alike (no spread).
    assert concentrated_p(1, 1, resamples=1_000) == 0.5
    assert concentrated_p(1, 1, resamples=1_000, t_test=True) == 1.0
    assert concentrated_p(5, 5, resamples=1_000, t_test=True) == 0.0
    assert concentrated_p(7, 5, resamples=1_000, t_test=True) == 0.0


def test_the_widest_level_is_each_correction_s_last_step() -> None:
    levels = (0.01, 0.03)
    bh = ComparisonSettings(alpha=0.05, correction="bh")
    # Benjamini-Hochberg with every other check rejected: alpha m w, w = 0.01 / 0.04.
    assert widest_level(0.01, levels, bh) == pytest.approx(0.025, rel=1e-12)
    assert widest_level(0.03, levels, bh) == pytest.approx(0.075, rel=1e-12)
    # Capped below 1: a level of 1 would make every p-value evidence.
    wide = ComparisonSettings(alpha=0.6, correction="bh")
    assert widest_level(0.3, (0.3, 0.01), wide) == 0.999
    assert widest_level(0.01, levels, ComparisonSettings(alpha=0.05, correction="holm")) == 0.05
    assert widest_level(0.01, levels, ComparisonSettings(alpha=0.05, correction="none")) == 0.01
