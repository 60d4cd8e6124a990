"""The figures of `power --claim`: parsing, p-values against scipy, the detectable change."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats

from retrieval_gate.errors import InputError
from retrieval_gate.gate.checks.compare import ComparisonSettings
from retrieval_gate.gate.power.claim import audit, check_n, check_sd, parse_change
from retrieval_gate.stats.detectability import detectable_drop
from retrieval_gate.stats.significance import paired_t, sign_flip, smallest_p


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-2pt", -0.02),
        ("+1.5pt", 0.015),
        ("-0.02", -0.02),
        ("0.02", 0.02),
        (" - 3 Points ", -0.03),
        ("-.5pts", -0.005),
        ("-100pt", -1.0),
        ("1", 1.0),
    ],
)
def test_a_change_is_read_in_points_or_as_a_fraction(text: str, value: float) -> None:
    assert parse_change(text) == pytest.approx(value, abs=1e-15)


@pytest.mark.parametrize(
    "text",
    [
        "nan",
        "inf",
        "-inf",
        "",
        "-2%",
        "1e-2",
        "--2pt",
        "-2pt\n::error::x",
        "\x1b[31m-2pt",
        "-101pt",
        "1.5",
        "2 pt pt",
    ],
)
def test_anything_else_is_an_error_naming_the_option(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_change(text)
    message = str(caught.value)
    assert message.startswith("--claim: ")
    assert "\n" not in message
    assert "\x1b" not in message


@pytest.mark.parametrize("n", [-5, 0, 1, 10**9 + 1, 10**100])
def test_a_query_count_outside_2_to_a_billion_is_refused(n: int) -> None:
    with pytest.raises(InputError, match=r"^--n: "):
        check_n(n)


@pytest.mark.parametrize("sd", [-0.1, math.nan, math.inf, 1.5])
def test_an_sd_outside_0_to_1_is_refused(sd: float) -> None:
    with pytest.raises(InputError, match=r"^--sd: "):
        check_sd(sd)


@pytest.mark.parametrize(
    ("change", "n", "sd"),
    [
        (-0.02, 131, 0.22),
        (0.015, 131, 0.25),
        (-0.09, 10, 0.25),
        (-0.001, 5000, 0.3),
        (1.0, 10, 0.9),  # the whole scale, either way
        (-1.0, 10, 0.9),
    ],
)
def test_the_t_p_value_is_scipys_one_sided_in_the_claims_direction(
    change: float, n: int, sd: float
) -> None:
    claim = audit(change, n, sd, "--sd", ComparisonSettings())
    expected = stats.t.sf(abs(change) / (sd / math.sqrt(n)), n - 1)
    assert claim.t_p == pytest.approx(expected, rel=1e-9)
    # The p-value of any set of n changes with this mean and sd: scipy's paired test of one.
    deltas = np.full(n, change)
    deltas[: n // 2] += sd * math.sqrt((n - 1) / n)
    deltas[n // 2 : 2 * (n // 2)] -= sd * math.sqrt((n - 1) / n)
    if n % 2 == 0:
        drop, rise = paired_t(deltas)
        assert (drop if change < 0 else rise) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [2, 10, 13, 14, 131, 5000])
def test_the_sign_flip_floor_is_smallest_p(n: int) -> None:
    settings = ComparisonSettings()
    claim = audit(-0.02, n, None, "", settings)
    assert claim.smallest_p == smallest_p(n, resamples=settings.resamples)
    assert claim.t_p is None
    assert claim.detectable is None
    assert claim.within is None


def test_every_query_moved_the_same_way_reaches_the_floor() -> None:
    # 10 queries, 2^10 <= 10,000 resamples: the exact test, every sign vector.
    diffs = np.array([-0.01, -0.02, -0.05, -0.03, -0.01, -0.04, -0.02, -0.01, -0.06, -0.05])
    tested = sign_flip(diffs, resamples=10_000, rng=np.random.default_rng(0))
    assert (
        float(tested.drop[0])
        == audit(float(diffs.mean()), 10, None, "", ComparisonSettings()).smallest_p
    )


def test_the_detectable_change_is_a_single_check_at_alpha_with_no_threshold() -> None:
    settings = ComparisonSettings(alpha=0.01, test="t", power=0.9)
    claim = audit(-0.05, 60, 0.2, "--sd", settings)
    assert claim.detectable == detectable_drop(
        sd=0.2, n=60, level=0.01, max_drop=0.0, resamples=settings.resamples, t_test=True, power=0.9
    )
    assert claim.within is (claim.detectable <= 0.05)


def test_no_spread_gives_p_0() -> None:
    claim = audit(-0.02, 40, 0.0, "--sd", ComparisonSettings())
    assert claim.t_p == 0.0
    assert audit(0.0, 40, 0.0, "--sd", ComparisonSettings()).t_p == 1.0  # no change: p = 1


def test_no_change_is_half_way_on_the_t_distribution() -> None:
    assert audit(0.0, 40, 0.2, "--sd", ComparisonSettings()).t_p == pytest.approx(0.5, abs=1e-12)


def test_a_claim_exactly_at_the_detectable_change_is_within_it() -> None:
    claim = audit(-0.05, 60, 0.2, "--sd", ComparisonSettings(test="t"))
    assert claim.detectable is not None
    assert dataclasses.replace(claim, change=-claim.detectable).within is True
    assert dataclasses.replace(claim, change=-claim.detectable * 0.999).within is False


def test_the_limits_themselves_are_accepted() -> None:
    assert [check_n(2), check_n(131), check_n(10**9)] == [2, 131, 10**9]
    assert [check_sd(0.0), check_sd(0.2), check_sd(1.0)] == [0.0, 0.2, 1.0]


def test_the_output_is_deterministic_and_names_each_assumption() -> None:
    claim = audit(-0.02, 131, 0.2242, "baseline:ndcg@10", ComparisonSettings())
    text = claim.to_text()
    assert text == audit(-0.02, 131, 0.2242, "baseline:ndcg@10", ComparisonSettings()).to_text()
    assert "correlate at 0.5" in text
    assert "ndcg@10" in text
    assert "one check at alpha 0.05" in text
    assert claim.document()["within_detectable"] is False


def test_the_json_document_is_versioned_and_indented_by_two() -> None:
    text = audit(-0.02, 131, 0.2, "--sd", ComparisonSettings()).to_json()
    document = json.loads(text)
    assert (document["schema"], document["schema_version"]) == ("retrieval-gate/claim", 1)
    assert text.splitlines()[:2] == ["{", '  "alpha": 0.05,']
    assert text.endswith("}\n")


FLOOR = "whatever the spread (every query moved the same way by the same amount)"


def test_the_text_of_a_drop_below_the_detectable_one_read_from_the_baseline() -> None:
    claim = audit(-0.02, 131, 0.2242, "baseline:ndcg@10", ComparisonSettings())
    assert claim.to_text().splitlines() == [
        "claim: mean change -2pt over 131 queries (one-sided, a drop; alpha 0.05, power 80%)",
        f"sign-flip test (10000 resamples): p >= 3.58e-29 {FLOOR}",
        "paired t-test: p = 0.155 for this mean with per-query sd 0.2242, the baseline's "
        "ndcg@10 (exact when the runs correlate at 0.5)",
        "detectable change: 4.91pt at 80% power (sign-flip test, one check at alpha 0.05, "
        "same sd); the claimed 2.00pt is below it: 131 queries catch a true change that small "
        "less than 80% of the time",
    ]


def test_the_text_of_a_rise_past_the_detectable_one_with_a_given_sd() -> None:
    claim = audit(0.05, 40, 0.1, "--sd", ComparisonSettings(test="t"))
    assert claim.to_text().splitlines()[::2] == [
        "claim: mean change +5pt over 40 queries (one-sided, a rise; alpha 0.05, power 80%)",
        "paired t-test: p = 0.00151 for this mean with per-query sd 0.1 (--sd)",
    ]
    assert claim.to_text().splitlines()[3] == (
        "detectable change: 4.02pt at 80% power (paired t-test, one check at alpha 0.05, same "
        "sd); the claimed 5.00pt is at or past it"
    )


def test_the_text_when_no_check_can_reach_alpha_or_there_is_no_spread() -> None:
    few = audit(-0.3, 4, 0.2, "--sd", ComparisonSettings()).to_text()
    assert few.endswith("\ndetectable change: none; 4 queries cannot reach alpha\n")
    unknown = audit(-0.02, 131, None, "", ComparisonSettings()).to_text()
    assert unknown.splitlines()[2:] == [
        "paired t-test: no lower bound without a spread (equal changes give p = 0); give --sd, "
        "or -c CONFIG with a baseline",
        "detectable change: unknown without a spread",
    ]
    assert unknown.endswith("spread\n")


def _caught(*, n: int, sd: float, test: str, draws: int) -> tuple[float, int]:
    """The printed detectable drop, and how many of `draws` seeded sets with that true mean
    drop the test at alpha catches."""
    settings = ComparisonSettings(test=test)  # type: ignore[arg-type]
    drop = audit(-0.01, n, sd, "--sd", settings).detectable
    assert drop is not None
    rng = np.random.default_rng(29)
    hits = 0
    for _ in range(draws):
        diffs = rng.normal(-drop, sd, size=n)
        if test == "t":
            p = paired_t(diffs)[0]
        else:
            p = float(sign_flip(diffs, resamples=settings.resamples, rng=rng).drop[0])
        hits += p <= settings.alpha
    return drop, hits


@pytest.mark.parametrize(("test", "draws"), [("t", 600), ("randomization", 300)])
def test_the_detectable_change_is_caught_80_percent_of_the_time(test: str, draws: int) -> None:
    _, hits = _caught(n=40, sd=0.2, test=test, draws=draws)
    low, high = stats.binom.interval(0.999, draws, 0.8)
    assert low <= hits <= high, f"{hits}/{draws} caught, expected within [{low}, {high}]"


def test_with_no_spread_any_change_is_caught_where_the_test_reaches_alpha() -> None:
    # sd 0: every query moved by the mean change; 40 equal moves give the sign flips' floor.
    settings = ComparisonSettings()
    caught = audit(-0.02, 40, 0.0, "--sd", settings)
    assert caught.smallest_p <= settings.alpha
    assert caught.detectable == 0.0
    assert caught.within is True
    assert caught.to_text().splitlines()[-1] == (
        "detectable change: any above 0 (sd 0: every query moves by the mean change, and 40 "
        "queries reach alpha)"
    )
    assert audit(0.0, 40, 0.0, "--sd", settings).within is False
    # Four queries' 16 sign vectors cannot give a p under 0.05, whatever the spread.
    short = audit(-0.02, 4, 0.0, "--sd", settings)
    assert short.detectable is None
    assert short.within is False
    assert (
        short.to_text().splitlines()[-1] == "detectable change: none; 4 queries cannot reach alpha"
    )
    assert audit(-0.02, 4, 0.0, "--sd", dataclasses.replace(settings, test="t")).detectable == 0


def test_no_spread_is_caught_when_the_floor_is_exactly_alpha() -> None:
    # 5 queries, every sign vector: 5 equal drops give p = 2^-5, rejected at alpha = 2^-5
    # (p <= alpha rejects), not just under it.
    floor = 2.0**-5
    tested = sign_flip(np.full(5, -0.02), resamples=10_000, rng=np.random.default_rng(0))
    assert float(tested.drop[0]) == floor
    at = audit(-0.02, 5, 0.0, "--sd", ComparisonSettings(alpha=floor))
    assert at.detectable == 0.0
    assert audit(-0.02, 5, 0.0, "--sd", ComparisonSettings(alpha=floor * 0.99)).detectable is None
