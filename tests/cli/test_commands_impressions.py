"""Impression logs through the command line: `evaluate --impressions` prints AUC and GAUC over
users, and `check` gates GAUC between a baseline's scores and a current model's on one log."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

HOSTILE = "u\x1b[2J\n::error::pwned\r"


def _rows(seed: int, users: int = 90) -> list[dict[str, object]]:
    """A log of `users` users, 3-12 items each, clicks about 30%, a country per user."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    for u in range(users):
        for i in range(rng.randint(3, 12)):
            clicked = rng.random() < 0.3
            rows.append(
                {
                    "user": f"u{u:03d}",
                    "item": f"i{i}",
                    "clicked": clicked,
                    "country": ("fr", "de", "us")[u % 3],
                    "score": round(rng.gauss(1.0 if clicked else 0.0, 1.0), 2),
                }
            )
    return rows


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _worse(rows: list[dict[str, object]], country: str) -> list[dict[str, object]]:
    """The same impressions, scored by a model that ranks `country`'s users at random."""
    rng = random.Random(99)
    return [
        {**row, "score": round(rng.gauss(0.0, 1.0), 2)} if row["country"] == country else row
        for row in rows
    ]


def _config(folder: Path, log: str, scores: str, max_drop: str = "2pt") -> Path:
    path = folder / f"gate-{Path(scores).stem}.yaml"
    path.write_text(
        f"""version: 1
name: clicks
dataset:
  impressions: {log}
retriever:
  type: run_file
  path: {scores}
  format: impressions
k: 100
metrics:
  gauc: {{max_drop: {max_drop}}}
  auc: {{}}
  ndcg@10: {{}}
slices:
  by: [country]
  min_size: 20
baseline: baseline.json
""",
        encoding="utf-8",
    )
    return path


def test_evaluate_prints_gauc_and_says_which_users_are_one_class(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "log.jsonl",
        [
            {"user": "a", "item": "p1", "score": 0.9, "clicked": True},
            {"user": "a", "item": "n1", "score": 0.7, "clicked": False},
            {"user": "a", "item": "p2", "score": 0.4, "clicked": True},
            {"user": "a", "item": "n2", "score": 0.3, "clicked": False},
            {"user": "a", "item": "n3", "score": 0.1, "clicked": False},
            {"user": "b", "item": "p", "score": 0.5, "clicked": True},
            {"user": "b", "item": "n1", "score": 0.5, "clicked": False},
            {"user": "b", "item": "n2", "score": 0.2, "clicked": False},
            {"user": "c", "item": "x", "score": 0.5, "clicked": False},
        ],
    )
    code, out, err = run_cli("evaluate", "--impressions", path, "-m", "auc", "gauc", "-q")
    assert code == 0, err
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert lines["a"] == ["0.8333", "1.0417"]  # 5/6, and 5/6 * 5 / mean weight 4
    assert lines["c"] == ["-", "-"]
    assert lines["all"] == ["0.7917", "0.8021"]  # GAUC = (5 * 5/6 + 3 * 0.75) / 8
    assert "auc is undefined for 1 of 3 labelled queries" in err
    assert "gauc is undefined for 1 of 3 labelled queries" in err
    code, out, _ = run_cli("evaluate", "--impressions", path, "-m", "gauc", "-f", "json")
    document = json.loads(out)
    assert document["per_query"]["c"] == {"gauc": None}
    assert document["undefined_queries"] == {"gauc": ["c"]}
    assert document["mean"]["gauc"] == pytest.approx((5 * 5 / 6 + 3 * 0.75) / 8)
    code, out, _ = run_cli("evaluate", "--impressions", path, "-m", "auc", "-f", "trec", "-q")
    assert "\tc\t" not in out  # an undefined value has no line, as trec_eval prints none
    assert "auc                   \tall\t0.7917" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["q.txt", "--impressions", "log.jsonl"], "not both"),
        (["q.txt"], "give QRELS and RUN"),
        ([], "give QRELS and RUN"),
    ],
)
def test_evaluate_takes_impressions_or_qrels_and_run(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    _write(tmp_path / "log.jsonl", _rows(1, users=3))
    code, _, err = run_cli("evaluate", *(str(tmp_path / a) if "." in a else a for a in argv))
    assert code == 2
    assert message in err


def test_evaluate_names_the_file_and_line_of_a_bad_row(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "log.jsonl",
        [
            {"user": "a", "item": "x", "score": 1.0, "clicked": True},
            {"user": "a", "item": "y", "score": 1.0, "clicked": "maybe"},
        ],
    )
    code, _, err = run_cli("evaluate", "--impressions", path, "-m", "auc")
    assert code == 2
    assert f"{path}:2" in err
    assert "must be true, false, 1 or 0" in err


def test_check_gates_gauc_over_users_between_two_models_on_one_log(tmp_path: Path) -> None:
    rows = _rows(3)
    _write(tmp_path / "log.jsonl", rows)
    _write(tmp_path / "worse.jsonl", _worse(rows, "fr"))
    base = _config(tmp_path, "log.jsonl", "log.jsonl")
    code, _, err = run_cli("baseline", "-c", base)
    assert code == 0, err
    code, out, err = run_cli("check", "-c", base, "--no-reports", "--json", tmp_path / "same.json")
    assert code == 0, err
    assert "gauc" in out
    same = json.loads((tmp_path / "same.json").read_text(encoding="utf-8"))
    overall = next(c for c in same["comparisons"] if c["metric"] == "gauc" and c["slice"] == "all")
    assert overall["delta"] == 0.0
    excluded = overall["excluded"]
    assert excluded > 0  # users with no click, or clicks only
    assert overall["n"] + excluded == 90
    assert f"gauc: {excluded} of 90 queries undefined on a side" in err
    # The baseline file holds null for those users, and reads back.
    stored = json.loads((tmp_path / "baseline.json").read_text(encoding="utf-8"))
    assert stored["scores"]["gauc"].count(None) == excluded
    assert None not in stored["scores"]["ndcg@10"]

    worse = _config(tmp_path, "log.jsonl", "worse.jsonl", max_drop="1pt")
    reports = {"--json": "r.json", "--markdown": "r.md", "--html": "r.html", "--junit": "r.xml"}
    args = [a for flag, name in reports.items() for a in (flag, tmp_path / name)]
    code, out, err = run_cli("check", "-c", worse, "--no-reports", *args)
    assert code == 1, out + err
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    checks = {(c["metric"], c["slice"]): c for c in result["comparisons"]}
    assert checks[("gauc", "country=fr")]["delta"] < -0.1
    assert checks[("gauc", "country=de")]["delta"] == 0.0
    assert checks[("gauc", "all")]["failed"]
    for name in reports.values():
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "NaN" not in text, name
        assert "undefined on a side" in text, name
    # The most regressed users are users defined on both sides.
    assert result["query_changes"]
    assert all(c["before"] is not None and c["after"] is not None for c in result["query_changes"])
    assert not any(math.isnan(v) for v in result["current"]["scores"]["ndcg@10"])


def test_hostile_user_ids_reach_no_sink_raw(tmp_path: Path) -> None:
    rows = _rows(4, users=40)
    for row in rows:
        if row["user"] == "u000":
            row["user"] = HOSTILE
    _write(tmp_path / "log.jsonl", rows)
    _write(tmp_path / "worse.jsonl", [{**row, "score": -float(row["score"])} for row in rows])
    base = _config(tmp_path, "log.jsonl", "log.jsonl")
    assert run_cli("baseline", "-c", base).ret == 0
    worse = _config(tmp_path, "log.jsonl", "worse.jsonl")
    reports = {"--json": "r.json", "--markdown": "r.md", "--html": "r.html", "--junit": "r.xml"}
    args = [a for flag, name in reports.items() for a in (flag, tmp_path / name)]
    code, out, err = run_cli("check", "-c", worse, "--no-reports", *args)
    assert code == 1, out + err
    for name, text in [
        ("stdout", out),
        ("stderr", err),
        *((n, (tmp_path / n).read_text(encoding="utf-8")) for n in reports.values()),
    ]:
        assert "\x1b" not in text, name
        assert "\r" not in text, name
        assert not any(line.startswith("::error::") for line in text.splitlines()), name
    json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    code, out, err = run_cli("evaluate", "--impressions", tmp_path / "log.jsonl", "-m", "auc", "-q")
    assert code == 0
    for text in (out, err):
        assert "\x1b" not in text
        assert not any(line.startswith("::error::") for line in text.splitlines())


def test_power_counts_the_users_each_check_can_compare(tmp_path: Path) -> None:
    _write(tmp_path / "log.jsonl", _rows(5))
    base = _config(tmp_path, "log.jsonl", "log.jsonl")
    assert run_cli("baseline", "-c", base).ret == 0
    code, out, err = run_cli("power", "-c", base, "--format", "json")
    assert code == 0, err
    stored = json.loads((tmp_path / "baseline.json").read_text(encoding="utf-8"))
    defined = 90 - stored["scores"]["gauc"].count(None)
    checks = {(c["metric"], c["slice"]): c for c in json.loads(out)["checks"]}
    overall = checks[("gauc", "all")]
    assert overall["n"] == defined
    assert overall["detectable_drop"] is not None
    assert math.isfinite(overall["sd"])
    # A claim audited with the baseline's spread of gauc: the defined users' sd.
    code, out, err = run_cli("power", "-c", base, "--claim", "2pt", "--n", "500")
    assert code == 0, err
    assert "nan" not in out.lower()
    assert "the baseline's gauc" in out


def test_changed_clicks_do_not_rescore_a_baseline_of_scores(tmp_path: Path) -> None:
    rows = _rows(6)
    _write(tmp_path / "log.jsonl", rows)
    base = _config(tmp_path, "log.jsonl", "log.jsonl")
    assert run_cli("baseline", "-c", base).ret == 0
    flipped = [{**rows[0], "clicked": not rows[0]["clicked"]}, *rows[1:]]
    _write(tmp_path / "log.jsonl", flipped)
    code, out, err = run_cli("check", "-c", base, "--no-reports")
    assert code == 2, out + err
    assert "read the retriever's scores, which the baseline does not store" in err
    assert "retrieval-gate baseline --force" in err


def test_label_queue_reads_a_result_with_undefined_users(tmp_path: Path) -> None:
    rows = _rows(7, users=30)
    _write(tmp_path / "log.jsonl", rows)
    extra = {"user": "u001", "item": "new", "score": 99.0, "clicked": False, "country": "de"}
    _write(tmp_path / "more.jsonl", [*rows, extra])
    base = _config(tmp_path, "log.jsonl", "log.jsonl")
    assert run_cli("baseline", "-c", base).ret == 0
    more = _config(tmp_path, "log.jsonl", "more.jsonl")
    code, out, err = run_cli("check", "-c", more, "--no-reports", "--json", tmp_path / "r.json")
    assert code in (0, 1), err
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert None in result["baseline"]["scores"]["gauc"]  # read back, not refused as edited
    code, out, err = run_cli("label-queue", "-c", more, "--run", tmp_path / "r.json")
    assert code == 0, err
    (item,) = [json.loads(line) for line in out.splitlines()]
    assert (item["query_id"], item["doc_id"]) == ("u001", "new")
    assert isinstance(item["delta"], float)


def test_a_history_line_keeps_undefined_users(tmp_path: Path) -> None:
    from retrieval_gate.history.record import entry_line, parse_entry, result_entry

    _write(tmp_path / "log.jsonl", _rows(8, users=30))
    base = _config(tmp_path, "log.jsonl", "log.jsonl")
    assert run_cli("baseline", "-c", base).ret == 0
    assert run_cli("check", "-c", base, "--no-reports", "--json", tmp_path / "r.json").ret == 0
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    entry = result_entry(
        document, "r.json", commit="a" * 40, time="2026-11-26T00:00:00Z", ref="main", subject="s"
    )
    line = entry_line(entry)
    assert "NaN" not in line  # a history line is strict JSON
    read = parse_entry(line, "history.jsonl", 1)
    gauc = read.record.scores["gauc"]
    undefined = [i for i, v in enumerate(document["current"]["scores"]["gauc"]) if v is None]
    assert undefined
    assert [i for i, v in enumerate(gauc.tolist()) if math.isnan(v)] == undefined
