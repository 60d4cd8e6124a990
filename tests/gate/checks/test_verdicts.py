"""The three decision rules and the lean that makes a check inconclusive, on constructed data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.verdicts import Evidence, verdict_for, verdict_of
from retrieval_gate.stats.detectability import (
    LEAN,
    OPERATING,
    detectable_drop,
    fail_probability,
)
from retrieval_gate.stats.significance import sign_flip
from tests.helpers.builders import labelled_set
from tests.helpers.cli import run_cli


def overall(base: FloatArray, current: FloatArray, **options: object) -> Comparison:
    return compare(
        {"m": base},
        {"m": current},
        {"all": np.arange(base.size)},
        {"m": Threshold(max_drop=0.02)},
        {},
        ComparisonSettings(**options),  # type: ignore[arg-type]
    )[0]


def pair(n: int, drop: float, sd: float, seed: int = 5) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.8, n)
    return base, base - drop + rng.normal(0.0, sd, n)


def test_excess_tests_the_differences_moved_up_by_max_drop() -> None:
    base, current = pair(300, 0.05, 0.1)
    found = overall(base, current, rule="evidence-of-excess")
    moved = current - base + 0.02
    expected = sign_flip(
        moved, resamples=10_000, rng=np.random.default_rng([0, 0])
    )  # the compare test stream
    assert found.p_excess == pytest.approx(float(expected.drop[0]))
    assert found.p_adjusted == found.p_excess  # alone in its family
    assert found.verdict == "regressed"
    assert found.p_within is None


def test_a_relative_max_drop_moves_the_differences_by_its_share_of_the_baseline_mean() -> None:
    base, current = pair(300, 0.05, 0.1)
    (found,) = compare(
        {"m": base},
        {"m": current},
        {"all": np.arange(base.size)},
        {"m": Threshold(max_drop=0.1, relative=True)},
        {},
        ComparisonSettings(rule="evidence-of-excess"),
    )
    assert found.max_drop == pytest.approx(0.1 * base.mean())
    moved = current - base + 0.1 * base.mean()  # not the current mean, 0.05 lower
    expected = sign_flip(moved, resamples=10_000, rng=np.random.default_rng([0, 0]))
    assert found.p_excess == pytest.approx(float(expected.drop[0]))


def test_a_drop_at_the_threshold_fails_the_default_about_half_the_time_and_excess_rarely() -> None:
    fails = {"significant-drop": 0, "evidence-of-excess": 0}
    for seed in range(60):
        base, current = pair(2_000, 0.02, 0.05, seed)
        for rule in fails:
            fails[rule] += overall(base, current, rule=rule, seed=seed).failed
    assert 15 <= fails["significant-drop"] <= 45
    assert fails["evidence-of-excess"] <= 8


def test_non_inferiority_passes_only_with_evidence_within_the_threshold() -> None:
    base, current = pair(2_000, 0.0, 0.05)
    shown = overall(base, current, rule="non-inferiority")
    assert shown.verdict == "pass"
    assert shown.p_within_adjusted is not None
    assert shown.p_within_adjusted <= 0.05
    base, current = pair(40, 0.0, 0.2)
    unshown = overall(base, current, rule="non-inferiority")
    assert unshown.verdict == "inconclusive"
    assert not unshown.failed
    strict = overall(base, current, rule="non-inferiority", on_inconclusive="fail")
    assert strict.failed


@pytest.mark.parametrize("rule", ["significant-drop", "evidence-of-excess", "non-inferiority"])
def test_report_only_and_min_only_checks_beside_a_gated_one_keep_their_verdicts(
    rule: str,
) -> None:
    """Under each rule the checks without a max_drop are decided as under the default: a
    report-only one has no verdict, a min-only one passes above its floor and is below it
    under, whatever its drop (10 pt here, shown by its test) or its test of max_drop, which
    it does not have."""
    base, current = pair(300, 0.10, 0.05)
    names = ("gated", "report", "above", "under")
    found = compare(
        dict.fromkeys(names, base),
        dict.fromkeys(names, current),
        {"all": np.arange(base.size)},
        {
            "gated": Threshold(max_drop=0.02),
            "report": Threshold(),
            "above": Threshold(floor=0.2),
            "under": Threshold(floor=0.45),
        },
        {},
        ComparisonSettings(rule=rule),  # type: ignore[arg-type]
    )
    checks = {c.metric: c for c in found}
    assert {name: checks[name].verdict for name in names} == {
        "gated": "regressed",
        "report": None,
        "above": "pass",
        "under": "below_floor",
    }
    assert [name for name in names if checks[name].failed] == ["gated", "under"]
    assert checks["report"].p_value is not None
    assert checks["report"].p_value < 0.001  # its drop is shown: no verdict all the same
    assert all(checks[name].max_drop is None for name in names[1:])
    assert all(checks[name].level is None for name in names[1:])  # outside the family
    # verdict_for alone: a floor and no max_drop never reads the max_drop evidence.
    for within in (None, False, True):
        for evidence in (False, True):
            common: dict[str, Any] = {"delta": -0.1, "max_drop": None, "drop_evidence": evidence}
            common |= {"rise_evidence": evidence, "lean": evidence, "within_evidence": within}
            assert verdict_for(current_mean=0.5, floor=0.2, **common) == "pass"
            assert verdict_for(current_mean=0.1, floor=0.2, **common) == "below_floor"
            assert verdict_for(current_mean=0.1, floor=None, **common) is None


def test_a_check_past_its_threshold_is_inconclusive_only_when_its_test_leans() -> None:
    common = {"delta": -0.05, "current_mean": 0.5, "max_drop": 0.02, "floor": None}
    assert verdict_for(**common, drop_evidence=False, lean=True) == "inconclusive"
    assert verdict_for(**common, drop_evidence=False, lean=False) == "pass"
    assert verdict_for(**common, drop_evidence=True, lean=True) == "regressed"
    assert verdict_for(**common, drop_evidence=False, within_evidence=False) == "inconclusive"
    assert verdict_for(**common, drop_evidence=False, within_evidence=True) == "pass"
    # Within the threshold, a lean is no verdict.
    within = {**common, "delta": -0.01}
    assert verdict_for(**within, drop_evidence=False, lean=True) == "pass"


def test_a_p_value_at_alpha_or_at_the_lean_is_evidence() -> None:
    """Each bound holds its own value: p = alpha shows, p = LEAN x alpha leans; the next
    float above does not."""
    alpha = 0.05
    past: dict[str, Any] = {"delta": -0.05, "current_mean": 0.5, "max_drop": 0.02, "floor": None}
    for p, verdict in ((alpha, "regressed"), (LEAN * alpha, "inconclusive")):
        for at, expected in (
            (p, verdict),
            (np.nextafter(p, 1.0), "pass" if p > alpha else "inconclusive"),
        ):
            evidence = Evidence(failing=float(at), rise=1.0, rise_level=alpha)
            assert verdict_of(**past, n=50, evidence=evidence, alpha=alpha) == expected, at
    within: dict[str, Any] = {**past, "delta": -0.01}
    for at, expected in ((alpha, "pass"), (np.nextafter(alpha, 1.0), "inconclusive")):
        evidence = Evidence(failing=0.9, rise=1.0, rise_level=alpha, within=float(at))
        assert verdict_of(**within, n=50, evidence=evidence, alpha=alpha) == expected, at
    # A rise past max_drop is shown by a rise p-value at its level (the family's), not above.
    risen: dict[str, Any] = {**past, "delta": 0.05}
    level = 0.0125
    for at, expected in ((level, "improved"), (np.nextafter(level, 1.0), "pass")):
        evidence = Evidence(failing=1.0, rise=float(at), rise_level=level)
        assert verdict_of(**risen, n=50, evidence=evidence, alpha=alpha) == expected, at


def test_the_lean_is_the_adjusted_p_value_within_twice_alpha() -> None:
    seen = {"inconclusive": 0, "pass": 0}
    for seed in range(60):
        base, current = pair(50, 0.04, 0.2, seed)
        found = overall(base, current, seed=seed)
        assert found.p_adjusted is not None
        if found.delta >= -0.02 or found.p_adjusted <= 0.05:
            continue
        expected = "inconclusive" if found.p_adjusted <= 0.10 else "pass"
        assert found.verdict == expected
        seen[expected] += 1
    assert min(seen.values()) >= 3, seen


@pytest.mark.parametrize(
    ("rule", "closed"),
    [
        ("significant-drop", "pass"),
        ("significant-drop", "fail"),
        ("evidence-of-excess", "pass"),
        ("evidence-of-excess", "fail"),
        ("non-inferiority", "pass"),
        ("non-inferiority", "fail"),
    ],
)
def test_the_detectable_drop_is_where_the_operating_characteristic_reaches_the_power(
    rule: str, closed: str
) -> None:
    setting = {
        "sd": 0.2,
        "n": 400,
        "level": 0.01,
        "max_drop": 0.02,
        "resamples": 10_000,
        "rule": rule,
        "on_inconclusive": closed,
    }
    drop = detectable_drop(**setting)  # type: ignore[arg-type]
    assert drop is not None
    chance = fail_probability(drop, **setting)  # type: ignore[arg-type]
    assert chance == pytest.approx(0.8, abs=1e-9) or (drop == 0.0 and chance >= 0.8)
    curve = [fail_probability(m * 0.02, **setting) for m in OPERATING]  # type: ignore[arg-type]
    assert curve == sorted(curve)


def test_every_gated_check_states_its_operating_characteristic() -> None:
    base, current = pair(500, 0.01, 0.1)
    found = overall(base, current)
    assert found.fail_chances is not None
    assert len(found.fail_chances) == len(OPERATING)
    sd = float(np.std(current - base, ddof=1))
    expected = [
        fail_probability(m * 0.02, sd=sd, n=500, level=found.level, max_drop=0.02, resamples=10_000)
        for m in OPERATING
    ]
    assert list(found.fail_chances) == pytest.approx(expected)
    # Without variation there is no spread to state it from.
    assert overall(base, base).fail_chances is None


def test_a_check_failing_closed_states_what_it_fails_at_least() -> None:
    """Non-inferiority failing closed fails a check whose test does not reject: weighted Holm
    tests it at more than its own level once another check is shown within its margin, so its
    P(fail) is stated at alpha, the most it can get. Here the other check always is: the
    simulated rate sits at that figure, below the one at its own level."""
    closed = ComparisonSettings(rule="non-inferiority", on_inconclusive="fail", test="t")
    n, trials, failed = 200, 400, 0
    stated = []
    for seed in range(trials):
        rng = np.random.default_rng([31, seed])
        base = {"m": rng.uniform(0.2, 0.8, n), "easy": rng.uniform(0.2, 0.8, n)}
        current = {metric: values + rng.normal(0.0, 0.2, n) for metric, values in base.items()}
        thresholds = {"m": Threshold(max_drop=0.02), "easy": Threshold(max_drop=0.3)}
        check = compare(base, current, {"all": np.arange(n)}, thresholds, {}, closed)[0]
        assert check.level == pytest.approx(0.025)
        assert check.fail_chances is not None
        failed += check.failed
        stated.append(check.fail_chances[0])
    rate, se = failed / trials, (0.25 / trials) ** 0.5
    own = fail_probability(0.0, sd=0.2, n=n, level=0.025, max_drop=0.02, resamples=10_000,
                           t_test=True, rule="non-inferiority", on_inconclusive="fail")  # fmt: skip
    assert rate + 3 * se < own  # the figure at its own level was above the truth
    assert float(np.mean(stated)) == pytest.approx(rate, abs=3 * se)


@pytest.mark.parametrize("value", ["strict", "::error::forged\x1b[31m", "Non-Inferiority"])
def test_an_unknown_rule_is_refused_naming_the_field(tmp_path: Path, value: str) -> None:
    config = labelled_set(tmp_path, gate={"rule": value})
    code, out, err = run_cli("lint", "-c", config)
    assert code == 2
    assert "gate.rule" in err
    assert "significant-drop" in err
    assert "\x1b" not in out + err
    assert not any(line.startswith("::") for line in (out + err).splitlines())


def test_a_rule_the_assisted_gate_cannot_take_is_refused(tmp_path: Path) -> None:
    config = labelled_set(
        tmp_path,
        gate={"rule": "evidence-of-excess", "labels": "human+llm"},
        judge={"base_url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    code, _, err = run_cli("lint", "-c", config)
    assert code == 2
    assert "gate.rule: evidence-of-excess is not available with gate.labels: human+llm" in err


def test_the_widest_max_drop_suggested_under_excess_is_one_the_check_enforces() -> None:
    from retrieval_gate.gate.power.estimate import CheckPower, enforceable_drop

    check = CheckPower(
        metric="ndcg@10", slice="all", n=300, threshold="1pt", max_drop=0.01, sd=0.25,
        level=0.01, detectable_drop=None, fail_probability=None, queries_needed=None,
        gated=True, reason="",
    )  # fmt: skip
    settings = ComparisonSettings(rule="evidence-of-excess")
    widest = enforceable_drop(check, settings)
    assert widest is not None
    caught = detectable_drop(
        sd=0.25, n=300, level=0.01, max_drop=widest, resamples=10_000, rule="evidence-of-excess"
    )
    assert caught == pytest.approx(1.5 * widest)
    strict = ComparisonSettings(rule="non-inferiority", on_inconclusive="fail")
    assert enforceable_drop(check, strict) is None


def test_a_check_of_no_queries_passes_if_gated_and_stays_report_only_if_not() -> None:
    nothing = Evidence(failing=1.0, rise=1.0, rise_level=0.05)
    below: dict[str, Any] = {"delta": 0.0, "current_mean": 0.0, "max_drop": None, "floor": 0.5}
    assert verdict_of(**below, n=0, evidence=nothing, alpha=0.05) == "pass"
    assert verdict_of(**below, n=3, evidence=nothing, alpha=0.05) == "below_floor"
    unset: dict[str, Any] = {**below, "floor": None}
    assert verdict_of(**unset, n=0, evidence=nothing, alpha=0.05) is None
