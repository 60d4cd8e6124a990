"""Judged documents' hashes and what changed since the baseline's (baseline/corpus_changes.py)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

from retrieval_gate.core.model import Document
from retrieval_gate.gate.baseline.corpus_changes import (
    HASH_DIGITS,
    NO_CORPUS,
    NO_HASHES,
    CorpusCheck,
    corpus_checked,
    document_changes,
    document_hash,
    judged_document_hashes,
)
from retrieval_gate.gate.baseline.file import read_record
from tests.helpers.builders import CORPUS, EXAMPLE_BASELINE, QRELS, labelled_set, queue_dataset
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS


def test_a_hash_is_of_the_words_of_title_and_text_alone() -> None:
    plain = document_hash(Document("d1", "Reset a password", "Open settings. Click reset."))
    assert len(plain) == HASH_DIGITS
    assert int(plain, 16) >= 0
    rewrapped = Document("other-id", " Reset  a\tpassword ", "Open settings.\n  Click reset.\n")
    assert document_hash(rewrapped) == plain
    assert document_hash(Document("d1", "Reset a password", "Open settings.", {"x": 1})) != plain
    tagged = Document("d1", "Reset a password", "Open settings. Click reset.", {"lang": "de"})
    assert document_hash(tagged) == plain  # metadata is not what a labeller judged
    # Title and text are kept apart: moving a word across them is a change.
    assert document_hash(Document("d", "a b", "c")) != document_hash(Document("d", "a", "b c"))
    assert document_hash(Document("d", "Café", "")) != document_hash(Document("d", "Cafe", ""))


class _Corpus(dict[str, Document]):
    """A corpus that refuses to be walked and counts the documents read from it."""

    reads = 0

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the whole corpus was walked")

    def __getitem__(self, key: str) -> Document:
        type(self).reads += 1
        return super().__getitem__(key)


def test_only_judged_documents_are_hashed_however_large_the_corpus() -> None:
    corpus = _Corpus({f"n{i}": Document(f"n{i}", "", f"text {i}") for i in range(200_000)})
    corpus.update({"d1": Document("d1", "t", "one"), "d2": Document("d2", "t", "two")})
    dataset = queue_dataset({"q1": {"d1": 2, "d2": 0, "gone": 1}, "q2": {"d1": 1}}, corpus)
    hashes = judged_document_hashes(dataset)
    assert _Corpus.reads == 2  # "gone" is judged but not in the corpus: not hashed
    expected = {doc: document_hash(dict.__getitem__(corpus, doc)) for doc in ("d1", "d2")}
    assert hashes == expected
    assert judged_document_hashes(queue_dataset({"q1": {"d1": 2}})) is None  # no corpus


def test_removed_and_rewritten_documents_are_changes_and_new_ones_are_not() -> None:
    before = {"a": "0" * 16, "b": "1" * 16, "c": "2" * 16}
    after = {"a": "0" * 16, "c": "f" * 16, "new": "3" * 16}
    assert document_changes(before, after) == {"b": "removed", "c": "text changed"}
    assert document_changes(before, before) == {}


def test_a_side_without_hashes_or_no_change_leaves_every_query_in() -> None:
    record = read_record(CONFIGS / EXAMPLE_BASELINE)
    assert record.judged_documents
    unhashed = dataclasses.replace(record, judged_documents=None)
    dataset = queue_dataset({"q1": {"d1": 1}})
    for before, after, check in (
        (
            record,
            unhashed,
            CorpusCheck(checked=False, reason=NO_CORPUS),
        ),  # this run's set has no corpus
        (unhashed, record, CorpusCheck(checked=False, reason=NO_HASHES)),  # an older baseline
        (record, record, CorpusCheck(checked=True)),
    ):
        kept = corpus_checked(before, after, dataset, 0.9)
        assert kept[3] == check
        assert all(a is b for a, b in zip(kept[:3], (before, after, dataset), strict=True))


def test_a_baseline_over_a_huge_corpus_grows_with_the_qrels_alone(tmp_path: Path) -> None:
    """20,000 more documents, none judged, add nothing to the hashes the baseline holds."""
    hashes, sizes = [], []
    for name, extra in (("small", 0), ("huge", 20_000)):
        folder = tmp_path / name
        folder.mkdir()
        corpus = CORPUS + [{"_id": f"x{i}", "title": "", "text": f"w{i}"} for i in range(extra)]
        config = labelled_set(folder, corpus=corpus, baseline="baseline.json")
        done = run_cli("baseline", "-c", config, "--no-cache", "--quiet")
        assert done.ret == 0, done.err
        document = json.loads((folder / "baseline.json").read_text(encoding="utf-8"))
        assert sorted(document["judged_documents"]) == sorted({doc for _, doc, _ in QRELS})
        hashes.append(document["judged_documents"])
        sizes.append((folder / "baseline.json").stat().st_size)
    assert hashes[0] == hashes[1]
    # Rankings and scores differ a little (other documents compete), the file hardly at all.
    assert abs(sizes[1] - sizes[0]) < 1_000
