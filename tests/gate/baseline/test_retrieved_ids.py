"""A record whose retrieved ids are all unknown scores 0 and can never fail: refused everywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.config.unlabelled import UnlabelledConfig
from retrieval_gate.gate.baseline.retrieved_ids import only_labelled_checks, unknown_retrieval
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

CORPUS = {"kb-1": None, "kb-2": None}


def test_one_known_id_anywhere_is_enough() -> None:
    top_k = {"q1": ("chunk-9",), "q2": ("chunk-8", "kb-2")}
    assert unknown_retrieval(top_k, [], CORPUS) is None
    assert unknown_retrieval({"q1": ("kb-7",)}, ["kb-7"], CORPUS) is None  # judged, not in it


def test_without_a_corpus_an_unjudged_id_may_be_a_real_document() -> None:
    assert unknown_retrieval({"q1": ("chunk-1",)}, ["kb-1"], None) is None


def test_nothing_retrieved_is_not_this_refusal() -> None:
    assert unknown_retrieval({"q1": (), "q2": ()}, ["kb-1"], CORPUS) is None


def test_all_unknown_names_what_came_and_what_was_expected() -> None:
    reason = unknown_retrieval({"q1": ("chunk-1", "chunk-2"), "q2": ("chunk-1",)}, [], CORPUS)
    assert reason is not None
    assert reason.startswith("none of the 2 document ids retrieved ('chunk-1', 'chunk-2', ...)")
    assert "is in the corpus or the judgments (which name 'kb-1', 'kb-2', ...)" in reason
    assert "every metric is 0 on every query" in reason


def test_three_ids_of_each_are_quoted() -> None:
    corpus = dict.fromkeys(["kb-4", "kb-3", "kb-2", "kb-1"])
    top_k = {"q1": ("c-4", "c-3"), "q2": ("c-2", "c-1", "c-4")}
    reason = unknown_retrieval(top_k, [], corpus)
    assert reason is not None
    assert reason.startswith("none of the 4 document ids retrieved ('c-4', 'c-3', 'c-2', ...)")
    assert "(which name 'kb-1', 'kb-2', 'kb-3', ...)" in reason


@pytest.mark.parametrize(
    ("checks", "labelled"),
    [
        (("ndcg@10",), True),
        (("candidates:recall@100",), True),
        (("ndcg@10", "candidates:recall@100"), True),  # both kinds score against the labels
        (("ndcg@10", "latency_p95"), False),
        (("ndcg@10", "ragas:faithfulness"), False),
    ],
)
def test_only_checks_scored_against_the_labels_make_unknown_ids_unfailable(
    checks: tuple[str, ...], labelled: bool
) -> None:
    config = load(CONFIGS / "example-rag.yaml")
    chosen = config.model_copy(update={"metrics": {key: config.metrics[key] for key in checks}})
    assert only_labelled_checks(chosen) is labelled
    # A label-free check compares the two sides' lists, known ids or not: it can fail.
    free = UnlabelledConfig.model_validate(
        {"queries": "q.jsonl", "checks": {"overlap@10": {"max_drop": "5pt"}}}
    )
    assert only_labelled_checks(chosen.model_copy(update={"unlabelled": free})) is False


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    shutil.copytree(CONFIGS / "tiny", folder, ignore=shutil.ignore_patterns(".retrieval-gate"))
    run = (folder / "run.txt").read_text(encoding="utf-8")
    (folder / "chunks.txt").write_text(run.replace(" kb-", " chunk-"), encoding="utf-8")
    return folder


def test_baseline_refuses_a_run_of_unknown_ids_and_writes_nothing(tiny: Path) -> None:
    config = tiny / "retrieval-gate.yaml"
    code, _, err = run_cli("baseline", "-c", config, "--run", tiny / "chunks.txt")
    assert code == 2, err
    assert "none of the 14 document ids retrieved ('chunk-" in err
    assert not (tiny / ".retrieval-gate" / "baseline.json").exists()


def test_check_fails_a_current_run_of_unknown_ids_against_a_good_baseline(tiny: Path) -> None:
    folder = tiny
    config = folder / "retrieval-gate.yaml"
    assert run_cli("baseline", "-c", config).ret == 0
    code, out, err = run_cli("check", "-c", config, "--run", folder / "chunks.txt")
    assert code == 1, out + err  # the gate can fail here, and does
    assert "the current run: none of the 14 document ids retrieved" in err


def test_check_refuses_when_both_sides_retrieved_no_known_id(tiny: Path) -> None:
    folder = tiny
    config = folder / "retrieval-gate.yaml"
    assert run_cli("baseline", "-c", config).ret == 0
    _forge_unknown_baseline(folder)
    code, out, err = run_cli("check", "-c", config, "--run", folder / "chunks.txt")
    assert code == 2, out + err
    assert "both sides retrieved no known id, so no check can ever fail" in err


def _forge_unknown_baseline(folder: Path) -> None:
    """The baseline's top k renamed to ids nobody knows, as a baseline made before the
    refusal (or edited) may hold."""
    path = folder / ".retrieval-gate" / "baseline.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["top_k"] = {
        query: [doc.replace("kb-", "chunk-") for doc in docs]
        for query, docs in document["top_k"].items()
    }
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")


def test_lint_finds_a_committed_baseline_of_unknown_ids(tiny: Path) -> None:
    config = tiny / "retrieval-gate.yaml"
    assert run_cli("baseline", "-c", config).ret == 0
    _forge_unknown_baseline(tiny)
    code, out, err = run_cli("lint", "-c", config)
    assert code != 0, out + err
    assert "retrieved-ids-unknown" in out + err
