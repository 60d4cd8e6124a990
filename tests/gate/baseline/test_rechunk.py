"""A re-chunked corpus gated: the chunked example's pull request that changes only the chunk
size passes at the document level, a re-chunk that loses judged text fails on the slices of
the queries that judged it, and at the chunk level the drifted labels are label holes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.document_level import ROLLED, document_level
from retrieval_gate.gate.baseline.file import read_baseline, write_baseline
from retrieval_gate.gate.baseline.rechunk import BEFORE, rechunked
from retrieval_gate.gate.result import failing_checks
from retrieval_gate.pipeline.check import check
from tests.helpers.chunkings import (
    CHUNKED_BASELINE,
    billing_only,
    copy_chunked_example,
    corpus_rows,
    failing_slices,
    judged_relevant,
    write_rows,
)
from tests.helpers.cli import run_cli

PR = "example-chunked-pr.yaml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_chunked_example(tmp_path / "project")


def _at_chunk_level(project: Path) -> Path:
    text = (project / PR).read_text(encoding="utf-8").replace("level: document", "level: chunk")
    path = project / "chunk-level.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_unchanged_chunking_passes_with_no_drift_note(project: Path) -> None:
    result = check(project / "example-chunked.yaml", cache=False)
    assert result.status == "pass"
    assert not any("re-chunked" in warning for warning in result.warnings)


def test_a_chunk_size_change_passes_at_the_document_level_and_says_what_it_anchored(
    project: Path,
) -> None:
    result = check(project / PR, cache=False)
    assert result.status == "pass"
    assert not failing_checks(result.comparisons)
    (note,) = [w for w in result.warnings if "re-chunked" in w]
    assert note.startswith(
        "the corpus was re-chunked since the baseline: the baseline's chunking anchors all 806 "
        "labels, the current one 19 (0 valid, 19 re-anchorable); the other 787 (11 merged, 776 "
        "split) are label holes for the current side"
    )


def test_the_current_side_is_graded_only_where_a_label_s_text_is_a_whole_chunk(
    project: Path,
) -> None:
    result = check(_at_chunk_level(project), cache=False)
    rechunk = rechunked(result.baseline, result.current, result.dataset)
    assert rechunk is not None
    anchored = {
        (r.query_id, r.drift.chunks[0], r.grade)
        for r in rechunk.drift
        if r.drift.kind in ("valid", "re-anchorable")
    }
    qrels = rechunk.dataset.qrels
    rows = zip(
        qrels.query_ids[qrels.query].tolist(),
        qrels.docs.tolist(),
        qrels.grade.tolist(),
        strict=True,
    )
    # Every id the current chunking holds is graded by an anchored label, or not at all.
    current_side = {(q, d, g) for q, d, g in rows if not d.endswith(BEFORE)}
    assert current_side == anchored
    assert len(anchored) == 19


def test_the_judge_s_labels_of_chunks_refuse_the_document_view(project: Path) -> None:
    """Across a re-chunk they follow their text (tests/gate/modes/test_assisted_rechunk.py);
    rolled up to documents they would be chunks' grades given to articles."""
    result = check(_at_chunk_level(project), cache=False)
    with pytest.raises(NotComparableError, match=r"dataset\.level document rolls labels up"):
        document_level(result.baseline, result.current, result.dataset, None, llm_labels=True)


def test_without_anchors_in_the_baseline_the_re_chunk_is_refused_as_before(project: Path) -> None:
    path = project / CHUNKED_BASELINE
    write_baseline(dataclasses.replace(read_baseline(path), chunk_anchors=None), path)
    with pytest.raises(NotComparableError, match="the corpus changed under the labels of 131"):
        check(project / PR, cache=False)


def test_at_the_chunk_level_the_drifted_labels_are_holes_the_verdict_depends_on(
    project: Path,
) -> None:
    result = check(_at_chunk_level(project), cache=False)
    failing = failing_checks(result.comparisons)
    assert failing  # the split labels' new chunks are unjudged: non-relevant as decided
    holes = {(h.metric, h.slice): h for h in result.label_holes}
    # Graded the best way for the current side, every failure goes away: it depends on them.
    assert all(not holes[(c.metric, c.slice)].robust for c in failing)
    assert all(holes[(c.metric, c.slice)].best != "regressed" for c in failing)


def test_a_re_chunk_that_loses_judged_text_fails_on_those_queries_slices(project: Path) -> None:
    judged = judged_relevant(project)
    # The articles only billing questions judged relevant: the chunker loses their text.
    queries, lost = billing_only(project, judged)
    hit = {q for doc in lost for q in judged[doc]}
    assert len(lost) >= 10
    assert len(hit) >= 10
    corpus = project / "example-chunked" / "corpus-200.jsonl"
    write_rows(corpus, [r for r in corpus_rows(corpus) if r["metadata"]["source"] not in lost])
    result = check(project / PR, cache=False)
    assert result.status == "fail"
    assert failing_slices(queries, hit, {c.slice for c in failing_checks(result.comparisons)})


def test_a_re_chunk_gives_byte_identical_results(project: Path) -> None:
    first, second = project / "a.json", project / "b.json"
    for path in (first, second):
        code, _, _ = run_cli("check", "-c", project / PR, "--quiet", "--no-cache", "--json", path)
        assert code == 0
    assert first.read_bytes() == second.read_bytes()


def test_repeated_runs_across_a_re_chunk_are_said_to_be_the_first_re_scored(
    project: Path,
) -> None:
    result = check(_at_chunk_level(project), cache=False, repeats=2)
    (note,) = [w for w in result.warnings if "re-chunked" in w]
    assert note.endswith(
        "; the current side's repeated runs are its first run's top k re-scored (the others "
        "keep no top k): their noise is not measured"
    )
    assert result.current.repeats is None


def test_the_document_view_needs_only_the_source_each_chunk_names(project: Path) -> None:
    anchored = check(project / "example-chunked.yaml", cache=False)
    text = (project / "example-chunked.yaml").read_text()
    plain = project / "sources-only.yaml"
    plain.write_text(
        text.replace("  documents: example/corpus.jsonl", "").replace(
            "example-chunked/baseline.json", "sources-only/baseline.json"
        )
    )
    code, _, err = run_cli("baseline", "-c", plain, "--no-cache", "--quiet")
    assert code == 0, err
    result = check(plain, cache=False)
    assert ROLLED in result.warnings
    means = {(c.metric, c.slice): c.current_mean for c in anchored.comparisons}
    assert {(c.metric, c.slice): c.current_mean for c in result.comparisons} == means


def test_label_drift_needs_both_chunkings_and_the_corpus() -> None:
    from retrieval_gate.core.model import Document
    from retrieval_gate.datasets.anchors import Anchor, corpus_anchors, span_hash
    from retrieval_gate.datasets.label_drift import Drift, LabelDrift
    from retrieval_gate.gate.baseline.rechunk import label_drift_since
    from tests.helpers.baselines import make
    from tests.helpers.builders import queue_dataset

    corpus = {"c1": Document("c1", "", "hello", {"source": "A", "start": 0})}
    plain = queue_dataset({"q1": {"c1": 1}}, corpus)
    dataset = dataclasses.replace(plain, anchors=corpus_anchors(corpus))
    baseline = make(chunk_anchors={"c1": Anchor("A", 0, 5, span_hash("hello"))})
    assert label_drift_since(baseline, dataset) == (
        LabelDrift("q1", "c1", 1.0, Drift("valid", ("c1",))),
    )
    assert label_drift_since(make(), dataset) is None  # a baseline made before anchors
    assert label_drift_since(baseline, plain) is None  # a corpus that is not chunked
    unread = dataclasses.replace(dataset, corpus=None)
    assert label_drift_since(baseline, unread) is None


def test_a_record_keeps_the_anchors_of_the_chunks_judged_or_ranked_only() -> None:
    from retrieval_gate.core.model import Document
    from retrieval_gate.datasets.anchors import Anchor, corpus_anchors, span_hash
    from retrieval_gate.gate.baseline.rechunk import recorded_anchors
    from tests.helpers.builders import queue_dataset

    corpus = {
        chunk: Document(chunk, "", text, {"source": "A", "start": start})
        for chunk, text, start in (("c1", "hello", 0), ("c2", "world", 6), ("c3", "again", 12))
    }
    plain = queue_dataset({"q1": {"c1": 1}}, corpus)
    dataset = dataclasses.replace(plain, anchors=corpus_anchors(corpus))
    assert recorded_anchors(dataset, {"q1": ("c2",)}) == {
        "c1": Anchor("A", 0, 5, span_hash("hello")),
        "c2": Anchor("A", 6, 11, span_hash("world")),
    }
    assert recorded_anchors(dataset, {}) == {"c1": Anchor("A", 0, 5, span_hash("hello"))}
    assert recorded_anchors(plain, {"q1": ("c2",)}) is None  # a corpus that is not chunked


def _judged_rechunk(corpus: dict[str, Any], anchors: dict[str, Any]) -> Any:
    """A re-chunk of one baseline onto itself over `corpus`, the baseline's chunks at
    `anchors`: where the judge's grades are placed (`judge_across`)."""
    from retrieval_gate.datasets.anchors import corpus_anchors
    from retrieval_gate.datasets.label_drift import Chunking
    from retrieval_gate.gate.baseline.rechunk import Rechunk
    from tests.helpers.baselines import make
    from tests.helpers.builders import queue_dataset

    record = make()
    return Rechunk(
        baseline=record,
        current=record,
        dataset=queue_dataset({"q1": {"n1": 1}}, corpus),
        drift=(),
        note="",
        chunking=Chunking(corpus, corpus_anchors(corpus)),
        anchors=anchors,
        renamed={},
    )


def test_the_judge_s_grades_land_on_each_side_s_chunk_of_their_text_and_are_counted() -> None:
    from retrieval_gate.core.judge_identity import JudgeIdentity
    from retrieval_gate.core.model import Document
    from retrieval_gate.datasets.anchors import Anchor, span_hash
    from retrieval_gate.gate.baseline.rechunk import JudgedText, judge_across

    hello, world = Anchor("A", 0, 5, span_hash("hello")), Anchor("A", 6, 11, span_hash("world"))
    corpus = {"n1": Document("n1", "", "hello", {"source": "A", "start": 0})}
    # The baseline's chunking held "hello" twice, the later id first: the first id is kept.
    anchors = {"r2": hello, "r1": hello, "r3": world}
    rechunk = _judged_rechunk(corpus, anchors)
    judge = JudgeIdentity(model="m", prompt_sha256="a" * 64)
    texts = [
        JudgedText("q1", "gone", 2.0, hello, judge),  # read "hello": a chunk on both sides
        JudgedText("q1", "r3", 1.0, None, judge),  # "world": the baseline's chunk alone
        JudgedText("q2", "old", 1.0, world, judge),  # "world" again, found by its text
    ]
    found, note = judge_across(texts, rechunk)
    assert found == {
        ("q1", "r1"): texts[0],
        ("q1", "n1"): texts[0],
        ("q1", "r3"): texts[1],
        ("q2", "r3"): texts[2],
    }
    assert note.startswith(
        "the judge's layer across the re-chunk: of its 3 grades, the baseline's chunking "
        "anchors 3 and the current one 1; "
    )


def test_a_grade_lands_on_the_reference_chunk_of_its_text_nearest_where_it_was_read() -> None:
    """The baseline's chunking held one text twice, at 0 ("b") and at 20 ("a"): a grade read
    at 18 is "a"'s (2 away, not 18), one read at 10 is as near both and takes the one that
    starts first, not the first id."""
    from retrieval_gate.core.judge_identity import JudgeIdentity
    from retrieval_gate.core.model import Document
    from retrieval_gate.datasets.anchors import Anchor, span_hash
    from retrieval_gate.gate.baseline.rechunk import JudgedText, judge_across

    text = span_hash("hello")
    corpus = {"n1": Document("n1", "", "other", {"source": "A", "start": 0})}
    anchors = {"b": Anchor("A", 0, 5, text), "a": Anchor("A", 20, 25, text)}
    rechunk = _judged_rechunk(corpus, anchors)
    judge = JudgeIdentity(model="m", prompt_sha256="a" * 64)
    texts = [
        JudgedText("q1", "gone", 1.0, Anchor("A", 18, 23, text), judge),
        JudgedText("q2", "gone", 1.0, Anchor("A", 10, 15, text), judge),
    ]
    found, _ = judge_across(texts, rechunk)
    assert found == {("q1", "a"): texts[0], ("q2", "b"): texts[1]}


def test_one_id_space_renames_to_a_current_chunk_no_reference_id_holds() -> None:
    from retrieval_gate.core.model import Document
    from retrieval_gate.datasets.anchors import Anchor, corpus_anchors, span_hash
    from retrieval_gate.datasets.label_drift import Chunking
    from retrieval_gate.gate.baseline.rechunk import one_id_space

    def anchor(start: int, text: str) -> Anchor:
        return Anchor("A", start, start + len(text), span_hash(text))

    now = {"V": (0, "hello"), "N": (30, "world"), "X": (40, "fresh")}
    corpus = {
        i: Document(i, "", text, {"source": "A", "start": at}) for i, (at, text) in now.items()
    }
    anchors = {
        "V": anchor(0, "hello"),  # valid: its id still names its text
        "D": anchor(10, "hello"),  # the same text as V: V's id is V's, D keeps its own
        "W": anchor(20, "world"),  # moved to N, which no reference id holds: takes N
        "X": anchor(40, "stale"),  # its id now names other text: renamed apart
    }
    chunking = Chunking(corpus, corpus_anchors(corpus))
    assert one_id_space(anchors, anchors, chunking, corpus) == {"W": "N", "X": "X" + BEFORE}
