"""`retrieval-gate calibrate`: the card against the dataset's or held-back labels, system tau."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from scipy.stats import kendalltau

from retrieval_gate.config.loader import load
from retrieval_gate.pipeline.execute import execute
from tests.helpers.cli import run_cli
from tests.helpers.judged_example import (
    assisted_config,
    held_back_example,
    pooled_pairs,
    read_qrels,
    simulated_layer,
    write_qrels,
)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = held_back_example(tmp_path_factory.mktemp("calibrate") / "example")
    configs = [assisted_config(target, name) for name in ("example.yaml", "example-regressed.yaml")]
    full = read_qrels(target / "full.tsv")
    simulated_layer(target / "judge.llm.jsonl", pooled_pairs(configs) | set(full), full)
    return target


def test_the_card_against_the_datasets_labels(example: Path) -> None:
    code, out, err = run_cli("calibrate", "-c", example / "assisted-example.yaml")
    assert code == 0, err
    kept = read_qrels(example / "example" / "qrels" / "test.tsv")
    assert f"pairs graded by both: {len(kept)}\n" in out
    assert "trusted by gate.labels: human+llm" in out
    assert "give 4 or more --run files" in out


def test_held_back_labels_and_json(example: Path) -> None:
    code, out, err = run_cli(
        "calibrate",
        "-c",
        example / "assisted-example.yaml",
        "--qrels",
        example / "held_back.tsv",
        "-f",
        "json",
    )
    assert code == 0, err
    document = json.loads(out)
    held = read_qrels(example / "held_back.tsv")
    card = document["calibration"]
    assert card["pairs"] == len(held)
    assert sum(map(sum, card["confusion"])) == len(held)
    assert document["trusted"] is True
    assert 0.7 < card["kappa"] <= 1.0


def _write_run(path: Path, rankings: dict[str, list[str]]) -> Path:
    lines = [
        f"{query} Q0 {doc} {rank + 1} {100 - rank} run"
        for query, docs in sorted(rankings.items())
        for rank, doc in enumerate(docs)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_four_runs_give_a_kendall_tau_as_scipy_does(example: Path, tmp_path: Path) -> None:
    rankings = {}
    for name in ("example.yaml", "example-regressed.yaml"):
        done = execute(load(example / f"assisted-{name}"), cache=False)
        rankings[name] = {q: [h.doc_id for h in hits] for q, hits in done.run.hits.items()}
    variants = {
        "good": rankings["example.yaml"],
        "worse": rankings["example-regressed.yaml"],
        "reversed": {q: docs[::-1] for q, docs in rankings["example.yaml"].items()},
        "short": {q: docs[5:] for q, docs in rankings["example-regressed.yaml"].items()},
    }
    runs = [_write_run(tmp_path / f"{name}.trec", r) for name, r in variants.items()]
    args = [arg for run in runs for arg in ("--run", run)]
    code, out, err = run_cli(
        "calibrate", "-c", example / "assisted-example.yaml", *args, "-f", "json"
    )
    assert code == 0, err
    document = json.loads(out)
    human = [r["human"] for r in document["runs"]]
    judge = [r["judge"] for r in document["runs"]]
    tau = document["calibration"]["systems"]["tau"]
    assert tau == pytest.approx(kendalltau(human, judge).statistic)
    assert human[0] > human[1]
    code, out, _ = run_cli("calibrate", "-c", example / "assisted-example.yaml", *args)
    assert "system level: Kendall's tau-b" in out


def test_bad_input_is_exit_2_with_a_clear_message(example: Path, tmp_path: Path) -> None:
    plain = yaml.safe_load((example / "example.yaml").read_text(encoding="utf-8"))
    plain.pop("report", None)
    config = example / "no-judge.yaml"
    config.write_text(yaml.safe_dump(plain), encoding="utf-8")
    code, _, err = run_cli("calibrate", "-c", config)
    assert code == 2
    assert "calibrate needs the judge: add a judge: block" in err

    missing = assisted_config(
        example, "example.yaml", output=str(tmp_path / "none.llm.jsonl"), file="none.yaml"
    )
    code, _, err = run_cli("calibrate", "-c", missing)
    assert code == 2
    assert "no LLM judgment layer here" in err

    graded = read_qrels(example / "held_back.tsv")
    write_qrels(tmp_path / "five.tsv", dict.fromkeys(graded, 5))
    config = assisted_config(example, "example.yaml")
    code, _, err = run_cli("calibrate", "-c", config, "--qrels", tmp_path / "five.tsv")
    assert code == 2
    assert "grades 0-3" in err
