"""Labelled sets: BEIR, TREC and JSON Lines layouts, warnings with counts, fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.config.schema import DatasetConfig
from retrieval_gate.datasets import load
from retrieval_gate.errors import InputError


def write_lines(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def beir_folder(root: Path) -> Path:
    folder = root / "kb"
    write_lines(folder / "corpus.jsonl", [
        {"_id": "d1", "title": "Reset password", "text": "How to reset your password."},
        {"_id": "d2", "title": "Invoices", "text": "Export invoices as PDF."},
    ])  # fmt: skip
    write_lines(folder / "queries.jsonl", [
        {"_id": "q1", "text": "reset my password", "intent": "how-to",
         "metadata": {"segment": "free"}},
        {"_id": "q2", "text": "download invoice", "intent": "billing"},
        {"_id": "q3", "text": "unjudged query"},
    ])  # fmt: skip
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq2\td9\t0\nq4\td1\t1\n"
    )
    return folder


def test_beir_folder_with_metadata_and_warnings(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path)
    dataset = load(DatasetConfig(path="kb"), tmp_path)
    assert [q.id for q in dataset.queries] == ["q1", "q2"]
    assert dataset.query("q1").metadata == {"segment": "free", "intent": "how-to"}
    assert dataset.corpus is not None
    assert dataset.corpus["d2"].title == "Invoices"
    kinds = {w.kind: w for w in dataset.warnings}
    assert kinds["qrels_without_query"].examples == ("q4",)
    assert kinds["query_without_qrels"].examples == ("q3",)
    assert kinds["judged_doc_not_in_corpus"].examples == ("d9",)
    assert str(kinds["qrels_without_query"]) == "1 judged query with no query text left out: q4"
    assert list(dataset.qrels.query_ids) == ["q1", "q2"]
    assert folder.exists()


@pytest.mark.parametrize(
    ("marks", "warned"),
    [((True, True), True), ((True, False), False), ((True, None), False), (("true", True), False)],
)
def test_a_set_of_synthetic_queries_only_is_warned_about(
    tmp_path: Path, marks: tuple[object, object], warned: bool
) -> None:
    folder = beir_folder(tmp_path)
    rows = [
        {"_id": query_id, "text": f"query {query_id}", "metadata": {"synthetic": mark}}
        for query_id, mark in zip(("q1", "q2"), marks, strict=True)
    ]
    write_lines(folder / "queries.jsonl", rows)
    dataset = load(DatasetConfig(path="kb"), tmp_path)
    synthetic = [w for w in dataset.warnings if w.kind == "synthetic"]
    assert bool(synthetic) == warned
    if warned:
        assert str(synthetic[0]).startswith("every query is synthetic")
        assert "flatter lexical retrievers" in str(synthetic[0])


def test_human_llm_mode_keeps_queries_without_judgments(tmp_path: Path) -> None:
    beir_folder(tmp_path)
    dataset = load(DatasetConfig(path="kb"), tmp_path, keep_unjudged=True)
    assert [q.id for q in dataset.queries] == ["q1", "q2", "q3"]
    assert list(dataset.qrels.query_ids) == ["q1", "q2", "q3"]
    # The judgments are the same rows, re-indexed; q3 has none and is no data problem here.
    rows = sorted(
        (dataset.qrels.query_ids[q], d, g)
        for q, d, g in zip(
            dataset.qrels.query, dataset.qrels.docs, dataset.qrels.grade, strict=True
        )
    )
    assert rows == [("q1", "d1", 2.0), ("q2", "d2", 1.0), ("q2", "d9", 0.0)]
    kinds = {w.kind for w in dataset.warnings}
    assert "query_without_qrels" not in kinds
    assert "no_relevant" not in kinds
    assert dataset.fingerprint != load(DatasetConfig(path="kb"), tmp_path).fingerprint


def test_fingerprint_is_stable_and_sees_every_change(tmp_path: Path) -> None:
    beir_folder(tmp_path)
    first = load(DatasetConfig(path="kb"), tmp_path).fingerprint
    assert load(DatasetConfig(path="kb"), tmp_path).fingerprint == first
    qrels = tmp_path / "kb" / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("q1\td1\t2", "q1\td1\t3"))
    assert load(DatasetConfig(path="kb"), tmp_path).fingerprint != first


def test_jsonl_with_inline_judgments(tmp_path: Path) -> None:
    write_lines(tmp_path / "queries.jsonl", [
        {"id": "a", "text": "sso with okta", "segment": "enterprise",
         "qrels": {"d1": 3, "d2": 0}},
        {"id": "b", "text": "cancel plan", "judgments": [{"doc_id": "d3", "relevance": 1}]},
        {"id": "c", "text": "no relevant", "qrels": {"d4": 0}},
    ])  # fmt: skip
    dataset = load(DatasetConfig(queries="queries.jsonl"), tmp_path)
    assert [q.id for q in dataset.queries] == ["a", "b", "c"]
    assert dataset.query("a").metadata == {"segment": "enterprise"}
    assert dataset.qrels.to_dict() == {"a": {"d1": 3.0, "d2": 0.0}, "b": {"d3": 1.0},
                                       "c": {"d4": 0.0}}  # fmt: skip
    assert [w.kind for w in dataset.warnings] == ["no_relevant"]


def test_trec_topics_and_tsv_queries(tmp_path: Path) -> None:
    (tmp_path / "topics.txt").write_text(
        "<top>\n<num> Number: 301\n<title> International Organized Crime\n"
        "<desc> Description:\nIdentify organizations.\n</top>\n"
    )
    (tmp_path / "qrels.txt").write_text("301 0 FBIS3-1 1\n")
    dataset = load(DatasetConfig(queries="topics.txt", qrels="qrels.txt"), tmp_path)
    assert dataset.queries[0].text == "International Organized Crime"
    assert dataset.queries[0].metadata["desc"] == "Identify organizations."
    (tmp_path / "queries.tsv").write_text("301\tcrime orgs\n")
    dataset = load(DatasetConfig(queries="queries.tsv", qrels="qrels.txt"), tmp_path)
    assert dataset.queries[0].text == "crime orgs"


def test_missing_files_name_the_config_field(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"dataset.path: .*kb does not exist"):
        load(DatasetConfig(path="kb"), tmp_path)
    write_lines(tmp_path / "q.jsonl", [{"id": "a", "text": "t"}])
    with pytest.raises(InputError, match="no judgments"):
        load(DatasetConfig(queries="q.jsonl"), tmp_path)


def test_bad_query_lines_name_the_line(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text('{"id": "a", "text": "t", "qrels": {"d": 1}}\n{"id": "b"}\n')
    with pytest.raises(InputError, match=r"q\.jsonl:2: no query text"):
        load(DatasetConfig(queries="q.jsonl"), tmp_path)


def test_a_leading_utf8_bom_is_accepted_in_every_dataset_file(tmp_path: Path) -> None:
    """Queries (JSON Lines, TSV, TREC topics), qrels and corpus files saved by an editor that
    writes a byte-order mark read as the same files without one."""
    folder = beir_folder(tmp_path)
    for path in [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "test.tsv"]:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    dataset = load(DatasetConfig(path="kb"), tmp_path)
    assert [q.id for q in dataset.queries] == ["q1", "q2"]
    assert dataset.corpus is not None
    assert sorted(dataset.corpus) == ["d1", "d2"]
    assert list(dataset.qrels.query_ids) == ["q1", "q2"]
    bom = "\ufeff"
    (tmp_path / "qrels.txt").write_text(bom + "301 0 FBIS3-1 1\n", encoding="utf-8")
    (tmp_path / "queries.tsv").write_text(bom + "301\tcrime orgs\n", encoding="utf-8")
    dataset = load(DatasetConfig(queries="queries.tsv", qrels="qrels.txt"), tmp_path)
    assert [(q.id, q.text) for q in dataset.queries] == [("301", "crime orgs")]
    (tmp_path / "topics.txt").write_text(
        bom + "<top>\n<num> Number: 301\n<title> Organized Crime\n</top>\n", encoding="utf-8"
    )
    dataset = load(DatasetConfig(queries="topics.txt", qrels="qrels.txt"), tmp_path)
    assert [(q.id, q.text) for q in dataset.queries] == [("301", "Organized Crime")]
