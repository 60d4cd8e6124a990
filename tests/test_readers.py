"""Readers: every format, gzip, detection, and errors that name the file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.readers import arrow, read_qrels, read_run, run_from_dict
from retrieval_gate.readers.dicts import qrels_from_dict

TREC_QRELS = """\
# comment line
10 0 d2 1
10 0 d10 0

2 0 d1 3
2 0 d#3 -1
"""
TREC_RUN = """\
10 Q0 d2 1 3.5 tag junk after the tag
10\tQ0\td10\t2\t  1.25\ttag
2 Q0 d1 1 -0.5 last-tag
"""
EXPECTED_QRELS = {"10": {"d2": 1.0, "d10": 0.0}, "2": {"d1": 3.0, "d#3": -1.0}}
EXPECTED_RUN = {"10": {"d2": 3.5, "d10": 1.25}, "2": {"d1": -0.5}}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_trec_qrels_keeps_ids_as_strings_and_skips_comments(tmp_path: Path) -> None:
    qrels = read_qrels(write(tmp_path / "qrels.txt", TREC_QRELS))
    assert qrels.to_dict() == EXPECTED_QRELS
    assert list(qrels.query_ids) == ["10", "2"]  # string order, not numeric


def test_trec_run_ignores_extra_columns_and_mixed_whitespace(tmp_path: Path) -> None:
    run = read_run(write(tmp_path / "run.txt", TREC_RUN))
    assert run.to_dict() == EXPECTED_RUN
    assert run.name == "last-tag"


def test_gzip_is_read_transparently_whatever_the_name(tmp_path: Path) -> None:
    for name in ("qrels.txt.gz", "qrels.bin"):
        path = tmp_path / name
        path.write_bytes(gzip.compress(TREC_QRELS.encode()))
        assert read_qrels(path, "trec").to_dict() == EXPECTED_QRELS


def test_beir_tsv_with_and_without_header(tmp_path: Path) -> None:
    body = "10\td2\t1\n10\td10\t0\n2\td1\t3\n2\td#3\t-1\n"
    for text in ("query-id\tcorpus-id\tscore\n" + body, body):
        path = write(tmp_path / "test.tsv", text)
        assert read_qrels(path).to_dict() == EXPECTED_QRELS


def test_jsonl_qrels_and_runs_in_both_layouts(tmp_path: Path) -> None:
    rows = [
        {"query_id": "10", "doc_id": "d2", "relevance": 1},
        {"qid": 10, "docid": "d10", "grade": 0},
        {"query_id": "2", "doc_id": "d1", "relevance": 3},
        {"query_id": "2", "doc_id": "d#3", "relevance": -1},
    ]
    qrels_path = write(tmp_path / "qrels.jsonl", "\n".join(json.dumps(r) for r in rows))
    assert read_qrels(qrels_path).to_dict() == EXPECTED_QRELS

    flat = [
        {"query_id": "10", "doc_id": "d2", "score": 3.5},
        {"query_id": "10", "doc_id": "d10", "score": 1.25},
        {"query_id": "2", "doc_id": "d1", "score": -0.5},
    ]
    assert read_run(write(tmp_path / "a.jsonl", "\n".join(map(json.dumps, flat)))).to_dict() == (
        EXPECTED_RUN
    )
    grouped = [
        {"query_id": "10", "results": ["d2", "d10"]},
        {"query_id": "2", "results": []},
    ]
    run = read_run(write(tmp_path / "b.jsonl", "\n".join(map(json.dumps, grouped))))
    ranked = run.to_dict()
    assert list(ranked) == ["10", "2"]
    assert ranked["2"] == {}
    assert ranked["10"]["d2"] > ranked["10"]["d10"]  # listed order is rank order


def test_json_results_file(tmp_path: Path) -> None:
    path = write(tmp_path / "results.json", json.dumps(EXPECTED_RUN))
    assert read_run(path).to_dict() == EXPECTED_RUN
    qrels_path = write(tmp_path / "qrels.json", json.dumps(EXPECTED_QRELS))
    assert read_qrels(qrels_path).to_dict() == EXPECTED_QRELS


def test_dicts_with_ranked_lists_and_pairs() -> None:
    run = run_from_dict({"q": ["b", "a"], "r": [("x", 2.0), ("y", 3.0)], "empty": []})
    ranked = run.to_dict()
    assert ranked["q"]["b"] > ranked["q"]["a"]
    assert ranked["r"] == {"x": 2.0, "y": 3.0}
    assert ranked["empty"] == {}


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("1 0 d1 1\n1 0 d2\n", 2, "expected 'qid iter docno rel'"),
        ("1 0 d1 1\n1 0 d2 high\n", 2, "rel (the grade) 'high' is not a finite number"),
        ("1 0 d1 1\n1 0 d2 1 extra\n", 2, "got 5 fields"),
        ("1 0 d1 1\n2 0 d1 1\n1 0 d1 0\n", 3, "already given on line 1"),
    ],
)
def test_malformed_qrels_name_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = write(tmp_path / "bad.qrels", text)
    with pytest.raises(InputError) as caught:
        read_qrels(path, "trec")
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0\n", 2, "expected 'qid Q0 docno rank score tag'"),
        ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 nan t\n", 2, "score 'nan' is not a finite number"),
        ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n1 Q0 d1 3 0.5 t\n", 3, "already given on line 1"),
    ],
)
def test_malformed_runs_name_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = write(tmp_path / "bad.run", text)
    with pytest.raises(InputError) as caught:
        read_run(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert fragment in str(caught.value)


def test_jsonl_errors_name_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "q.jsonl", '{"query_id": "1", "doc_id": "a", "relevance": 1}\n{oops\n')
    with pytest.raises(InputError, match=r"q\.jsonl:2: invalid JSON"):
        read_qrels(path)
    path = write(tmp_path / "r.jsonl", '{"query_id": "1", "doc_id": "a"}\n')
    run = read_run(path)
    assert run.to_dict() == {"1": {"a": -1.0}}
    path = write(tmp_path / "s.jsonl", '{"query_id": "1"}\n')
    with pytest.raises(InputError, match=r"s\.jsonl:1: no doc id"):
        read_run(path)


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_qrels(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="available: trec, jsonl, json"):
        read_run(write(tmp_path / "r.txt", TREC_RUN), "parquet")


def test_dict_ids_must_be_strings() -> None:
    with pytest.raises(InputError, match="query id 1 is a int"):
        qrels_from_dict({1: {"d": 1}})  # type: ignore[dict-item]
    with pytest.raises(InputError, match="doc id 7 is a int"):
        run_from_dict({"q": {7: 1.0}})  # type: ignore[dict-item]
    with pytest.raises(InputError, match="not a finite number"):
        run_from_dict({"q": {"d": float("nan")}})


def synthetic_run(path: Path, queries: int, docs: int) -> None:
    rng = np.random.default_rng(7)
    with path.open("w") as handle:
        for q in range(queries):
            ids = rng.choice(10 * docs, size=docs, replace=False)
            scores = np.round(rng.random(docs), 2)  # rounding makes ties
            for rank, (doc, score) in enumerate(zip(ids, scores, strict=True), 1):
                handle.write(f"q{q} Q0 d{doc} {rank} {score} run\n")


@pytest.mark.skipif(not arrow.available(), reason="pyarrow not installed")
def test_arrow_path_reads_what_the_exact_reader_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.txt"
    synthetic_run(path, 40, 30)
    monkeypatch.setattr(arrow, "MIN_BYTES", 0)
    fast = arrow.read_columns(path, 6, {0: "str", 2: "str", 4: "float"})
    assert fast is not None
    fast_run = read_run(path)
    monkeypatch.setenv(arrow.DISABLE_ENV, "1")
    exact_run = read_run(path)
    assert fast_run.to_dict() == exact_run.to_dict()
    assert fast_run.name == exact_run.name == "run"


@pytest.mark.skipif(not arrow.available(), reason="pyarrow not installed")
@pytest.mark.parametrize(
    "text",
    [
        "# a comment\n1 Q0 d1 1 2.0 t\n",
        "1 Q0 d1 1 2.0 t\n1  Q0 d2 2 1.0 t\n",
        "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t x\n",
        "1\tQ0\td1\t1\t2.0\tt\n1\tQ0\td 2\t2\t1.0\tt\n",
        "1 Q0 d1 1 inf t\n",
    ],
)
def test_arrow_path_declines_what_it_cannot_read_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setattr(arrow, "MIN_BYTES", 0)
    path = write(tmp_path / "run.txt", text)
    assert arrow.read_columns(path, 6, {0: "str", 2: "str", 4: "float"}) is None


@pytest.mark.skipif(not arrow.available(), reason="pyarrow not installed")
def test_duplicates_found_on_the_arrow_path_still_name_both_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arrow, "MIN_BYTES", 0)
    path = write(tmp_path / "run.txt", "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n1 Q0 d1 3 0.5 t\n")
    assert arrow.read_columns(path, 6, {0: "str", 2: "str", 4: "float"}) is not None
    with pytest.raises(InputError, match=r"run\.txt:3: .*already given on line 1"):
        read_run(path)


def test_qrels_without_judgments_is_an_error_but_an_empty_run_is_not(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no judgments found"):
        read_qrels(write(tmp_path / "qrels.txt", "# only a comment\n"))
    assert len(read_run(write(tmp_path / "run.txt", ""))) == 0


BOM = "\ufeff"


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_leading_utf8_bom_is_accepted_by_every_qrels_and_run_reader(
    tmp_path: Path, compress: bool
) -> None:
    """Windows editors and Excel start files with a byte-order mark; the config loader
    accepts one, so every reader does too (formats detected or named)."""

    def bom(name: str, text: str) -> Path:
        data = (BOM + text).encode("utf-8")
        path = tmp_path / name
        path.write_bytes(gzip.compress(data) if compress else data)
        return path

    qrels_jsonl = "".join(
        json.dumps({"query_id": q, "doc_id": d, "relevance": g}) + "\n"
        for q, docs in EXPECTED_QRELS.items()
        for d, g in docs.items()
    )
    run_jsonl = "".join(
        json.dumps({"query_id": q, "doc_id": d, "score": s}) + "\n"
        for q, docs in EXPECTED_RUN.items()
        for d, s in docs.items()
    )
    beir_tsv = "query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{int(g)}\n" for q, docs in EXPECTED_QRELS.items() for d, g in docs.items()
    )
    for name, text, format in [
        ("qrels.txt", TREC_QRELS.removeprefix("# comment line\n"), None),
        ("qrels.txt", TREC_QRELS, "trec"),
        ("qrels.tsv", beir_tsv, None),
        ("qrels.tsv", beir_tsv, "beir"),
        ("qrels.data", qrels_jsonl, None),
        ("qrels.jsonl", qrels_jsonl, None),
        ("qrels.json", json.dumps(EXPECTED_QRELS), None),
    ]:
        assert read_qrels(bom(name, text), format).to_dict() == EXPECTED_QRELS, (name, format)
    for name, text, format in [
        ("run.txt", TREC_RUN, None),
        ("run.jsonl", run_jsonl, None),
        ("run.data", run_jsonl, None),
        ("results.json", json.dumps(EXPECTED_RUN), None),
    ]:
        assert read_run(bom(name, text), format).to_dict() == EXPECTED_RUN, (name, format)
