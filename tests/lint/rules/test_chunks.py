"""Lint on a chunked corpus: chunks not found in their source, labels a re-chunk moved."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.datasets import load_labels
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.lint import LintReport, lint
from tests.helpers.chunkings import CHUNKED_BASELINE, copy_chunked_example, corpus_rows, write_rows


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_chunked_example(tmp_path / "project")


def _findings(project: Path, config: str) -> dict[str, str]:
    loaded = load(project / config)
    report: LintReport = lint(
        loaded,
        load_labels(loaded.dataset, loaded.base_dir),
        read_baseline(project / CHUNKED_BASELINE),
    )
    return {f.code: f.message for f in report.findings}


def test_labels_on_the_baselines_chunking_do_not_drift(project: Path) -> None:
    found = _findings(project, "example-chunked.yaml")
    assert "label-drift" not in found
    assert "unanchored-chunk" not in found


def test_a_re_chunk_counts_the_labels_it_moved(project: Path) -> None:
    found = _findings(project, "example-chunked-pr.yaml")
    assert found["label-drift"].startswith(
        "806 labels of 806 no longer on the chunk they were given to (19 re-anchorable, 11 "
        "merged, 776 split)"
    )


def test_a_chunk_its_source_does_not_hold_is_unanchored(project: Path) -> None:
    corpus = project / "example-chunked" / "corpus-200.jsonl"
    rows = corpus_rows(corpus)
    rows[0]["text"] = "::error::not in the article\x1b"
    write_rows(corpus, rows)
    found = _findings(project, "example-chunked-pr.yaml")
    assert found["unanchored-chunk"].startswith(
        "1 chunk of the corpus names a source document but could not be anchored in it "
        "(kb-1101#0): its source's text (dataset.documents) does not contain it"
    )
