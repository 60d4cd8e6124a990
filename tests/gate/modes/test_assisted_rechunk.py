"""The judge's labels across a re-chunk: each side's grades anchored to its own chunking,
the prediction-powered checks run on them, a grade never changing hands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.gate.baseline.rechunk import rechunked
from retrieval_gate.gate.modes.assisted_rechunk import rechunked_judge
from retrieval_gate.gate.result import failing_checks
from retrieval_gate.pipeline.check import check
from retrieval_gate.pipeline.judge_labels import gate_judge
from tests.helpers.chunkings import billing_only, corpus_rows, failing_slices, write_rows
from tests.helpers.judged_chunks import JudgedChunks, judged_chunks, renamed


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> JudgedChunks:
    return judged_chunks(tmp_path_factory.mktemp("judged") / "project")


def test_a_re_chunk_with_the_text_unchanged_passes_on_the_judge_s_re_anchored_labels(
    project: JudgedChunks,
) -> None:
    result = check(project.pr, cache=False, judge=False)
    assert result.assisted is not None
    assert result.assisted.trusted
    assert result.assisted.uncovered == ()  # every pair of both sides' pools has a grade
    assert result.status == "pass", list(failing_checks(result.comparisons))
    (note,) = [w for w in result.warnings if w.startswith("the judge's layer across")]
    assert "the baseline's chunking anchors" in note


def test_rows_written_before_anchors_follow_the_baseline_s_chunking(tmp_path: Path) -> None:
    old = judged_chunks(tmp_path / "old", anchored=False)
    assert '"anchor"' not in old.layer.read_text()
    result = check(old.pr, cache=False, judge=False)
    assert result.assisted is not None
    assert result.assisted.uncovered == ()
    assert result.status == "pass"


def test_a_grade_stays_the_judge_s_and_people_s_stay_people_s(project: JudgedChunks) -> None:
    config = load(project.pr)
    result = check(config, cache=False, judge=False)
    dataset = load_dataset(config.dataset, config.base_dir, keep_unjudged=True)
    baseline = read_baseline(config.resolve(config.baseline))
    rechunk = rechunked(baseline, result.current, dataset)
    assert rechunk is not None
    judge = gate_judge(config, dataset)
    assert judge is not None
    moved, _ = rechunked_judge(judge, rechunk)
    people = dataset.qrels.to_dict()
    # People's labels, one text one id: each on the chunk holding its text, its grade
    # people's; not one of the judge's grades among them.
    flat = {
        (q, d): g for q, docs in rechunk.dataset.qrels.to_dict().items() for d, g in docs.items()
    }
    assert flat == {(q, renamed(d)): g for q, docs in people.items() for d, g in docs.items()}
    # The judge's re-anchored grades are the layer's grades of the same text, by the judge.
    layer = {}
    for line in project.layer.read_text().splitlines():
        row = json.loads(line)
        layer[(row["query"], row["doc"])] = row["grade"]
    grades = moved.qrels.to_dict()
    current = [(q, d) for q, docs in grades.items() for d in docs if "~" in d]
    assert current
    for query, doc in current:
        assert grades[query][doc] == layer[(query, doc.replace("~", "#"))]
        assert moved.graded_by[(query, doc)].model == judge.model


def test_a_re_chunk_that_loses_judged_text_fails_on_those_queries_slices(tmp_path: Path) -> None:
    found = judged_chunks(tmp_path / "lost")
    judged: dict[str, set[str]] = {}
    for (query, doc), grade in found.full.items():
        if grade >= 1:
            judged.setdefault(doc.split("#")[0], set()).add(query)
    queries, lost = billing_only(found.root, judged)
    hit = {q for doc in lost for q in judged[doc]}
    assert len(lost) >= 10
    rows = corpus_rows(found.pr_corpus)
    write_rows(found.pr_corpus, [r for r in rows if r["metadata"]["source"] not in lost])
    result = check(found.pr, cache=False, judge=False)
    assert result.status == "fail"
    assert failing_slices(queries, hit, {c.slice for c in failing_checks(result.comparisons)})


def test_the_re_chunk_renames_half_the_articles_chunks() -> None:
    assert (renamed("kb-1101#0"), renamed("kb-1102#3")) == ("kb-1101~0", "kb-1102#3")
