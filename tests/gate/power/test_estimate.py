"""`retrieval-gate power`: the figures equal `detectability`'s, read well, and stay inert."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.gate.checks.verdicts import Rule
from retrieval_gate.stats.detectability import detectable_drop, queries_needed
from tests.helpers.builders import labelled_set
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

EXAMPLE = REPO / "configs" / "example.yaml"
EXAMPLE_BASELINE = REPO / "configs" / ".retrieval-gate" / "example" / "baseline.json"


def power_json(config: Path, *more: str) -> dict[str, Any]:
    code, out, err = run_cli("power", "-c", str(config), "--format", "json", *more)
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


def check_of(document: dict[str, Any], metric: str, slice_name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        c for c in document["checks"] if c["metric"] == metric and c["slice"] == slice_name
    )
    return found


def row_of(text: str, metric: str, slice_name: str) -> list[str]:
    return next(
        line.split() for line in text.splitlines() if line.split()[:2] == [metric, slice_name]
    )


# The bundled example ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> tuple[dict[str, Any], str]:
    """The example's power, as JSON and as text."""
    code, text, err = run_cli("power", "-c", str(EXAMPLE))
    assert code == 0, err
    return power_json(EXAMPLE), text


def test_the_detectable_drop_is_detectability_s_for_that_check(
    example: tuple[dict[str, Any], str],
) -> None:
    document, text = example
    baseline = read_baseline(EXAMPLE_BASELINE)
    queries = [
        json.loads(line)
        for line in (REPO / "configs" / "example" / "queries.jsonl").read_text().splitlines()
        if line.strip()
    ]
    position = {query_id: i for i, query_id in enumerate(baseline.query_ids)}
    gated = [c for c in document["checks"] if c["gated"]]
    overall = [c for c in gated if c["slice"] == "all"]
    slices = [c for c in gated if c["slice"] != "all"]
    # The family: three metrics with a max_drop; their overall checks share half of alpha,
    # the gated slice checks the other half.
    assert [c["metric"] for c in overall] == ["ndcg@10", "recall@10", "rr@10"]
    members = {
        "all": list(range(len(baseline.query_ids))),
        "segment=business": [position[q["_id"]] for q in queries if q.get("segment") == "business"],
    }
    for metric, slice_name, max_drop, level in (
        ("ndcg@10", "all", 0.06, 0.05 * 0.5 / len(overall)),
        ("recall@10", "segment=business", 0.07, 0.05 * 0.5 / len(slices)),
    ):
        rows = members[slice_name]
        values = np.asarray(baseline.scores[metric])[rows]
        sd = float(values.std(ddof=1))
        drop = detectable_drop(sd=sd, n=len(rows), level=level, max_drop=max_drop, resamples=10_000)
        needed = queries_needed(sd=sd, level=level, max_drop=max_drop, resamples=10_000)
        assert drop is not None
        check = check_of(document, metric, slice_name)
        assert check["n"] == len(rows)
        assert check["level"] == pytest.approx(level, rel=1e-12)
        assert check["detectable_drop"] == pytest.approx(drop, rel=1e-12)
        assert check["queries_needed"] == needed
        assert check["sd"] == pytest.approx(sd, rel=1e-12)
        assert check["sd_source"] == "assumption"
        # No data: the text states each figure's range over runs correlating 0.3 to 0.9, the
        # baseline's sd scaled by sqrt(2 (1 - correlation)) at each end.
        ends = [sd * np.sqrt(2 * (1 - r)) for r in (0.9, 0.3)]
        drops = [
            detectable_drop(sd=end, n=len(rows), level=level, max_drop=max_drop, resamples=10_000)
            for end in ends
        ]
        counts = [
            queries_needed(sd=end, level=level, max_drop=max_drop, resamples=10_000) for end in ends
        ]
        assert check["range"]["sd"] == pytest.approx(ends, rel=1e-12)
        assert check["range"]["detectable_drop"] == pytest.approx(drops, rel=1e-12)
        assert check["range"]["queries_needed"] == counts
        row = row_of(text, metric, slice_name)
        assert row[2:7] == [str(len(rows)), f"{max_drop * 100:.1f}pt", f"{level:.2g}",
                            f"{ends[0] * 100:.1f}-{ends[1] * 100:.1f}pt",
                            f"{drops[0] * 100:.1f}-{drops[1] * 100:.1f}pt"]  # fmt: skip
        assert row[-1] == f"{counts[0]}-{counts[1]}"


def test_p_fail_is_at_most_a_half_at_the_threshold_and_grows_with_the_drop(
    example: tuple[dict[str, Any], str],
) -> None:
    document, _ = example
    assert document["multiples"] == [0.0, 0.5, 1.0, 1.5, 2.0]
    for check in document["checks"]:
        if not check["gated"]:
            assert [p["probability"] for p in check["fail_probability"]] == [0.0] * 5
            continue
        chances = [p["probability"] for p in check["fail_probability"]]
        # With no change the check alone fails under its level; at exactly max_drop half the
        # measurements fall short of it: never more than 50%.
        assert chances[0] <= check["level"]
        assert chances[2] <= 0.5
        assert chances == sorted(chances)
        assert [p["drop"] for p in check["fail_probability"]] == pytest.approx(
            [m * check["max_drop"] for m in (0.0, 0.5, 1.0, 1.5, 2.0)]
        )
        # The detectable drop is where P(fail) reaches 80%: past 1.5x exactly when P(1.5x) < 80%.
        assert (check["detectable_drop"] > 1.5 * check["max_drop"]) == (chances[3] < 0.8)
    slice_chances = [
        c["fail_probability"][2]["probability"]
        for c in document["checks"]
        if c["gated"] and c["slice"] != "all"
    ]
    assert max(slice_chances) < 0.5  # the test binds on the small slices


def test_the_text_lists_every_check_and_explains_itself(
    example: tuple[dict[str, Any], str],
) -> None:
    document, text = example
    lines = text.splitlines()
    assert lines[0] == f"retrieval-gate power: {EXAMPLE}"
    assert lines[5].split()[:7] == ["metric", "slice", "n", "max_drop", "level", "sd", "detects"]
    assert row_of(text, "ndcg@10", "all")[10] == "50%"
    small = "not gated (3 checks):\n  ndcg@10 on intent=security: 8 queries, below min_size 20\n"
    assert small in text
    assert "never tested for a drop (no max_drop): ap@10" in text
    assert "What the numbers mean" in text
    assert "for runs correlating 0.3 to 0.9" in text
    assert lines[3] == (
        "sd of the differences: not measured: the baseline's sd x sqrt(2 (1 - correlation)) "
        "for runs correlating 0.3 to 0.9"
    )
    assert "(each figure is its range over runs correlating 0.3 to 0.9" in text
    gated = [c for c in document["checks"] if c["gated"]]
    rows = [line for line in lines if line.startswith(("ndcg@10 ", "recall@10 ", "rr@10 "))]
    # Every gated check's row, then the overall checks' figures at each correlation.
    assert len(rows) == len(gated) + 3
    lead = lines.index(
        "at each correlation of the runs: the drop detected with 80% power (P(fail) at 1.5x "
        "max_drop):"
    )
    # Each figure right-aligned under its correlation, as the numbers of the table above are.
    ends = [found.end() for found in re.finditer(r"correlation \S+", lines[lead + 1])]
    assert len(ends) == 4
    for row in lines[lead + 2 : lead + 5]:
        assert [found.end() for found in re.finditer(r"\S+pt \(\S+\)", row)] == ends, row
    assert row_of(text, "ndcg@10", "all") != rows[-3].split()
    assert document["untested_metrics"] == ["ap@10"]


def test_json_is_sorted_deterministic_and_round_trips(example: tuple[dict[str, Any], str]) -> None:
    document, _ = example
    code, out, _ = run_cli("power", "-c", str(EXAMPLE), "--format", "json")
    assert code == 0
    assert json.dumps(json.loads(out), indent=2, sort_keys=True) + "\n" == out
    assert run_cli("power", "-c", str(EXAMPLE), "--format", "json")[1] == out
    assert document["schema"] == "retrieval-gate/power"
    assert document["schema_version"] == 3
    assert document["settings"] == {
        "alpha": 0.05,
        "correction": "holm",
        "min_size": 20,
        "on_inconclusive": "pass",
        "overall_share": 0.5,
        "require_significance": True,
        "resamples": 10_000,
        "rule": "significant-drop",
        "test": "randomization",
    }
    assert set(document["checks"][0]) == {
        "metric", "slice", "n", "threshold", "max_drop", "sd", "sd_source", "level",
        "detectable_drop", "detectable_drop_concentrated", "by_correlation", "fail_probability",
        "queries_needed", "gated", "reason", "correlation", "range",
    }  # fmt: skip
    assert document["spread"] == {
        "source": "assumption",
        "from": None,
        "assumed_correlation": 0.5,
        "range": [0.3, 0.9],
        "correlations": [0.3, 0.5, 0.7, 0.9],
        "concentrated_share": 0.1,
    }


# Errors ----------------------------------------------------------------------------------------


def test_a_missing_baseline_is_exit_2_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "baseline.json"
    code, out, err = run_cli("power", "-c", str(EXAMPLE), "--baseline", str(missing))
    assert code == 2
    assert out == ""
    assert f"no baseline at {missing}" in err
    assert f"retrieval-gate baseline -c {EXAMPLE}" in err


def test_an_invalid_config_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "gate.yaml"
    bad.write_text("version: 1\nk: ten\n")
    code, out, err = run_cli("power", "-c", str(bad))
    assert code == 2
    assert out == ""
    assert str(bad) in err


def test_a_baseline_that_cannot_be_compared_is_exit_2_naming_it(tmp_path: Path) -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["k"] = 5
    document["dataset"]["path"] = str(REPO / "configs" / "example")
    config = tmp_path / "k5.yaml"
    config.write_text(yaml.safe_dump(document))
    code, out, err = run_cli("power", "-c", str(config), "--baseline", str(EXAMPLE_BASELINE))
    assert code == 2
    assert out == ""
    assert f"{EXAMPLE_BASELINE}: the baseline cannot be compared" in err
    assert "k: baseline 10, now 5" in err


# A labelled set of our own -----------------------------------------------------------------------

HOSTILE = ("\x1b[31mred\x1b[0m", "::error::pwned")
QUERIES = [
    {"_id": f"q{i:02d}", "text": f"query number {i}", "team": HOSTILE[i % 2]} for i in range(40)
]
CORPUS = [{"_id": f"d{i}", "title": f"doc {i}", "text": f"query number {i}"} for i in range(40)]
QRELS = [(f"q{i:02d}", f"d{i}", 1) for i in range(40)] + [
    (f"q{i:02d}", f"d{(i + 7) % 40}", 1) for i in range(40)
]


def test_hostile_slice_text_is_inert(tmp_path: Path) -> None:
    config = labelled_set(
        tmp_path,
        queries=QUERIES,
        qrels=QRELS,
        corpus=CORPUS,
        metrics={"recall@10": {"max_drop": "5pt"}},
        slices={"by": ["team"], "min_size": 2},
    )
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    code, text, err = run_cli("power", "-c", str(config))
    assert code == 0, err
    assert "\x1b" not in text
    assert not any(line.lstrip().startswith("::") for line in text.splitlines())
    assert "team=?[31mred?[0m" in text  # the ESC bytes shown as ?, as the console summary does
    assert "team=::error::pwned" in text  # inside a row, never at a line's start
    code, out, _ = run_cli("power", "-c", str(config), "--format", "json")
    assert code == 0
    assert "\x1b" not in out
    names = {c["slice"] for c in json.loads(out)["checks"]}
    assert names == {"all", "team=\x1b[31mred\x1b[0m", "team=::error::pwned"}


def test_a_small_set_names_the_checks_that_cannot_be_gated(tmp_path: Path) -> None:
    # 6 queries: the exact sign-flip test cannot go below 2^-6, above the overall level.
    config = labelled_set(tmp_path)
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    code, text, err = run_cli("power", "-c", str(config))
    assert code == 0, err
    assert "no check can be gated" in text
    assert "  ndcg@10 on all: 6 queries cannot give p <= 0.013, this check's level" in text
    document = power_json(config)
    assert not any(c["gated"] for c in document["checks"])
    assert all(c["detectable_drop"] is None for c in document["checks"])


def test_a_baseline_of_repeats_adds_its_run_noise_to_what_power_states(tmp_path: Path) -> None:
    import shutil

    from tests.helpers.cli import run_cli

    root = REPO
    shutil.copytree(
        root / "configs", tmp_path / "configs", ignore=shutil.ignore_patterns("cache.sqlite*")
    )
    config = tmp_path / "configs" / "example-noisy.yaml"
    base = tmp_path / "b.json"
    code, _, err = run_cli(
        "baseline", "-c", str(config), "--quiet", "--repeats", "3", "-o", str(base)
    )
    assert code == 0, err
    plain = tmp_path / "plain.json"
    code, _, err = run_cli("baseline", "-c", str(config), "--quiet", "-o", str(plain))
    assert code == 0, err
    code, noisy_out, err = run_cli(
        "power", "-c", str(config), "--baseline", str(base), "-f", "json"
    )
    assert code == 0, err
    assert "run-to-run noise, measured on the baseline's 3 runs" in err
    code, plain_out, _ = run_cli("power", "-c", str(config), "--baseline", str(plain), "-f", "json")
    noisy = {(c["metric"], c["slice"]): c for c in json.loads(noisy_out)["checks"]}
    single = {(c["metric"], c["slice"]): c for c in json.loads(plain_out)["checks"]}
    overall = noisy[("ndcg@10", "all")]
    assert overall["queries_needed"] is None  # more queries do not remove run-wide noise
    assert overall["detectable_drop"] is not None
    assert single[("ndcg@10", "all")]["detectable_drop"] is not None


def test_the_baseline_view_leaves_out_a_query_the_baseline_lacks_and_renumbers_slices() -> None:
    from retrieval_gate.core.model import Query
    from retrieval_gate.gate.power.estimate import baseline_view
    from tests.helpers.baselines import make

    baseline = make()  # q1, q2, q3: ndcg@10 0.1, 1/3, 1.0
    queries = [Query("q3", "c"), Query("q9", "new"), Query("q1", "a")]
    slices = {"all": np.array([0, 1, 2]), "late": np.array([1, 2])}
    scores, view = baseline_view(baseline, queries, slices)
    assert scores["ndcg@10"].tolist() == [1.0, 0.1]
    assert view["all"].tolist() == [0, 1]
    assert view["late"].tolist() == [1]  # q9 has no baseline score: q1 alone, now row 1


@pytest.mark.parametrize(
    ("n", "significance", "rule"),
    [(12, True, "significant-drop"), (12, False, "significant-drop"),
     (300, True, "significant-drop"), (300, True, "evidence-of-excess")],
)  # fmt: skip
def test_the_suggested_max_drop_is_the_least_whose_check_catches_half_again(
    n: int, significance: bool, rule: Rule
) -> None:
    from retrieval_gate.gate.checks.compare import ComparisonSettings
    from retrieval_gate.gate.power.estimate import CheckPower, enforceable_drop

    check = CheckPower(
        metric="ndcg@10", slice="all", n=n, threshold="1pt", max_drop=0.01, sd=0.25,
        level=0.01, detectable_drop=None, fail_probability=None, queries_needed=None,
        gated=True, reason="",
    )  # fmt: skip
    settings = ComparisonSettings(require_significance=significance, rule=rule)
    least = enforceable_drop(check, settings)
    assert least is not None
    level = 0.01 if significance else None

    def caught(max_drop: float) -> float | None:
        return detectable_drop(
            sd=0.25, n=n, level=level, max_drop=max_drop, resamples=10_000, rule=rule
        )

    assert caught(least) == pytest.approx(1.5 * least, rel=1e-9)
    below = caught(0.98 * least)
    assert below is not None
    assert below > 1.5 * 0.98 * least
    # 5 queries' sign flips cannot reach 0.01 (2^-5 > 0.01): no max_drop makes it catch.
    few = dataclasses.replace(check, n=5)
    assert enforceable_drop(few, ComparisonSettings()) is None


def test_a_check_failing_closed_is_stated_at_the_widest_level_holm_gives_it() -> None:
    from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
    from retrieval_gate.gate.power.estimate import estimate

    rng = np.random.default_rng(3)
    scores = {metric: rng.uniform(0.0, 1.0, 200) for metric in ("ndcg@10", "recall@10")}
    thresholds = {metric: Threshold(max_drop=0.03) for metric in scores}
    settings = ComparisonSettings(rule="non-inferiority", on_inconclusive="fail")
    found = estimate(scores, {"all": np.arange(200)}, thresholds, {}, settings)
    assert [(c.metric, c.level) for c in found] == [("ndcg@10", 0.025), ("recall@10", 0.025)]
    for check in found:
        # Failing closed, a check fails unless shown within its margin: it fails least when
        # the other check is shown within first, and Holm's last step then tests it at alpha.
        sd = float(scores[check.metric].std(ddof=1))
        common: dict[str, Any] = {"sd": sd, "n": 200, "max_drop": 0.03, "resamples": 10_000}
        common |= {"rule": "non-inferiority", "on_inconclusive": "fail"}
        at_alpha = detectable_drop(level=0.05, **common)
        assert at_alpha is not None
        assert check.detectable_drop == pytest.approx(at_alpha, rel=1e-12)
        assert detectable_drop(level=0.025, **common) != pytest.approx(at_alpha, rel=1e-3)


def test_the_concentrated_note_explains_a_dash_only_beside_a_detectable_drop() -> None:
    from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
    from retrieval_gate.gate.power.estimate import PowerReport, estimate

    settings = ComparisonSettings()
    scores = {"ndcg@10": np.random.default_rng(5).uniform(0.0, 1.0, 300)}
    (check,) = estimate(scores, {"all": np.arange(300)}, {"ndcg@10": Threshold(max_drop=0.05)},
                        {}, settings)  # fmt: skip
    assert check.detectable_drop is not None
    assert check.concentrated_drop is not None

    def text(**changes: float | None) -> str:
        shown = dataclasses.replace(check, fail_range=None, **changes)  # type: ignore[arg-type]
        report = PowerReport(config="c.yaml", baseline="b.json", settings=settings,
                             checks=(shown,), untested=(), warnings=())  # fmt: skip
        return report.to_text()

    note = "(- if 10% carry it: no drop those queries can lose is caught with 80% power)"
    assert note not in text()  # 300 queries: a drop carried by 30 of them is caught
    assert note in text(concentrated_drop=None)
    # Nothing caught at all: the row's dashes are the detectable drop's, not this note's.
    assert note not in text(concentrated_drop=None, detectable_drop=None)


def test_a_chance_reads_0_or_100_percent_only_when_it_is_exactly_that() -> None:
    from retrieval_gate.gate.power import figures

    cells = [figures._chance(p, 0.8) for p in (0.0, 1e-9, 0.005, 0.0051, 0.5, 0.995, 1.0, None)]
    assert cells == ["0%", "<1%", "<1%", "1%", "50%", ">99%", "100%", "-"]
