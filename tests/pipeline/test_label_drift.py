"""`label-drift`: counts by slice, the re-anchored labels and the queue, never a grade invented."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.datasets.label_drift import KINDS, Drift, LabelDrift
from retrieval_gate.datasets.llm_layer import layer_path, read_layer
from retrieval_gate.errors import InputError
from retrieval_gate.pipeline.label_drift import DriftReport, drift_report, drift_table
from tests.helpers.builders import EXAMPLE_BASELINE
from tests.helpers.chunkings import copy_chunked_example, corpus_rows, write_rows
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

PR = "example-chunked-pr.yaml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_chunked_example(tmp_path / "project")


def test_each_slice_counts_its_queries_labels_and_all_counts_every_label(project: Path) -> None:
    report = drift_report(load(project / PR))
    (name, total), *others = report.slices
    assert name == "all"
    assert sum(total.values()) == len(report.drift) == 806
    for field in ("intent", "segment"):
        parts = [counts for slice_name, counts in others if slice_name.startswith(field + "=")]
        assert {k: sum(c[k] for c in parts) for k in KINDS} == total


def test_fix_keeps_the_anchored_labels_and_the_queue_holds_no_grade(project: Path) -> None:
    corpus = project / "example-chunked" / "corpus-200.jsonl"
    rows = corpus_rows(corpus)
    gone = {r["_id"] for r in rows if r["metadata"]["source"] == "kb-1406"}
    write_rows(corpus, [r for r in rows if r["_id"] not in gone])  # the refund policy's text lost
    fixed, queue = project / "fixed.tsv", project / "queue.csv"
    code, out, err = run_cli("label-drift", "-c", project / PR, "--fix", fixed, "--queue", queue)
    assert (code, err) == (0, "")
    assert out.startswith(
        "label drift of 806 labels against the current chunking, anchored where "
        "baseline.json's chunking had them:\n"
        "slice                   labels  valid  re-anchorable  merged  split  orphaned\n"
        "all                        806      0             19      11    768         8\n"
    )
    assert "orphaned: 8 labels whose judged text is in no chunk now (q001/kb-1406#0, " in out
    report = drift_report(load(project / PR))
    anchored = {
        (r.query_id, r.drift.chunks[0], r.grade)
        for r in report.drift
        if r.drift.kind in ("valid", "re-anchorable")
    }
    lines = fixed.read_text().splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    assert {(q, d, float(g)) for q, d, g in (line.split("\t") for line in lines[1:])} == anchored
    queued = list(csv.DictReader(io.StringIO(queue.read_text())))
    assert queued
    assert all(row["grade"] == "" for row in queued)
    wanted = {
        (r.query_id, chunk)
        for r in report.drift
        if r.drift.kind in ("merged", "split")
        for chunk in r.drift.chunks
    } - {(q, d) for q, d, _ in anchored}
    assert {(row["query_id"], row["doc_id"]) for row in queued} == wanted
    assert not any(doc in gone for _, doc in wanted)


def test_a_baseline_without_anchors_is_exit_2_saying_what_to_do(project: Path) -> None:
    code, _, err = run_cli(
        "label-drift", "-c", project / PR, "--baseline", CONFIGS / EXAMPLE_BASELINE
    )
    assert code == 2
    assert "the baseline holds no chunk anchors" in err
    assert "`retrieval-gate baseline --force` on the main branch" in err


def test_a_corpus_that_is_not_chunked_is_exit_2(project: Path) -> None:
    text = (
        (project / PR)
        .read_text()
        .replace("example-chunked/corpus-200.jsonl", "example/corpus.jsonl")
    )
    (project / "plain.yaml").write_text(text)
    code, _, err = run_cli("label-drift", "-c", project / "plain.yaml")
    assert code == 2
    assert "the corpus is not chunked" in err


@pytest.mark.parametrize("query", ["q\t1", "q\n1", "q\r1"])
def test_fix_refuses_an_id_a_qrels_line_cannot_hold(query: str) -> None:
    row = LabelDrift(query, "c\x1b::error::", 2.0, Drift("valid", ("c\x1b::error::",)))
    report = DriftReport(drift=(row,), slices=(), queue=(), baseline=Path("baseline.json"))
    with pytest.raises(InputError, match="a tab or line break in an id"):
        report.reanchored()


def test_fix_writes_hostile_ids_without_tabs_as_they_are() -> None:
    row = LabelDrift("q::error::1", "c\x1b", 2.5, Drift("re-anchorable", ("n\x1b",)))
    report = DriftReport(drift=(row,), slices=(), queue=(), baseline=Path("baseline.json"))
    assert report.reanchored() == "query-id\tcorpus-id\tscore\nq::error::1\tn\x1b\t2.5\n"


def test_fix_re_anchors_the_judge_s_labels_in_its_layer_still_the_judge_s(project: Path) -> None:
    config = project / "judged.yaml"
    config.write_text(
        (project / PR).read_text() + "judge: {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
    )
    people = drift_report(load(config))
    assert people.judge is None  # no layer yet
    moving = next(r for r in people.drift if r.drift.kind == "re-anchorable")
    split = next(r for r in people.drift if r.drift.kind == "split")
    labelled = {(r.query_id, r.doc_id) for r in people.drift}
    other = next(f"q{n:03d}" for n in range(1, 132) if (f"q{n:03d}", split.doc_id) not in labelled)
    layer = layer_path(load(config))
    sha = "0" * 64
    rows = [(moving.query_id, moving.doc_id, 2), (other, split.doc_id, 1), ("q002", "gone#9", 2)]
    layer.write_text(
        "".join(
            json.dumps(
                {"query": q, "doc": d, "grade": g, "model": "m", "prompt_sha256": sha,
                 "answer": f"::error::{g}", "time": "2026-12-06T00:00:00Z",
                 "answered_by": "m-2026", "temperature": 0.0}
            ) + "\n"
            for q, d, g in rows
        )
    )  # fmt: skip
    report = drift_report(load(config))
    assert report.judge is not None
    kinds = {(r.query_id, r.doc_id): r.drift.kind for r in report.judge}
    assert kinds == {
        (moving.query_id, moving.doc_id): "re-anchorable",
        (other, split.doc_id): "split",
        ("q002", "gone#9"): "orphaned",
    }
    fixed, queue = project / "fixed.tsv", project / "queue.csv"
    code, out, err = run_cli("label-drift", "-c", config, "--fix", fixed, "--queue", queue)
    assert (code, err) == (0, "")
    assert "re-anchored 1 label of the judge's in qrels.llm.jsonl, each still the judge's" in out
    # People's qrels get people's labels alone: the same file as without the judge's layer.
    assert fixed.read_text() == people.reanchored()
    after = read_layer(layer)
    assert {(r.query, r.doc, r.grade) for r in after if r.anchor is None} == set(rows)  # kept
    (added,) = [row for row in after if row.anchor is not None]
    target = moving.drift.chunks[0]
    assert (added.query, added.doc, added.grade) == (moving.query_id, target, 2)
    assert (added.model, added.prompt_sha256, added.answer, added.time) == (
        "m", sha, "::error::2", "2026-12-06T00:00:00Z",
    )  # fmt: skip
    assert (added.answered_by, added.temperature) == ("m-2026", 0.0)
    assert added.anchor == report.anchors[target]
    queued = {
        (row["query_id"], row["doc_id"], row["grade"])
        for row in csv.DictReader(io.StringIO(queue.read_text()))
    }
    assert {(other, chunk, "") for chunk in split.drift.chunks} <= queued
    line = drift_table(report).splitlines()[-1]
    assert line.startswith(
        "the judge's layer: 3 labels (0 valid, 1 re-anchorable, 0 merged, 1 split"
    )
    # Run again: the re-anchored row is valid now, and nothing is added twice.
    code, out, _ = run_cli("label-drift", "-c", config, "--fix", fixed)
    assert code == 0
    assert len(read_layer(layer)) == 4
