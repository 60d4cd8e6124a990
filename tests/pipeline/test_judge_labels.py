"""Reading the judge's labels for the gate: only under human+llm, one judge, its exact errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.datasets.llm_layer import LlmJudgment, write_layer
from retrieval_gate.errors import InputError
from retrieval_gate.pipeline.judge_labels import gate_judge, judge_labels
from tests.helpers.builders import copy_example
from tests.helpers.judged_example import MODEL, PROMPT, assisted_config
from tests.helpers.paths import CONFIGS

TIME = "2026-11-26T00:00:00Z"


def graded(
    query: str, doc: str, grade: int, model: str = MODEL, prompt: str = PROMPT
) -> LlmJudgment:
    return LlmJudgment(query, doc, grade, model, prompt, str(grade), TIME)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The example with gate.labels human+llm; its layer (judge.llm.jsonl) not written yet."""
    return assisted_config(copy_example(tmp_path / "example"), "example.yaml")


def test_a_human_only_gate_reads_no_layer() -> None:
    config = load(CONFIGS / "example.yaml")  # no judge block: a read would fail
    assert gate_judge(config, load_dataset(config.dataset, config.base_dir)) is None


def test_the_judges_grades_of_the_labelled_sets_queries(config: Path) -> None:
    loaded = load(config)
    write_layer(
        config.with_name("judge.llm.jsonl"),
        [
            graded("q002", "kb-3", 1),
            graded("q001", "kb-1", 2),
            graded("q001", "kb-2", 3, model="other-model"),
            graded("nowhere", "kb-1", 3),
        ],
    )
    dataset = load_dataset(loaded.dataset, loaded.base_dir, keep_unjudged=True)
    judge = gate_judge(loaded, dataset)
    assert judge is not None
    assert (judge.model, judge.prompt_sha256) == (MODEL, PROMPT)
    assert judge.qrels.query_ids.tolist() == sorted(q.id for q in dataset.queries)
    ids = judge.qrels.query_ids.tolist()
    pairs = [
        (ids[q], d)
        for q, d in zip(judge.qrels.query.tolist(), judge.qrels.docs.tolist(), strict=True)
    ]
    assert pairs == [("q001", "kb-1"), ("q002", "kb-3")]
    assert judge.qrels.grade.tolist() == [2.0, 1.0]


def test_no_grades_of_the_model_or_several_prompts_name_the_layer(config: Path) -> None:
    loaded = load(config)
    layer = config.with_name("judge.llm.jsonl")
    write_layer(layer, [graded("q001", "kb-1", 2, model="other-model")])
    with pytest.raises(InputError) as found:
        judge_labels(loaded, ["q001"])
    assert str(found.value) == (
        f"{layer}: the layer holds no grades of model {MODEL} (it holds: other-model); "
        "run `retrieval-gate judge` with this config"
    )
    write_layer(layer, [graded("q001", "kb-1", 2), graded("q001", "kb-1", 1, prompt="b" * 64)])
    shown = ", ".join(sorted((PROMPT[:12], "b" * 12)))
    with pytest.raises(InputError, match=rf"under 2 prompts \({shown}\); keep"):
        judge_labels(loaded, ["q001"])


def test_each_pair_carries_the_whole_judge_that_graded_it(config: Path) -> None:
    import dataclasses

    layer = config.with_name("judge.llm.jsonl")
    answered = dataclasses.replace(
        graded("q002", "kb-3", 1), answered_by="sim-judge-2026", system_fingerprint="fp_1"
    )
    write_layer(layer, [graded("q001", "kb-1", 2), answered])
    judge = judge_labels(load(config), ["q001", "q002"])
    assert {pair: who.answering() for pair, who in judge.graded_by.items()} == {
        ("q001", "kb-1"): "an unrecorded model",
        ("q002", "kb-3"): "sim-judge-2026 (fingerprint fp_1)",
    }
    assert {(who.model, who.prompt_sha256) for who in judge.graded_by.values()} == {(MODEL, PROMPT)}
