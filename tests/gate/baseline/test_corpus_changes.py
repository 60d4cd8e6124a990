"""Judged documents' hashes and what changed since the baseline's (baseline/corpus_changes.py)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.core.model import Document
from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.corpus_changes import (
    HASH_DIGITS,
    NO_CORPUS,
    NO_HASHES,
    CorpusCheck,
    NotComparableQuery,
    corpus_checked,
    document_changes,
    document_hash,
    judged_document_hashes,
)
from retrieval_gate.gate.baseline.file import read_record
from tests.helpers.baselines import make
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


def test_hashes_read_as_the_committed_example_baseline_wrote_them() -> None:
    # A baseline written before keeps its hashes: reading them anew must give the same
    # digits, or every judged document would read as rewritten.
    stored = json.loads((CONFIGS / EXAMPLE_BASELINE).read_text(encoding="utf-8"))
    hashes = stored["judged_documents"]
    lines = (CONFIGS / "example" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    corpus = {row["_id"]: Document(row["_id"], row.get("title", ""), row["text"]) for row in rows}
    assert len(hashes) > 100
    assert {doc: document_hash(corpus[doc]) for doc in hashes} == hashes


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


def _hashed(ids: tuple[str, ...], hashes: dict[str, str]) -> Any:
    scores = {"ndcg@10": [0.5] * len(ids), "recall@10": [1.0] * len(ids)}
    return make(query_ids=ids, scores=scores, top_k={}, judged_documents=hashes)


QUERY_IDS = ("q1", "q2", "q3", "q4")
JUDGED = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"c": 0, "d": 1}}
HASHES = {"a": "0" * 16, "b": "1" * 16, "c": "2" * 16, "d": "3" * 16}


def test_queries_judging_a_changed_document_are_left_out_with_their_reasons() -> None:
    dataset = queue_dataset(JUDGED)
    baseline = _hashed(QUERY_IDS, HASHES)
    # c rewritten (judged by q3 and, at grade 0, by q4), d removed: q3 and q4 leave.
    current = _hashed(QUERY_IDS, {"a": "0" * 16, "b": "1" * 16, "c": "f" * 16})
    before, after, kept, check = corpus_checked(baseline, current, dataset, 0.5)
    assert check == CorpusCheck(
        checked=True,
        not_comparable=(
            NotComparableQuery(query_id="q3", reasons=("doc c text changed",)),
            NotComparableQuery(query_id="q4", reasons=("doc c text changed", "doc d removed")),
        ),
    )
    assert before.query_ids == after.query_ids == ("q1", "q2")
    assert [q.id for q in kept.queries] == ["q1", "q2"]
    assert sorted(set(kept.qrels.query_ids[kept.qrels.query].tolist())) == ["q1", "q2"]
    assert kept.fingerprint == dataset.fingerprint


def test_exactly_min_coverage_of_the_queries_left_is_enough() -> None:
    dataset = queue_dataset(JUDGED)
    baseline = _hashed(QUERY_IDS, HASHES)
    current = _hashed(QUERY_IDS, {**HASHES, "a": "f" * 16})  # q1 leaves: 3 of 4 kept
    assert corpus_checked(baseline, current, dataset, 0.75)[0].query_ids == ("q2", "q3", "q4")
    with pytest.raises(NotComparableError) as refused:
        corpus_checked(baseline, current, dataset, 0.76)
    assert str(refused.value).startswith(
        "the corpus changed under the labels of 1 query of 4 ('q1'), leaving 3, fewer than "
        "gate.min_coverage 76% of them:\n  - text changed: 'a'\n"
    )


def test_no_query_left_is_refused_whatever_min_coverage() -> None:
    dataset = queue_dataset(JUDGED)
    baseline = _hashed(QUERY_IDS, HASHES)
    current = _hashed(QUERY_IDS, {"d": "f" * 16})
    with pytest.raises(NotComparableError) as refused:
        corpus_checked(baseline, current, dataset, 0.0)
    assert "of 4 ('q1', 'q2', 'q3', 'q4'), leaving 0, fewer than" in str(refused.value)
    assert "\n  - removed from the corpus: 'a', 'b', 'c'\n  - text changed: 'd'\n" in str(
        refused.value
    )
