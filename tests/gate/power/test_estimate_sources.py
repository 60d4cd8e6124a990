"""`power`'s sd of the differences from data: a saved run, main's history, the repeats."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.gate.baseline.file import read_baseline, read_record
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.history.record import ResultEntry, entry_line
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

EXAMPLE_BASELINE = REPO / "configs" / ".retrieval-gate" / "example" / "baseline.json"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of configs/ (no git repository around it: no history branch) with the
    regressed retriever's record beside it."""
    root = tmp_path_factory.mktemp("power-sources")
    shutil.copytree(
        REPO / "configs", root / "configs", ignore=shutil.ignore_patterns("cache.sqlite*")
    )
    regressed = root / "regressed.json"
    code, _, err = run_cli(
        "baseline", "-c", root / "configs" / "example-regressed.yaml", "--quiet", "-o", regressed
    )
    assert code == 0, err
    return root


def power(root: Path, *more: str | Path) -> tuple[int, dict[str, Any], str]:
    code, out, err = run_cli("power", "-c", root / "configs" / "example.yaml", "-f", "json", *more)
    return code, (json.loads(out) if code == 0 else {}), err


def overall(document: dict[str, Any], metric: str = "ndcg@10") -> dict[str, Any]:
    found: dict[str, Any] = next(
        c for c in document["checks"] if c["metric"] == metric and c["slice"] == "all"
    )
    return found


def run_file(record: Baseline, path: Path, *, ids: dict[str, str] | None = None) -> Path:
    """`record`'s top k as a TREC run file (query ids renamed by `ids`)."""
    lines = []
    for query, docs in record.top_k.items():
        name = (ids or {}).get(query, query)
        lines += [f"{name} Q0 {doc} {rank} {100 - rank} r" for rank, doc in enumerate(docs, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# A saved run ------------------------------------------------------------------------------------


def test_a_saved_record_gives_the_sd_of_its_differences_with_the_baseline(example: Path) -> None:
    regressed = example / "regressed.json"
    code, document, err = power(example, "--run", regressed)
    assert code == 0, err
    assert document["spread"]["source"] == "run"
    assert document["spread"]["from"] == str(regressed)
    assert document["assumption"].startswith("the sd of the per-query differences between")
    base, other = read_baseline(EXAMPLE_BASELINE), read_record(regressed)
    for metric in ("ndcg@10", "recall@10", "rr@10"):
        deltas = np.asarray(other.scores[metric]) - np.asarray(base.scores[metric])
        check = overall(document, metric)
        assert check["sd_source"] == "run"
        assert check["sd"] == pytest.approx(float(deltas.std(ddof=1)), rel=1e-12)
        assert check["by_correlation"] == []  # measured: no assumption to vary
        even, concentrated = check["detectable_drop"], check["detectable_drop_concentrated"]
        assert even is not None
        assert concentrated is None or concentrated > even
    code, text, _ = run_cli("power", "-c", example / "configs" / "example.yaml", "--run", regressed)
    assert code == 0
    assert f"sd of the differences: measured between {regressed} and the baseline" in text
    assert "had the runs correlated otherwise" not in text


def test_a_run_file_is_scored_on_the_labelled_set_as_its_record_is(
    example: Path, tmp_path: Path
) -> None:
    regressed = read_record(example / "regressed.json")
    trec = run_file(regressed, tmp_path / "regressed.trec")
    _, from_record, _ = power(example, "--run", example / "regressed.json")
    code, from_run, err = power(example, "--run", trec)
    assert code == 0, err
    assert from_run["spread"]["from"] == str(trec)
    assert [c["sd"] for c in from_run["checks"]] == pytest.approx(
        [c["sd"] for c in from_record["checks"]], rel=1e-12
    )


def test_a_run_equal_to_the_baseline_falls_back_to_the_assumption_and_says_so(
    example: Path, tmp_path: Path
) -> None:
    same = run_file(read_baseline(EXAMPLE_BASELINE), tmp_path / "same.trec")
    code, document, err = power(example, "--run", same)
    assert code == 0, err
    assert {c["sd_source"] for c in document["checks"] if c["gated"]} == {"assumption"}
    _, plain, _ = power(example, "--no-history")
    assert overall(document)["sd"] == overall(plain)["sd"]
    code, text, _ = run_cli("power", "-c", example / "configs" / "example.yaml", "--run", same)
    assert "(*: the data do not vary on that check" in text


def test_a_run_of_another_query_set_is_exit_2_naming_the_file(
    example: Path, tmp_path: Path
) -> None:
    record = read_baseline(EXAMPLE_BASELINE)
    # A record of other queries: every id renamed, the scores as they were.
    renamed = tmp_path / "other.json"
    document = json.loads(EXAMPLE_BASELINE.read_text(encoding="utf-8"))
    document["query_ids"] = [f"x-{q}" for q in document["query_ids"]]
    document.pop("top_k", None)
    renamed.write_text(json.dumps(document), encoding="utf-8")
    code, _, err = power(example, "--run", renamed)
    assert code == 2
    assert str(renamed) in err
    # A run file of other queries: the saved run's coverage check names it.
    trec = run_file(record, tmp_path / "other.trec", ids={q: f"x-{q}" for q in record.query_ids})
    code, _, err = power(example, "--run", trec)
    assert code == 2
    assert "other.trec" in err


def test_a_record_without_a_metric_is_exit_2_naming_it(example: Path, tmp_path: Path) -> None:
    document = json.loads((example / "regressed.json").read_text(encoding="utf-8"))
    document["scores"].pop("rr@10")
    document["fingerprints"]["metrics"].remove("rr@10")
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps(document), encoding="utf-8")
    code, _, err = power(example, "--run", fewer)
    assert code == 2
    assert "fewer.json" in err
    assert "no scores of rr@10" in err


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("missing.json", None, "no such file"),
        ("broken.json", b'{"schema_version": 1, ', "not valid JSON"),
        ("deep.json", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nested too deeply"),
        ("empty.json", b"{}", "invalid baseline"),
        ("binary.trec", b"\xff\xfe\x00garbage\x1b[31m\n", "binary.trec"),
    ],
)
def test_a_bad_run_is_exit_2_naming_it(
    example: Path, tmp_path: Path, name: str, content: bytes | None, said: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    code, _, err = power(example, "--run", path)
    assert code == 2
    assert said in err
    assert name in err
    assert "\x1b" not in err


def test_a_hostile_run_path_is_printed_inert(example: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "run\x1b[2J\n::error::x.json"
    shutil.copy(example / "regressed.json", hostile)
    code, out, err = run_cli("power", "-c", example / "configs" / "example.yaml", "--run", hostile)
    assert code == 0, err
    assert "\x1b" not in out + err
    assert not any(line.startswith("::") for line in (out + err).splitlines())
    code, out, _ = run_cli(
        "power", "-c", example / "configs" / "example.yaml", "--run", hostile, "-f", "json"
    )
    assert json.loads(out)["spread"]["from"] == str(hostile)
    assert "\x1b" not in out


def test_hostile_query_ids_in_a_run_file_stay_inert(example: Path, tmp_path: Path) -> None:
    record = read_baseline(EXAMPLE_BASELINE)
    hostile = {q: f"::error::{q}\x1b[2J" for q in record.query_ids}
    trec = tmp_path / "hostile.trec"
    lines = [
        f"{hostile[q]} Q0 {doc} {rank} 1 r"
        for q, docs in record.top_k.items()
        for rank, doc in enumerate(docs, 1)
    ]
    trec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_cli("power", "-c", example / "configs" / "example.yaml", "--run", trec)
    assert code == 2
    assert "\x1b" not in out + err
    assert not any(line.startswith("::") for line in (out + err).splitlines())


# Main's history ---------------------------------------------------------------------------------


def history_file(path: Path, steps: list[dict[str, np.ndarray] | None]) -> Path:
    """A history of config `example`: one record per step, its scores the baseline's plus
    the step's differences (None: the same scores as the record before), kept within [0, 1]
    as the metrics are; each step is updated to the differences it made."""
    base = read_baseline(EXAMPLE_BASELINE)
    scores = {m: np.asarray(v, dtype=np.float64) for m, v in base.scores.items()}
    lines = []
    for number, step in enumerate(steps):
        if step is not None:
            moved = {m: np.clip(scores[m] + step[m], 0.0, 1.0) for m in step}
            step.update({m: moved[m] - scores[m] for m in step})
            scores = {**scores, **moved}
        record = dataclasses.replace(base, scores=dict(scores), repeats=None)
        entry = ResultEntry(
            config="example",
            commit=f"{number:040x}",
            time="2026-01-01T00:00:00Z",
            ref="refs/heads/main",
            pr=number + 1,
            subject=f"Merge pull request #{number + 1}",
            status="pass",
            tool_version="0",
            fingerprints={"labelled_set": base.fingerprints.dataset, "queries": None,
                          "config": "0" * 64},
            means={m: float(v.mean()) for m, v in scores.items()},
            slices={},
            record=record,
        )  # fmt: skip
        lines.append(entry_line(entry))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_main_s_history_gives_the_pooled_sd_of_consecutive_records(
    example: Path, tmp_path: Path
) -> None:
    rng = np.random.default_rng(29)
    n = len(read_baseline(EXAMPLE_BASELINE).query_ids)
    steps: list[dict[str, np.ndarray] | None] = [
        {},
        {"ndcg@10": rng.normal(0, 0.10, n)},
        None,  # a merge that changed no score: left out
        {"ndcg@10": rng.normal(0, 0.20, n)},
    ]
    history = history_file(tmp_path / "example.jsonl", steps)
    code, document, err = power(example, "--history", history)
    assert code == 0, err
    assert "1 merge of main that changed no score left out" in err
    assert document["spread"]["source"] == "history"
    assert document["spread"]["from"] == "2 pairs of consecutive records of main"
    first, second = steps[1], steps[3]
    assert first is not None
    assert second is not None
    pooled = np.sqrt((first["ndcg@10"].var(ddof=1) + second["ndcg@10"].var(ddof=1)) / 2)
    check = overall(document)
    assert check["sd_source"] == "history"
    assert check["sd"] == pytest.approx(float(pooled), rel=1e-9)
    # How consecutive records correlate query by query, pooled over the 2 pairs.
    r0 = np.asarray(read_baseline(EXAMPLE_BASELINE).scores["ndcg@10"], dtype=np.float64)
    r1 = r0 + first["ndcg@10"]
    r3 = r1 + second["ndcg@10"]
    before = np.concatenate([r0 - r0.mean(), r1 - r1.mean()])
    after = np.concatenate([r1 - r1.mean(), r3 - r3.mean()])
    pooled_r = float(before @ after / np.sqrt((before @ before) * (after @ after)))
    singles = sorted(float(np.corrcoef(a, b)[0, 1]) for a, b in ((r0, r1), (r1, r3)))
    assert check["correlation"]["value"] == pytest.approx(pooled_r, rel=1e-9)
    assert check["correlation"]["pairs"] == 2
    assert [check["correlation"]["lowest"], check["correlation"]["highest"]] == pytest.approx(
        singles, rel=1e-9
    )
    assert check["range"] is None
    code, text, _ = run_cli(
        "power", "-c", example / "configs" / "example.yaml", "--history", history
    )
    assert (
        "correlation of consecutive records, pooled over 2 pairs (single pairs' range in "
        f"brackets): ndcg@10 {pooled_r:.2f} ({singles[0]:.2f}-{singles[1]:.2f})"
    ) in text
    # recall@10 never moved: its checks fall back to the assumption, and its ranges.
    assert overall(document, "recall@10")["sd_source"] == "assumption"
    assert overall(document, "recall@10")["correlation"] is None
    assert overall(document, "recall@10")["range"] is not None
    # --run comes first; --no-history leaves the history unread.
    assert (
        power(example, "--history", history, "--run", example / "regressed.json")[1]["spread"][
            "source"
        ]
        == "run"
    )
    code, _, err = run_cli(
        "power", "-c", example / "configs" / "example.yaml", "--history", history, "--no-history"
    )
    assert code == 2
    assert "exclude each other" in err


def test_a_history_of_other_judgments_or_queries_is_not_used(example: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = len(read_baseline(EXAMPLE_BASELINE).query_ids)
    history = history_file(tmp_path / "example.jsonl", [{}, {"ndcg@10": rng.normal(0, 0.1, n)}])
    lines = history.read_text(encoding="utf-8").splitlines()
    changed = []
    for line in lines:
        document = json.loads(line)
        document["record"]["fingerprints"]["dataset"] = "0" * 64  # other judgments
        changed.append(json.dumps(document))
    history.write_text("\n".join(changed) + "\n", encoding="utf-8")
    code, document, err = power(example, "--history", history)
    assert code == 0, err
    assert document["spread"]["source"] == "assumption"
    assert "no two consecutive records of this labelled set" in err


def test_a_broken_named_history_is_exit_2_naming_it(example: Path, tmp_path: Path) -> None:
    history = tmp_path / "example.jsonl"
    history.write_text("{not json\n", encoding="utf-8")
    code, _, err = power(example, "--history", history)
    assert code == 2
    assert "example.jsonl" in err
    code, _, err = power(example, "--history", tmp_path / "absent.jsonl")
    assert code == 2
    assert "absent.jsonl" in err


# The repeats, and the assumption ----------------------------------------------------------------


def test_the_repeats_give_the_noise_floor_stated_as_a_lower_bound(example: Path) -> None:
    config = example / "configs" / "example-noisy.yaml"
    repeated = example / "repeated.json"
    code, _, err = run_cli("baseline", "-c", config, "--quiet", "--repeats", "3", "-o", repeated)
    assert code == 0, err
    code, out, err = run_cli("power", "-c", config, "--baseline", repeated, "-f", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["spread"]["source"] == "repeats"
    assert "noise floor" in document["assumption"]
    assert "lower bounds" in document["assumption"]
    runs = read_baseline(repeated).repeats
    assert runs is not None
    check = overall(document)
    pairs = [
        np.asarray(b["ndcg@10"]) - np.asarray(a["ndcg@10"])
        for a, b in itertools.pairwise(runs.runs)
    ]
    pooled = np.sqrt(np.mean([p.var(ddof=1) for p in pairs]))
    # Two runs' differences have twice a run's noise; the check's mean of gate.repeats runs
    # against the baseline's 3 has (1/3 + 1/R) of it.
    repeats = 1
    expected = pooled * np.sqrt((1 / 3 + 1 / repeats) / 2)
    assert check["sd_source"] == "repeats"
    assert check["sd"] == pytest.approx(float(expected), rel=1e-9)
    # How the runs correlate query by query, read from their 2 consecutive pairs.
    before = np.concatenate([a["ndcg@10"] - np.mean(a["ndcg@10"]) for a in runs.runs[:2]])
    after = np.concatenate([b["ndcg@10"] - np.mean(b["ndcg@10"]) for b in runs.runs[1:]])
    pooled_r = before @ after / np.sqrt((before @ before) * (after @ after))
    assert check["correlation"]["pairs"] == 2
    assert check["correlation"]["value"] == pytest.approx(float(pooled_r), rel=1e-9)
    # The range is the pairs' own correlations; the pooled value need not lie inside it (with
    # the pairs' spreads unequal it falls below both, by Cauchy-Schwarz).
    own = [np.corrcoef(a["ndcg@10"], b["ndcg@10"])[0, 1] for a, b in itertools.pairwise(runs.runs)]
    assert check["correlation"]["lowest"] == pytest.approx(min(own), rel=1e-9)
    assert check["correlation"]["highest"] == pytest.approx(max(own), rel=1e-9)
    code, text, _ = run_cli("power", "-c", config, "--baseline", repeated)
    assert f"correlation of the baseline's runs, pooled over 2 pairs: a change correlates less: " \
        f"ndcg@10 {pooled_r:.2f}" in text  # fmt: skip
    # The repeats' noise floor is measured: the correlations scale the baseline's own sd.
    assert (
        "with the sd the baseline's scores give at each correlation of the runs: the drop "
        "detected with 80% power (P(fail) at 1.5x max_drop):"
    ) in text.splitlines()
    # Beside the noise floor: what the baseline's sd gives at every correlation, and P(fail)
    # at 0 to 2x max_drop there.
    assert document["spread"]["correlations"] == [0.3, 0.5, 0.7, 0.9]
    assert [r["correlation"] for r in check["by_correlation"]] == [0.3, 0.5, 0.7, 0.9]
    assert check["range"] is None  # measured: no range stands for the figures
    # (Not monotone in the correlation here: with run-wide noise, a smaller per-query spread
    # leaves the runs' few degrees of freedom to the test.)
    for figure in check["by_correlation"]:
        chances = [p["probability"] for p in figure["fail_probability"]]
        assert chances == sorted(chances)
        assert 0 < chances[3] < 1
        assert figure["detectable_drop"] > check["max_drop"]


def test_without_data_each_figure_is_its_range_over_the_assumed_correlations(
    example: Path,
) -> None:
    code, document, err = power(example, "--no-history")
    assert code == 0, err
    assert document["spread"]["range"] == [0.3, 0.9]
    check = overall(document)
    sd = check["sd"]  # the baseline's: the differences' at 0.5
    correlated = check["by_correlation"]
    assert [r["correlation"] for r in correlated] == [0.3, 0.5, 0.7, 0.9]
    assert [r["sd"] for r in correlated] == pytest.approx(
        [sd * np.sqrt(2 * (1 - r)) for r in (0.3, 0.5, 0.7, 0.9)]
    )
    drops = [r["detectable_drop"] for r in correlated]
    at_target = [r["fail_probability"][3]["probability"] for r in correlated]
    # Less correlated runs differ more: the drop caught grows, P(fail) at 1.5x falls.
    assert drops == sorted(drops, reverse=True)
    assert at_target == sorted(at_target)
    assert drops[1] == check["detectable_drop"]
    stated = check["range"]
    assert stated["correlations"] == [0.3, 0.9]
    assert stated["detectable_drop"] == [drops[-1], drops[0]]
    assert stated["sd"] == pytest.approx([correlated[-1]["sd"], correlated[0]["sd"]])
    # P(fail) at every multiple: its range holds each correlation's figure (below max_drop it
    # first grows, then falls with the sd, so the range is taken over a finer grid).
    for i, bounds in enumerate(stated["fail_probability"]):
        for row in correlated:
            chance = row["fail_probability"][i]["probability"]
            assert bounds["lowest"] - 1e-12 <= chance <= bounds["highest"] + 1e-12
    code, text, _ = run_cli("power", "-c", example / "configs" / "example.yaml", "--no-history")
    row = next(line.split() for line in text.splitlines() if line.startswith("ndcg@10    all "))
    assert row[5] == f"{correlated[-1]['sd'] * 100:.1f}-{correlated[0]['sd'] * 100:.1f}pt"
    assert row[6] == f"{drops[-1] * 100:.1f}-{drops[0] * 100:.1f}pt"
    assert "no data to read how they correlate from" in text
    assert "exact when" not in text  # no single correlation passed off as the truth


def test_a_claim_takes_its_sd_from_main_s_history_as_power_does(
    example: Path, tmp_path: Path
) -> None:
    rng = np.random.default_rng(31)
    n = len(read_baseline(EXAMPLE_BASELINE).query_ids)
    steps: list[dict[str, np.ndarray] | None] = [
        {},
        {"ndcg@10": rng.normal(0, 0.05, n)},
        {"ndcg@10": rng.normal(0, 0.08, n)},
    ]
    history = history_file(tmp_path / "example.jsonl", steps)
    config = example / "configs" / "example.yaml"
    claim = ("power", "-c", config, "--claim", "-2pt", "--n", "131", "-f", "json")
    code, out, err = run_cli(*claim, "--history", history)
    assert code == 0, err
    document = json.loads(out)
    first, second = steps[1], steps[2]
    assert first is not None
    assert second is not None
    pooled = np.sqrt((first["ndcg@10"].var(ddof=1) + second["ndcg@10"].var(ddof=1)) / 2)
    assert document["sd_source"] == "history:ndcg@10"
    assert document["sd_from"] == "2 pairs of consecutive records of main"
    assert document["sd"] == pytest.approx(float(pooled), rel=1e-9)
    code, text, _ = run_cli(*claim[:-2], "--history", history)
    assert (
        f"per-query sd {pooled:.4g} of ndcg@10's differences on 2 pairs of consecutive records "
        "of main"
    ) in text
    # Without the history: the baseline's sd, stated as exact only at a correlation of 0.5.
    code, out, _ = run_cli(*claim, "--no-history")
    scores = read_baseline(EXAMPLE_BASELINE).scores["ndcg@10"]
    plain = json.loads(out)
    assert plain["sd_source"] == "baseline:ndcg@10"
    assert plain["sd_from"] == ""
    assert plain["sd"] == pytest.approx(float(np.std(scores, ddof=1)), rel=1e-12)
    code, _, err = run_cli(*claim, "--history", history, "--no-history")
    assert code == 2
    assert "exclude each other" in err
