"""`check` gating a Ragas faithfulness score beside the relevance metrics, through the CLI."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.builders import QRELS, QUERIES, copy_example, labelled_set
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

CONFIG = "example-evaluators.yaml"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the example with its evaluator config and Ragas exports."""
    folder = copy_example(tmp_path / "configs")
    shutil.copy(CONFIGS / CONFIG, folder / CONFIG)
    return folder


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def _dropped(example: Path, by: float) -> None:
    """The current export: every query's faithfulness `by` lower than the baseline's."""
    rows = _rows(example / "example" / "ragas-baseline.csv")
    for row in rows:
        row["faithfulness"] = repr(max(0.0, float(row["faithfulness"]) - by))
    _write(example / "example" / "ragas-current.csv", rows)


def _ragas_check(result_path: Path) -> dict[str, object]:
    document = json.loads(result_path.read_text(encoding="utf-8"))
    (check,) = [
        c
        for c in document["comparisons"]
        if c["metric"] == "ragas:faithfulness" and c["slice"] == "all"
    ]
    return dict(check)


def test_the_bundled_example_passes_and_reports_the_score(example: Path) -> None:
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 0, out + err
    assert "ragas:faithfulness  all    131  0.8108    0.8112" in out
    assert (
        "warning: evaluator ragas: the reference side's scores are read from "
        "example/ragas-baseline.csv, not the baseline's stored ones" in err
    )
    reports = example / ".retrieval-gate" / "example-evaluators"
    assert "ragas:faithfulness" in (reports / "report.md").read_text(encoding="utf-8")
    assert "ragas:faithfulness" in (reports / "report.html").read_text(encoding="utf-8")
    junit = (reports / "junit.xml").read_text(encoding="utf-8")
    assert 'classname="retrieval-gate.example-evaluators.ragas:faithfulness"' in junit
    document = json.loads((reports / "result.json").read_text(encoding="utf-8"))
    assert document["baseline"]["source"].endswith(
        "baseline.json (ragas scores: example/ragas-baseline.csv)"
    )
    assert document["warnings"] == [
        "evaluator ragas: the reference side's scores are read from example/ragas-baseline.csv, "
        "not the baseline's stored ones"
    ]
    check = _ragas_check(reports / "result.json")
    assert check["verdict"] == "pass"
    assert check["baseline_mean"] == pytest.approx(0.8108, abs=5e-5)


def test_equal_exports_pass_with_no_change(example: Path) -> None:
    shutil.copy(
        example / "example" / "ragas-baseline.csv", example / "example" / "ragas-current.csv"
    )
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 0, out + err
    assert "ragas:faithfulness  all    131  0.8108    0.8108   +0.00" in out


def test_a_real_drop_fails_the_gate(example: Path) -> None:
    _dropped(example, 0.05)
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 1, out + err
    assert "FAIL" in out.splitlines()[0]
    check = _ragas_check(example / ".retrieval-gate" / "example-evaluators" / "result.json")
    assert check["verdict"] == "regressed"


@pytest.mark.parametrize("dropped_first", [True, False])
def test_a_score_column_named_twice_is_refused_whichever_comes_first(
    example: Path, dropped_first: bool
) -> None:
    """Read by its last column, swapping the two turned a FAIL into a PASS."""
    kept = _rows(example / "example" / "ragas-baseline.csv")
    _dropped(example, 0.05)
    current = example / "example" / "ragas-current.csv"
    dropped = _rows(current)
    first, second = (dropped, kept) if dropped_first else (kept, dropped)
    lines = ["user_input,faithfulness,faithfulness"]
    lines += [
        f"{a['user_input']},{a['faithfulness']},{b['faithfulness']}"
        for a, b in zip(first, second, strict=True)
    ]
    current.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 2, out + err
    assert "ragas-current.csv:1: the header names 'faithfulness' more than once" in err


def test_a_drop_within_max_drop_passes(example: Path) -> None:
    _dropped(example, 0.01)
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 0, out + err


def test_without_a_reference_export_the_baseline_stores_the_scores(example: Path) -> None:
    config = example / CONFIG
    text = config.read_text(encoding="utf-8").replace(
        "    reference: example/ragas-baseline.csv\n", ""
    )
    config.write_text(text.replace(".retrieval-gate/example/baseline.json", "b.json"))
    shutil.copy(
        example / "example" / "ragas-baseline.csv", example / "example" / "ragas-current.csv"
    )
    code, out, err = run_cli("baseline", "-c", config, "--quiet")
    assert code == 0, out + err
    stored = json.loads((example / "b.json").read_text(encoding="utf-8"))
    assert "ragas:faithfulness" in stored["fingerprints"]["metrics"]
    rows = _rows(example / "example" / "ragas-baseline.csv")
    assert stored["scores"]["ragas:faithfulness"][0] == float(rows[0]["faithfulness"])
    assert run_cli("check", "-c", config).ret == 0
    _dropped(example, 0.05)
    code, out, err = run_cli("check", "-c", config)
    assert code == 1, out + err
    assert "reference side's scores are read from" not in err


def test_changed_judgments_rescore_the_baseline_but_keep_its_scores(example: Path) -> None:
    qrels = example / "example" / "qrels" / "test.tsv"
    lines = qrels.read_text(encoding="utf-8").splitlines()
    qrels.write_text("\n".join([*lines[:-1], lines[-1].rsplit("\t", 1)[0] + "\t0"]) + "\n")
    _dropped(example, 0.05)
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 1, out + err
    assert "were re-scored with the current judgments" in err
    check = _ragas_check(example / ".retrieval-gate" / "example-evaluators" / "result.json")
    assert check["baseline_mean"] == pytest.approx(0.8108, abs=5e-5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda row: row.update(faithfulness="nan"), "row 1: score faithfulness 'nan' is NaN"),
        (lambda row: row.update(faithfulness="1.5"), "row 1: score faithfulness 1.5 is outside"),
        (lambda row: row.update(faithfulness="high"), "row 1: score faithfulness 'high' is not"),
    ],
)
def test_a_bad_export_is_exit_2_naming_file_and_row(
    example: Path, change: object, message: str
) -> None:
    path = example / "example" / "ragas-current.csv"
    rows = _rows(path)
    change(rows[0])  # type: ignore[operator]
    _write(path, rows)
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 2, out + err
    assert "ragas-current.csv:2: " + message in err


def test_missing_and_empty_exports_and_scores_are_exit_2(example: Path) -> None:
    current = example / "example" / "ragas-current.csv"
    current.write_text("", encoding="utf-8")
    code, _, err = run_cli("check", "-c", example / CONFIG)
    assert code == 2
    assert "ragas-current.csv: no scored rows (read as ragas)" in err
    current.unlink()
    code, _, err = run_cli("check", "-c", example / CONFIG)
    assert code == 2
    assert "ragas-current.csv: file not found" in err
    shutil.copy(example / "example" / "ragas-baseline.csv", current)
    config = example / CONFIG
    config.write_text(
        config.read_text(encoding="utf-8").replace("ragas:faithfulness:", "ragas:answer_relevancy:")
    )
    code, _, err = run_cli("check", "-c", config)
    assert code == 2
    assert "no score 'answer_relevancy' in this ragas export" in err


def test_too_few_scored_queries_is_exit_2(example: Path) -> None:
    path = example / "example" / "ragas-current.csv"
    _write(path, _rows(path)[:100])
    code, _, err = run_cli("check", "-c", example / CONFIG)
    assert code == 2
    assert "score faithfulness covers 100 of 131 labelled queries (76%)" in err


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("ragas:faithfulness:", "deepeval:faithfulness:",
         "no evaluator 'deepeval' (evaluators: ragas)"),
        ("  ragas:\n", "  ranx:\n", "evaluators.ranx: 'ranx' is reserved"),
        ("  ragas:\n", "  candidates:\n", "evaluators.candidates: 'candidates' is reserved"),
        ("format: ragas", "format: csv", "evaluators.ragas.format"),
        ("ragas:faithfulness:", "ragas:faith fulness:", "'faith fulness' is not a score name"),
        ("ragas:faithfulness:", "'ragas:::error::x':", "'::error::x' is not a score name"),
    ],
)  # fmt: skip
def test_config_mistakes_are_exit_2_naming_the_line(
    example: Path, old: str, new: str, message: str
) -> None:
    config = example / CONFIG
    config.write_text(config.read_text(encoding="utf-8").replace(old, new, 1))
    code, out, err = run_cli("config", "validate", "-c", config)
    assert code == 2, out + err
    assert message in err
    assert "example-evaluators.yaml:" in err


def test_hostile_names_in_an_export_reach_the_terminal_inert(example: Path) -> None:
    path = example / "example" / "ragas-current.csv"
    rows = _rows(path)
    hostile = "\n::error::pwned\x1b[31m"
    _write(path, [{"user_input": r["user_input"], hostile: r["faithfulness"]} for r in rows])
    code, _out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 2
    assert "no score 'faithfulness' in this ragas export" in err
    assert "\x1b" not in err
    assert not any(line.lstrip().startswith("::") for line in err.splitlines())


def _plain_export(path: Path, values: dict[str, dict[str, float]]) -> None:
    """A plain JSONL export: query id -> named scores."""
    lines = [json.dumps({"query_id": q, "scores": s}) for q, s in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _with_judge(example: Path, metrics: str, settings: str) -> Path:
    """example-evaluators.yaml with a plain JSONL evaluator `judge` and `metrics` added."""
    config = example / CONFIG
    text = config.read_text(encoding="utf-8")
    text = text.replace("  ragas:faithfulness:", metrics + "\n  ragas:faithfulness:")
    text = text.replace(
        "evaluators:\n",
        "evaluators:\n  judge:\n    format: jsonl\n    current: judge-now.jsonl\n"
        f"    reference: judge-then.jsonl\n{settings}",
    )
    config.write_text(text, encoding="utf-8")
    return config


def _query_ids(example: Path) -> list[str]:
    lines = (example / "example" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["_id"] for line in lines]


def test_a_lower_is_better_score_fails_on_an_increase_past_max_increase(example: Path) -> None:
    config = _with_judge(
        example,
        "  judge:hallucination: {max_increase: 2pt}",
        "    lower_is_better: [hallucination]\n",
    )
    ids = _query_ids(example)
    then = {q: {"hallucination": 0.1 + 0.001 * i} for i, q in enumerate(ids)}
    _plain_export(example / "judge-then.jsonl", then)
    _plain_export(example / "judge-now.jsonl", then)
    code, out, err = run_cli("check", "-c", config)
    assert code == 0, out + err
    fewer = {q: {"hallucination": s["hallucination"] - 0.05} for q, s in then.items()}
    _plain_export(example / "judge-now.jsonl", fewer)
    code, out, err = run_cli("check", "-c", config)
    assert code == 0, out + err  # less hallucination is better, not a regression
    more = {q: {"hallucination": s["hallucination"] + 0.05} for q, s in then.items()}
    _plain_export(example / "judge-now.jsonl", more)
    code, out, err = run_cli("check", "-c", config)
    assert code == 1, out + err
    result = example / ".retrieval-gate" / "example-evaluators" / "result.json"
    (check,) = [
        c
        for c in json.loads(result.read_text(encoding="utf-8"))["comparisons"]
        if c["metric"] == "judge:hallucination" and c["slice"] == "all"
    ]
    assert check["verdict"] == "regressed"
    assert check["direction"] == "lower"


def test_a_score_in_its_own_units_takes_thresholds_in_them(example: Path) -> None:
    config = _with_judge(
        example, "  judge:helpfulness: {max_drop: 0.5 stars}", "    units: {helpfulness: stars}\n"
    )
    ids = _query_ids(example)
    then = {q: {"helpfulness": 3.0 + (i % 3)} for i, q in enumerate(ids)}
    _plain_export(example / "judge-then.jsonl", then)
    _plain_export(example / "judge-now.jsonl", {q: {"helpfulness": s["helpfulness"] - 0.2}
                                                for q, s in then.items()})  # fmt: skip
    code, out, err = run_cli("check", "-c", config)
    assert code == 0, out + err
    assert "stars" in out
    _plain_export(example / "judge-now.jsonl", {q: {"helpfulness": s["helpfulness"] - 1.0}
                                                for q, s in then.items()})  # fmt: skip
    code, out, err = run_cli("check", "-c", config)
    assert code == 1, out + err


@pytest.mark.parametrize(
    ("metrics", "settings", "message"),
    [
        ("  judge:hallucination: {max_drop: 2pt}", "    lower_is_better: [hallucination]\n",
         "metrics.judge:hallucination: lower is better here: write max_increase"),
        ("  judge:helpfulness: {max_drop: 2pt}", "    units: {helpfulness: stars}\n",
         "2pt is in points of the 0-1 scale, but this check is in stars"),
        ("  judge:faithfulness: {max_drop: 0.5 stars}", "",
         "0.5 stars is in stars, but this check is on the 0-1 scale"),
        ("  judge:helpfulness: {}", "    units: {helpfulness: \"\\e[31m\"}\n",
         "evaluators.judge.units"),
    ],
)  # fmt: skip
def test_thresholds_facing_the_wrong_way_or_unit_are_exit_2(
    example: Path, metrics: str, settings: str, message: str
) -> None:
    config = _with_judge(example, metrics, settings)
    code, out, err = run_cli("config", "validate", "-c", config)
    assert code == 2, out + err
    assert message in err


def test_an_unscored_query_counts_as_unchanged(example: Path) -> None:
    path = example / "example" / "ragas-current.csv"
    rows = _rows(example / "example" / "ragas-baseline.csv")
    lowered = [{**row, "faithfulness": repr(float(row["faithfulness"]) * 0.5)} for row in rows]
    _write(path, [rows[0], *lowered[1:]][:-5])  # 5 unscored queries, the first unchanged
    code, out, err = run_cli("check", "-c", example / CONFIG)
    assert code == 1, out + err
    assert "faithfulness: 5 labelled queries unscored" in err
    document = json.loads(
        (example / ".retrieval-gate" / "example-evaluators" / "result.json").read_text()
    )
    check = _ragas_check(example / ".retrieval-gate" / "example-evaluators" / "result.json")
    assert check["ties"] == 6  # the unscored five and the unchanged first: no difference
    current = document["current"]["scores"]["ragas:faithfulness"]
    baseline = [float(row["faithfulness"]) for row in rows]
    assert current[-5:] == baseline[-5:]


def test_compare_re_decides_a_result_against_the_reference_export(example: Path) -> None:
    _dropped(example, 0.05)
    assert run_cli("check", "-c", example / CONFIG).ret == 1
    reports = example / ".retrieval-gate" / "example-evaluators"
    code, out, err = run_cli(
        "compare",
        "-c",
        example / CONFIG,
        "--no-reports",
        example / ".retrieval-gate" / "example" / "baseline.json",
        reports / "result.json",
    )
    assert code == 1, out + err
    assert out.startswith("retrieval-gate example-evaluators: FAIL; ragas:faithfulness fell")
    assert "  x ragas:faithfulness fell 5.0 pt (p < 0.001)" in out


def test_a_hostile_query_id_in_an_unscored_warning_is_inert_in_every_sink(
    tmp_path: Path,
) -> None:
    hostile = "q<b>1\u202e::error::x"
    queries = [{**q, "_id": hostile if q["_id"] == "q1" else q["_id"]} for q in QUERIES]
    qrels = [(hostile if r[0] == "q1" else r[0], *r[1:]) for r in QRELS]
    config = labelled_set(
        tmp_path,
        queries=queries,
        qrels=qrels,
        metrics={"ndcg@10": {}, "judge:f": {}},
        evaluators={"judge": {"format": "jsonl", "current": "judge.jsonl"}},
        gate={"min_coverage": 0.5},
    )
    ids = [q["_id"] for q in queries]
    _plain_export(tmp_path / "judge.jsonl", {q: {"f": 0.5} for q in ids})
    assert run_cli("baseline", "-c", config, "--quiet").ret == 0
    _plain_export(tmp_path / "judge.jsonl", {q: {"f": 0.5} for q in ids if q != hostile})
    out_dir = tmp_path / "out"
    code, out, err = run_cli(
        "check", "-c", config, "--markdown", out_dir / "r.md", "--html", out_dir / "r.html",
        "--json", out_dir / "r.json",
    )  # fmt: skip
    assert code == 0, out + err
    assert "f: 1 labelled query unscored ('q<b>1\\u202e::error::x')" in err
    assert "\u202e" not in err
    assert not any(line.lstrip().startswith("::") for line in err.splitlines())
    markdown = (out_dir / "r.md").read_text(encoding="utf-8")
    html = (out_dir / "r.html").read_text(encoding="utf-8")
    document = json.loads((out_dir / "r.json").read_text(encoding="utf-8"))
    (warning,) = [w for w in document["warnings"] if "unscored" in w]
    assert "'q<b>1\\u202e::error::x'" in warning  # data, as quoted in the message
    for text in (markdown, html):
        assert "f: 1 labelled query unscored" in text
        assert "\u202e" not in text
        assert "<b>1" not in text
    assert "q&lt;b&gt;1" in html
