"""Every line that states power agrees with the others and with stats.detectability: `check`'s
console and reports, `power`'s table and `lint`'s warnings, over a grid of query counts,
thresholds and noise, with and without repeated runs (issue 27, item 7).

The rule every statement follows: a check "cannot enforce its threshold" (too few queries,
threshold-below-mde, slice-below-mde) exactly when the true drop it catches with 80% power is
past 1.5 times its max_drop, or it can catch none; "needs N queries" is `queries_needed`, the
fewest that catch 1.5 times max_drop, so it is more than the check has; "detects X pt" is the
detectable drop, and never printed as small as a goal it misses.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import shutil
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.core.version import __version__
from retrieval_gate.datasets.convert import convert_cranfield
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.run_noise import RunNoise, run_noise, run_spread
from retrieval_gate.gate.power.estimate import PowerReport, estimate
from retrieval_gate.gate.result import failing_checks
from retrieval_gate.report import render, summary_of, validate_result
from retrieval_gate.stats.detectability import (
    OPERATING,
    POWER,
    TARGET,
    detectable_drop,
    fail_probability,
    queries_needed,
)
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

METRIC = "ndcg@10"

STATEMENT = re.compile(
    r"(?:detects (?P<x>\d+\.\d) pt \((?P<power>\d+)% power\)"
    r"|too few queries to catch any drop \((?P<n>\d+)(?: at level [^)]*)?\)), "
    r"(?:needs (?:(?P<needed>\d+) queries|(?P<more>more (?:runs \([^)]*\) or )?queries)) for "
    r"|(?P<never>no number of queries catches) )"
    r"(?P<t>\d+(?:\.\d+)?) pt \(1\.5(?:x|\u00d7) max_drop\)"
)
"""One statement of what a check can catch, as every report format words it."""
FLAGGED = re.compile(r"too few queries(?: or runs)? to enforce the threshold: ")


def statements(text: str) -> list[re.Match[str]]:
    return list(STATEMENT.finditer(text))


def assert_consistent(found: re.Match[str], n: int | None = None) -> None:
    """A statement agrees with itself: the drop it detects misses the goal it names, the
    queries it needs are more than the check has, a count is only given without noise."""
    goal = float(found["t"])
    assert found["power"] in (None, "80"), found[0]
    if found["x"] is not None:
        assert float(found["x"]) > goal, found[0]
    if found["needed"] is not None and n is not None:
        assert int(found["needed"]) > n, found[0]
    if found["n"] is not None and found["needed"] is not None:
        assert int(found["needed"]) > int(found["n"]), found[0]


def short(detectable: float | None, max_drop: float) -> bool:
    """Misses 1.5x max_drop with 80% power, computed here."""
    return detectable is None or detectable > TARGET * max_drop * (1 + 1e-9)


# check: the console summary and the Markdown report over a grid ------------------------------

SIZES = (3, 9, 25, 80, 225, 900)
DROPS = (0.005, 0.02, 0.05)
SPREADS = (0.02, 0.12, 0.35)
NOISE = (None, 0.004, 0.03)


def grid_checks(
    n: int, max_drop: float, sd: float, shift: float, noise: float | None
) -> tuple[Comparison, ComparisonSettings, dict[str, Any]]:
    """One overall check of `n` queries whose paired differences have sd `sd` and mean
    `-shift`, with three runs a side moved by a run-wide noise of sd `noise`."""
    rng = np.random.default_rng([n, int(max_drop * 1e4), int(sd * 100), int(shift > 0)])
    base = rng.random(n)
    current = base + rng.normal(-shift, sd, n)
    runs = None
    if noise is not None:
        runs = tuple(
            [{METRIC: side + rng.normal(0, noise) + rng.normal(0, noise / 4, n)} for _ in range(3)]
            for side in (base, current)
        )
        base = np.mean([run[METRIC] for run in runs[0]], axis=0)
        current = np.mean([run[METRIC] for run in runs[1]], axis=0)
    settings = ComparisonSettings()
    checks = compare(
        {METRIC: base},
        {METRIC: current},
        {"all": np.arange(n)},
        {METRIC: Threshold(max_drop=max_drop)},
        {},
        settings,
        strict=False,
        runs=runs,
    )
    rule: dict[str, Any] = {
        "sd": float(np.std(current - base, ddof=1)),
        "max_drop": max_drop,
        "resamples": settings.resamples,
    }
    if runs is not None:
        found = run_noise(runs, METRIC, np.arange(n))
        assert found is not None
        rule |= {"run_variance": found.variance, "run_df": found.df}
    return checks[0], settings, rule


def rendered(check: Comparison, settings: ComparisonSettings) -> tuple[str, str]:
    """The console summary and the Markdown report of a result holding `check`."""
    failures = failing_checks([check])
    record = validate_result(
        {
            "schema_version": 2,
            "tool_version": __version__,
            "name": "grid",
            "status": "fail" if failures else "pass",
            "failures": [asdict(c) for c in failures],
            "comparisons": [asdict(check)],
            "config": {"file": "g.yaml", "sha256": "0" * 64, "k": 10, "gate": asdict(settings)},
        }
    )
    return summary_of(record), render(record, "markdown")


@pytest.mark.parametrize(("n", "noise"), list(itertools.product(SIZES, NOISE)))
def test_check_states_power_consistently(n: int, noise: float | None) -> None:
    flagged_cases = quiet_cases = 0
    for max_drop, sd, shifted in itertools.product(DROPS, SPREADS, (False, True)):
        check, settings, rule = grid_checks(n, max_drop, sd, 1.3 * max_drop * shifted, noise)
        summary, markdown = rendered(check, settings)
        found = statements(summary) + statements(markdown)
        if not check.gated or check.failed:
            assert not found, summary
            assert not FLAGGED.search(summary), summary
            continue
        # The check's own figures are stats.detectability's, from its differences.
        level = check.level if settings.require_significance else None
        detectable = detectable_drop(n=n, level=level, **rule)
        assert check.detectable_drop == pytest.approx(detectable)
        needed = None if noise else queries_needed(level=level, **rule)
        assert check.queries_needed == needed
        if not short(detectable, max_drop) or check.ci_low == check.ci_high:
            assert not found, (max_drop, sd, summary)
            assert not FLAGGED.search(summary), (max_drop, sd, summary)
            quiet_cases += 1
            continue
        flagged_cases += 1
        assert FLAGGED.search(summary), summary
        assert found, summary
        assert ("or runs to enforce" in summary) == bool(check.run_sd)
        for statement in found:
            assert_consistent(statement, n)
            assert float(statement["t"]) == pytest.approx(TARGET * max_drop * 100)
            if statement["x"] is not None:
                assert detectable is not None
                assert abs(float(statement["x"]) - detectable * 100) <= 0.1 + 1e-9
            else:
                assert detectable is None
                assert int(statement["n"]) == n
            if needed is not None:
                assert int(statement["needed"]) == needed
                # The fewest: one query fewer misses the goal.
                assert short(detectable_drop(n=needed - 1, level=level, **rule), max_drop)
                assert not short(detectable_drop(n=needed, level=level, **rule), max_drop)
            elif noise:
                assert "runs" in (statement["more"] or "")
    # The grid has both kinds for the sizes in between.
    if 25 <= n <= 225 and not noise:  # 9 queries cannot fail on a drop carried by 2
        assert flagged_cases, quiet_cases
        assert quiet_cases, flagged_cases


# power: its table and its JSON over the same grid --------------------------------------------

ROW = re.compile(
    rf"^{re.escape(METRIC)}\s+all\s+(?P<n>\d+)\s+\S+\s+\S+\s+\S+\s+(?P<detects>-|\d+\.\dpt)\s+"
    r"(?P<concentrated>-|\d+\.\dpt)\s+(?P<p0>\S+)\s+(?P<p05>\S+)\s+"
    r"(?P<p1>\S+)\s+(?P<p15>\S+)\s+(?P<p2>\S+)\s+(?P<queries>-|\d+)$",
    re.M,
)


def percent(text: str) -> float:
    return {"<1%": 0.5, ">99%": 99.5}.get(text) or float(text.rstrip("%"))


@pytest.mark.parametrize(("n", "repeats"), list(itertools.product(SIZES[1:], (False, True))))
def test_power_states_power_consistently(n: int, repeats: bool) -> None:
    settings = ComparisonSettings()
    for max_drop, sd in itertools.product(DROPS, SPREADS):
        rng = np.random.default_rng([n, int(max_drop * 1e4), int(sd * 100)])
        scores = {METRIC: np.clip(rng.normal(0.5, sd, n), 0, 1)}
        runs = [{METRIC: scores[METRIC] + rng.normal(0, 0.01)} for _ in range(3)] if repeats else []
        checks = estimate(
            scores,
            {"all": np.arange(n)},
            {METRIC: Threshold(max_drop=max_drop)},
            {},
            settings,
            runs=runs,
            current_runs=3,
        )
        # The single figures' cells (the assumption's ranges join two such cells).
        report = PowerReport(
            config="c.yaml",
            baseline="b.json",
            settings=settings,
            checks=tuple(dataclasses.replace(c, fail_range=None) for c in checks),
            untested=(),
            warnings=(),
        )
        text = report.to_text()
        check = checks[0]
        if not check.gated:
            assert ROW.search(text) is None
            continue
        row = ROW.search(text)
        assert row is not None, text
        assert int(row["n"]) == n
        # The figures are detectability's for the baseline's spread.
        spread = float(np.std(scores[METRIC], ddof=1))
        assert check.sd == pytest.approx(spread)
        detectable = check.detectable_drop
        noise: dict[str, Any] = {}
        if repeats:
            # Three baseline runs and gate.repeats = 3 of the change: 2 + 2 degrees of freedom.
            found = run_spread((runs,), METRIC, np.arange(n))
            assert found is not None
            run = RunNoise.of(found[0], found[1] + 2, reference_runs=3, current_runs=3)
            noise = {"run_variance": run.variance, "run_df": run.df}
        rule = {"sd": spread, "level": check.level, "max_drop": max_drop, "resamples": 10_000}
        assert detectable == detectable_drop(n=n, **rule, **noise)
        missed = short(detectable, max_drop)
        assert check.fail_probability is not None
        chance = dict(zip(OPERATING, check.fail_probability, strict=True))
        for multiple, probability in chance.items():
            expected = fail_probability(multiple * max_drop, n=n, **rule, **noise)
            assert probability == pytest.approx(expected)
        if detectable is not None:
            shown = float(row["detects"].removesuffix("pt"))
            assert abs(shown - detectable * 100) <= 0.1 + 1e-9
            # Shown on the side of 1.5x max_drop it is on.
            assert (shown > TARGET * max_drop * 100) == missed, row[0]
        # P(fail) at 1.5x reaches the power exactly when the check catches 1.5x max_drop.
        assert (percent(row["p15"]) >= POWER * 100) == (not missed), row[0]
        assert percent(row["p1"]) <= 50
        if row["queries"] == "-":
            assert repeats or check.queries_needed is None
        else:
            assert not repeats
            assert (int(row["queries"]) <= n) == (not missed), row[0]
            assert int(row["queries"]) == queries_needed(**rule)
        document = report.document()["checks"][0]
        assert document["detectable_drop"] == detectable
        assert document["queries_needed"] == check.queries_needed


# lint: its warnings against power's figures, through the CLI ---------------------------------

LINT_SIZES = (17, 60, 225)  # 17: the fewest an overall check fails with on 30% of them
LINT_DROPS = ("1pt", "4pt", "10pt")


def synthetic_set(folder: Path, n: int) -> Path:
    """A labelled set of `n` queries and a run file whose per-query ndcg@10 varies; the config
    is written per threshold by the caller."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(n)
    queries, qrels, run = [], [], []
    for i in range(n):
        queries.append(json.dumps({"_id": f"q{i}", "text": f"query number {i}"}))
        for j in range(3):
            qrels.append(f"q{i} 0 d{i}-{j} {1 + j % 2}")
        ranks = rng.permutation(12)[:3]
        docs = [f"x{i}-{r}" for r in range(12)]
        for j, rank in enumerate(ranks):
            docs[rank] = f"d{i}-{j}"
        run += [f"q{i} Q0 {doc} {r + 1} {12 - r} t" for r, doc in enumerate(docs)]
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (folder / "qrels.txt").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    (folder / "run.trec").write_text("\n".join(run) + "\n", encoding="utf-8")
    return folder


def gate_config(folder: Path, max_drop: str) -> Path:
    path = folder / f"gate-{max_drop}.yaml"
    path.write_text(
        "version: 1\nname: grid\ndataset: {queries: queries.jsonl, qrels: qrels.txt}\n"
        "retriever: {type: run_file, path: run.trec}\nk: 10\n"
        f"metrics: {{ndcg@10: {{max_drop: {max_drop}}}}}\nbaseline: baseline.json\n",
        encoding="utf-8",
    )
    return path


LINT = re.compile(
    r"^ndcg@10: max_drop (?P<max_drop>\S+), but (?P<n>\d+) queries detect about "
    r"(?P<x>\d+\.\d)pt with 80% power \(level [^,]+, alpha 0\.05\): a true drop of 1\.5x "
    r"max_drop \((?P<t>[\d.]+)pt\) fails the gate (?P<p>\d+%|under 1%) of the time$"
)
FIX = re.compile(
    r"^label about (?P<needed>\d+) queries to detect 1\.5x max_drop"
    r"(?:, or raise max_drop to (?P<widest>\d+\.\d)pt or more)?$"
)


@pytest.mark.parametrize("n", LINT_SIZES)
def test_lint_warns_exactly_where_power_says_the_threshold_is_out_of_reach(
    n: int, tmp_path: Path
) -> None:
    folder = synthetic_set(tmp_path / "set", n)
    code, _, err = run_cli("baseline", "-c", str(gate_config(folder, "1pt")))
    assert code == 0, err
    warned = 0
    for max_drop in LINT_DROPS:
        config = gate_config(folder, max_drop)
        code, out, err = run_cli("power", "-c", str(config), "--format", "json")
        assert code == 0, err
        figures = json.loads(out)["checks"][0]
        code, out, err = run_cli("lint", "-c", str(config), "--format", "json")
        assert code == 0, err
        found = [f for f in json.loads(out)["findings"] if f["code"] == "threshold-below-mde"]
        drop = figures["max_drop"]
        missed = short(figures["detectable_drop"], drop)
        assert bool(found) == missed, (max_drop, figures, found)
        if not found:
            continue
        warned += 1
        message = LINT.match(found[0]["message"])
        assert message is not None, found[0]["message"]
        assert int(message["n"]) == n == figures["n"]
        detects, goal = float(message["x"]), float(message["t"])
        assert goal == pytest.approx(TARGET * drop * 100)
        assert detects > goal
        assert abs(detects - figures["detectable_drop"] * 100) <= 0.1 + 1e-9
        chance = next(
            f["probability"] for f in figures["fail_probability"] if f["multiple"] == TARGET
        )
        assert chance < POWER
        assert message["p"] == "under 1%" or int(message["p"].rstrip("%")) < POWER * 100
        fix = FIX.match(found[0]["fix"])
        assert fix is not None, found[0]["fix"]
        assert int(fix["needed"]) == figures["queries_needed"] > n
        if fix["widest"] is not None:
            # The max_drop it suggests is one this set enforces.
            widest = float(fix["widest"]) / 100
            reached = detectable_drop(
                sd=figures["sd"],
                n=n,
                level=figures["level"],
                max_drop=widest,
                resamples=10_000,
            )
            assert not short(reached, widest)
        # `power`'s table says the same.
        code, text, _ = run_cli("power", "-c", str(config))
        assert f"{message['x']}pt" in text
    assert warned, "the grid has a threshold out of reach at every size"


# The two cases, on Cranfield -----------------------------------------------------------

CRANFIELD = """\
version: 1
name: cran
dataset: {path: cran}
retriever: {type: bm25}
k: 10
metrics:
  ndcg@10: {max_drop: 2pt}
  recall@10: {max_drop: 3pt}
  mrr(rel=1)@10: {max_drop: 3pt}
baseline: .retrieval-gate/baseline.json
"""


SEEDED = """\
from pathlib import Path

from noisy_bm25 import NoisyBM25

RUNS = Path(__file__).with_name("runs.txt")


class Seeded(NoisyBM25):
    def __init__(self, **kwargs):
        run = int(RUNS.read_text()) + 1 if RUNS.exists() else 1
        RUNS.write_text(str(run))
        super().__init__(seed=run, **kwargs)
"""


@pytest.fixture(scope="module")
def cranfield(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with Cranfield as a BEIR folder, converted from the shared raw files."""
    root = tmp_path_factory.mktemp("cran-power")
    convert_cranfield(shared_data / "cranfield", root / "cran")
    return root


def test_a_harmless_change_on_225_queries_is_not_called_underpowered(cranfield: Path) -> None:
    config = cranfield / "retrieval-gate.yaml"
    config.write_text(CRANFIELD, encoding="utf-8")
    code, _, err = run_cli("baseline", "-c", str(config))
    assert code == 0, err
    config.write_text(CRANFIELD.replace("{type: bm25}", "{type: bm25, b: 0.7}"), encoding="utf-8")
    code, out, err = run_cli("check", "-c", str(config), "--quiet")
    assert code == 0, err + out
    # Each check catches far less than 1.5x its max_drop with 80% power (a harmless change
    # moves few queries): nothing is short of queries, whatever its detectable drop.
    assert "too few queries" not in out
    result = json.loads((cranfield / ".retrieval-gate" / "cran" / "result.json").read_text())
    for check in result["comparisons"]:
        assert check["queries_needed"] < check["n"]
        assert not short(check["detectable_drop"], check["max_drop"])
    report = (cranfield / ".retrieval-gate" / "cran" / "report.md").read_text()
    assert "cannot enforce" not in report
    assert not statements(out)
    assert not statements(report)


@pytest.fixture
def own_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The python retriever puts its folder on sys.path and imports noisy_bm25 from there:
    both are put back afterwards, for the tests that import their own noisy_bm25."""
    names = ("noisy_bm25", "seeded_cranfield")
    monkeypatch.setattr(sys, "path", list(sys.path))
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    yield
    for name in names:
        sys.modules.pop(name, None)
    sys.modules.update(saved)


@pytest.mark.usefixtures("own_imports")
def test_with_repeats_no_check_is_said_to_need_more_queries_for_what_it_catches(
    cranfield: Path,
) -> None:
    shutil.copy(REPO / "configs" / "noisy_bm25.py", cranfield / "noisy_bm25.py")
    # Each run another seed, the same ones on every test run: noisy, yet reproducible.
    (cranfield / "seeded_cranfield.py").write_text(SEEDED, encoding="utf-8")
    config = cranfield / "noisy.yaml"
    config.write_text(
        CRANFIELD.replace(
            "{type: bm25}",
            "{type: python, target: 'seeded_cranfield:Seeded', "
            f"kwargs: {{corpus: '{cranfield / 'cran' / 'corpus.jsonl'}', lost: [0.0, 0.08]}}}}",
        )
        .replace("2pt", "6pt")
        .replace("3pt", "6pt")
        .replace("baseline.json", "noisy.json"),
        encoding="utf-8",
    )
    code, _, err = run_cli("baseline", "-c", str(config), "--repeats", "3")
    assert code == 0, err
    code, out, err = run_cli("check", "-c", str(config), "--repeats", "3", "--quiet")
    assert code in (0, 1), err + out
    assert "run-to-run spread" in out
    report = (cranfield / ".retrieval-gate" / "cran" / "report.md").read_text()
    for text in (out, report):
        assert "needs more queries" not in text
        for found in statements(text):
            assert_consistent(found)
    result = json.loads((cranfield / ".retrieval-gate" / "cran" / "result.json").read_text())
    caught = [c for c in result["comparisons"] if not short(c["detectable_drop"], c["max_drop"])]
    assert caught, "with 6pt thresholds the overall checks catch 9 pt despite the noise"
    assert "too few queries" not in out
