"""The config loader's checks across keys: where each problem it reports is."""

from __future__ import annotations

import shutil
from pathlib import Path

from retrieval_gate.config.loader import _evaluator_problems, load
from tests.helpers.builders import copy_example
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
