"""The config loader's checks across keys: where each problem it reports is."""

from __future__ import annotations

import shutil
from pathlib import Path

from retrieval_gate.config.loader import _evaluator_problems, load
from tests.helpers.builders import copy_example, labelled_set
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

CONFIG = "example-evaluators.yaml"


def test_an_evaluator_problem_without_a_known_line_names_no_line(tmp_path: Path) -> None:
    folder = copy_example(tmp_path / "configs")
    shutil.copy(CONFIGS / CONFIG, folder / CONFIG)
    config = load(folder / CONFIG)
    ranx = config.model_copy(update={"evaluators": {"ranx": config.evaluators["ragas"]}})
    problems = _evaluator_problems(ranx, None, "gate.yaml")
    assert problems == [
        "gate.yaml: evaluators: 'ranx' is reserved (metrics keys candidates:, trec_eval:, "
        "ir_measures:, ranx: already mean something): name the evaluator after its tool, "
        "e.g. ragas"
    ]
    assert all(":None" not in problem for problem in problems)


def test_a_latency_or_cost_ceiling_below_0_is_refused_at_its_line(tmp_path: Path) -> None:
    metrics = {"ndcg@10": {}, "cost_mean": {"max": -1}, "latency_p95": {"max": -5.5}}
    config = labelled_set(tmp_path, metrics=metrics)
    code, _, err = run_cli("config", "validate", "-c", config)
    assert code == 2, err
    lines = config.read_text(encoding="utf-8").splitlines()
    for key, shown, measured in (("cost_mean", "-1", "cost"), ("latency_p95", "-5.5", "latency")):
        line = next(i for i, text in enumerate(lines, 1) if text.strip().startswith(key))
        assert (
            f"{config}:{line}: metrics.{key}: max: {shown} is below 0, where no {measured} is, "
            "so the check could never pass; write a ceiling of 0 or more"
        ) in err


def test_a_floor_outside_the_metrics_range_is_refused_there_and_in_the_overrides(
    tmp_path: Path,
) -> None:
    """A floor below 0 on ndcg@10 could never fail and one above 1 never pass; a negative
    latency ceiling under slices.overrides could never pass either; each is named at its
    line. A floor of 0 or 1, inside the range, is taken."""
    metrics = {"ndcg@10": {"min": -0.1}, "recall@10": {"min": 1.5}, "latency_p95": {"max": 900}}
    overrides = {"intent=billing": {"ndcg@10": {"min": 2}, "latency_p95": {"max": -1}}}
    config = labelled_set(tmp_path, metrics=metrics, slices={"overrides": overrides})
    code, _, err = run_cli("config", "validate", "-c", config)
    assert code == 2, err
    lines = config.read_text(encoding="utf-8").splitlines()

    def at(key: str, after: int = 0) -> int:
        return next(
            i for i, text in enumerate(lines, 1) if i > after and text.strip().startswith(key)
        )

    overridden = at("intent=billing")
    for where, message in (
        (
            f"{at('ndcg@10')}: metrics.ndcg@10",
            "min: -0.1 is below 0, the least ndcg@10 can be, so the floor could never fail",
        ),
        (
            f"{at('recall@10')}: metrics.recall@10",
            "min: 1.5 is above 1, the most recall@10 can be, so the check could never pass",
        ),
        (
            f"{at('ndcg@10', overridden)}: slices.overrides.intent=billing.ndcg@10",
            "min: 2 is above 1, the most ndcg@10 can be",
        ),
        (
            f"{at('latency_p95', overridden)}: slices.overrides.intent=billing.latency_p95",
            "max: -1 is below 0, where no latency is, so the check could never pass",
        ),
    ):
        assert f"{config}:{where}: {message}" in err, err
    fine = labelled_set(tmp_path / "fine", metrics={"ndcg@10": {"min": 0}, "recall@10": {"min": 1}})
    assert run_cli("config", "validate", "-c", fine).ret == 0
