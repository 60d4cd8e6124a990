"""Readers: every format, gzip, detection, and errors that name the file and line."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.errors import InputError
from retrieval_gate.readers import read_qrels, read_run, run_from_dict
from retrieval_gate.readers.dicts import qrels_from_dict
from retrieval_gate.readers.trec import (
    exact_trec_judgments,
    exact_trec_run,
    fast_trec_judgments,
    fast_trec_run,
)

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
BOM = "\ufeff"
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


def same_run(fast: Run, exact: Run) -> None:
    np.testing.assert_array_equal(fast.query_ids, exact.query_ids)
    np.testing.assert_array_equal(fast.query, exact.query)
    np.testing.assert_array_equal(fast.docs, exact.docs)
    assert fast.score.tobytes() == exact.score.tobytes()  # bit for bit, -0.0 included
    assert fast.name == exact.name
    assert fast.source == exact.source


def same_judgments(fast: Judgments, exact: Judgments) -> None:
    np.testing.assert_array_equal(fast.query_ids, exact.query_ids)
    np.testing.assert_array_equal(fast.query, exact.query)
    np.testing.assert_array_equal(fast.docs, exact.docs)
    assert fast.grade.tobytes() == exact.grade.tobytes()
    assert fast.annotator is None
    assert exact.annotator is None
    assert fast.lines is not None
    assert exact.lines is not None
    np.testing.assert_array_equal(fast.lines, exact.lines)


def store(path: Path, text: str, *, compress: bool = False, bom: bool = False) -> Path:
    data = (BOM if bom else "").encode() + text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


CLEAN_RUNS = {
    "sorted": "",  # synthetic_run
    "tabs": "1\tQ0\td1\t1\t2.5\tt\n1\tQ0\td2\t2\t-0\tt\n",
    "numbers": "".join(
        f"q Q0 d{i} {i} {s} tag\n"
        for i, s in enumerate(
            [
                "1e5",
                "-3.25E-2",
                "+7",
                ".5",
                "5.",
                "-.125",
                "0.000000000000001",
                "123456789012345",
                "1234567890123456789",
                "3.141592653589793",
                "-0.0",
                "00012.50",
                "1_000",
                "2.5e+300",
                "12.3456",
                "-7.25",
            ]
        )
    ),
    "widths": "b Q0 doc-long-id-here 1 1 t\na Q0 x 1 2 t\na Q0 ÿé 2 1 t\nb Q0 ☃ 2 0.5 t\n",
    "no final newline": "2 Q0 d1 1 1.0 t\n1 Q0 d1 1 1.0 last",
    "interleaved": "1 Q0 a 1 1 t\n2 Q0 a 1 1 t\n1 Q0 b 2 0 t\n2 Q0 b 2 0 t\n",
}


@pytest.mark.parametrize("variant", list(CLEAN_RUNS))
@pytest.mark.parametrize(("compress", "bom"), [(False, False), (True, False), (False, True)])
def test_the_fast_run_reader_reads_what_the_exact_reader_reads(
    tmp_path: Path, variant: str, compress: bool, bom: bool
) -> None:
    path = tmp_path / "run.txt"
    if variant == "sorted":
        synthetic_run(path, 40, 30)
        text = path.read_text()
    else:
        text = CLEAN_RUNS[variant]
    store(path, text, compress=compress, bom=bom)
    fast = fast_trec_run(path)
    assert fast is not None
    same_run(fast, exact_trec_run(path))
    same_run(read_run(path), exact_trec_run(path))


@pytest.mark.parametrize(
    "text",
    [
        "10 0 d2 1\n10 0 d10 0\n2 0 d1 3\n2 0 d#3 -1\n",
        "q\t0\td1\t1\nq\t0\td2\t2.5\nr\t0\tdé\t0\n",
        "b 0 x 1\na 0 y 2\nb 0 z 0",
    ],
)
@pytest.mark.parametrize(("compress", "bom"), [(False, False), (True, False), (False, True)])
def test_the_fast_qrels_reader_reads_what_the_exact_reader_reads(
    tmp_path: Path, text: str, compress: bool, bom: bool
) -> None:
    path = store(tmp_path / "qrels.txt", text, compress=compress, bom=bom)
    fast = fast_trec_judgments(path)
    assert fast is not None
    same_judgments(fast, exact_trec_judgments(path))
    assert read_qrels(path).to_dict() == exact_trec_judgments(path).qrels().to_dict()


HUGE = "d" * 100_000
MALFORMED_RUNS = {
    "missing field": "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0\n",
    "extra fields": "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t x y\n",
    "bad number": "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1,5 t\n",
    "two dots": "1 Q0 d1 1 2.50 t\n1 Q0 d2 2 1.2.5 t\n",
    "sign inside": "1 Q0 d1 1 2.50 t\n1 Q0 d2 2 1-2.5 t\n",
    "exponent": "1 Q0 d1 1 2.50 t\n1 Q0 d2 2 1e2.5 t\n",
    "nan": "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 nan t\n",
    "inf": "1 Q0 d1 1 -inf t\n",
    "huge number": "1 Q0 d1 1 1e400 t\n",
    "duplicate": "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n1 Q0 d1 3 0.5 t\n",
    "duplicate far apart": "1 Q0 d1 1 2 t\n2 Q0 d1 1 2 t\n1 Q0 d1 2 1 t\n",
    "crlf": "1 Q0 d1 1 2.0 t\r\n1 Q0 d2 2 x t\r\n",
    "lone cr": "1 Q0 d1 1 2.0 t\r1 Q0 d2 2 1.0 t\n",
    "doubled spaces": "1 Q0 d1 1 2.0 t\n1  Q0 d2 2 1.0 t\n",
    "leading space": " 1 Q0 d1 1 2.0 t\n",
    "mixed tabs": "1\tQ0 d1 1 2.0\tt\n",
    "blank line": "1 Q0 d1 1 2.0 t\n\n1 Q0 d2 2 1.0 t\n",
    "comment": "# made by hand\n1 Q0 d1 1 2.0 t\n",
    "comment mid-file": "1 Q0 d1 1 2.0 t\n#1 Q0 d2 2 1.0 t\n",
    "empty": "",
    "only blank": "\n\n",
    "control character": "1 Q0 d\x011 1 2.0 t\n1 Q0 d\x0b2 2 1.0 t\n",
    "unicode space": "1 Q0 d\u00a01 1 2.0 t\n",
    "huge line": f"1 Q0 {HUGE} 1 2.0 t\n1 Q0 d2 2 1.0 t\n",
    "huge line, one field": f"1 Q0 d1 1 2.0 t\n{HUGE}\n",
}


def outcome(read: Callable[[Path], object], path: Path) -> str:
    try:
        result = read(path)
    except InputError as error:
        return f"error: {error}"
    if isinstance(result, Run):
        return f"run: {result.to_dict()} {result.name}"
    return f"qrels: {cast(Qrels, result).to_dict()}"


@pytest.mark.parametrize("variant", list(MALFORMED_RUNS))
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_unusual_runs_give_the_exact_readers_result_or_error(
    tmp_path: Path, variant: str, compress: bool
) -> None:
    path = store(tmp_path / "run.txt", MALFORMED_RUNS[variant], compress=compress)
    assert outcome(read_run, path) == outcome(exact_trec_run, path)


def test_non_utf8_runs_and_qrels_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(b"1 Q0 d1 1 2.0 t\n1 Q0 d\xff 2 1.0 t\n")
    assert fast_trec_run(path) is None
    assert outcome(lambda p: read_run(p, "trec"), path) == f"error: {path}:2: is not UTF-8 text"
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"1 0 d1 1\n1 0 d\xe9 1\n")
    assert fast_trec_judgments(path) is None
    assert outcome(lambda p: read_qrels(p, "trec"), path) == f"error: {path}:2: is not UTF-8 text"


MALFORMED_QRELS = {
    "missing field": "1 0 d1 1\n1 0 d2\n",
    "extra field": "1 0 d1 1\n1 0 d2 1 extra\n",
    "bad grade": "1 0 d1 1\n1 0 d2 high\n",
    "nan": "1 0 d1 nan\n",
    "duplicate": "1 0 d1 1\n2 0 d1 1\n1 0 d1 0\n",
    "annotators": "1 a d1 1\n1 b d1 2\n",
    "crlf": "1 0 d1 1\r\n1 0 d2 x\r\n",
    "tabs and spaces": "1\t0 d1 1\n",
    "comment": "# qrels\n1 0 d1 1\n",
    "empty": "",
    "control character": "1 0 d\x7f1 1\n1 0 d\x1c2 1\n",
    "no final newline": "1 0 d1 1\n1 0 d2",
    "huge line": f"1 0 {HUGE} 1\n",
}


@pytest.mark.parametrize("variant", list(MALFORMED_QRELS))
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_unusual_qrels_give_the_exact_readers_result_or_error(
    tmp_path: Path, variant: str, compress: bool
) -> None:
    path = store(tmp_path / "qrels.txt", MALFORMED_QRELS[variant], compress=compress)

    def exact(path: Path) -> Qrels:
        judgments = exact_trec_judgments(path)
        if len(judgments) == 0:
            raise InputError(
                "no judgments found (read as trec); a labelled set needs at least one "
                "'query doc grade' row",
                source=str(path),
            )
        return judgments.qrels()

    assert outcome(lambda p: read_qrels(p, "trec"), path) == outcome(exact, path)


def test_a_truncated_gzip_file_is_left_to_the_exact_reader(tmp_path: Path) -> None:
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"1 Q0 d1 1 2.0 t\n" * 1000)[:-20])
    assert fast_trec_run(path) is None
    assert outcome(read_run, path) == outcome(exact_trec_run, path)
    assert outcome(read_run, path) == f"error: {path}: is a truncated or damaged gzip file; " + (
        "compress it again"
    )


def test_qrels_without_judgments_is_an_error_but_an_empty_run_is_not(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no judgments found"):
        read_qrels(write(tmp_path / "qrels.txt", "# only a comment\n"))
    assert len(read_run(write(tmp_path / "run.txt", ""))) == 0


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


@pytest.mark.parametrize("seed", range(3))
def test_scores_parse_bit_for_bit_as_float_does(tmp_path: Path, seed: int) -> None:
    """The fast reader's integer arithmetic on digits must give float()'s correctly rounded
    value for every plain decimal, and hand anything else to numpy's own conversion."""
    rng = np.random.default_rng(seed)
    values = rng.random(3000) * 10.0 ** rng.integers(-8, 16, 3000)
    places = rng.integers(0, 18, 3000)
    signs = rng.choice(["", "-", "+"], 3000)
    texts = [f"{sign}{value:.{p}f}" for sign, value, p in zip(signs, values, places, strict=True)]
    path = write(
        tmp_path / "run.txt", "".join(f"q Q0 d{i} {i} {t} t\n" for i, t in enumerate(texts))
    )
    fast = fast_trec_run(path)
    assert fast is not None
    expected = np.array([float(t) for t in texts])
    assert fast.score.tobytes() == expected.tobytes()


@pytest.mark.parametrize("places", [1, 4, 6, 9, 14])
@pytest.mark.parametrize("broken", [False, True], ids=["fixed", "one without a dot"])
def test_scores_with_one_number_of_decimals_parse_as_float_does(
    tmp_path: Path, places: int, broken: bool
) -> None:
    """Run files usually print every score with the same number of decimals, which the fast
    reader reads without looking for each dot; a row breaking the pattern still reads right."""
    rng = np.random.default_rng(places)
    values = rng.random(3000) * 10.0 ** rng.integers(-3, 15 - places, 3000)
    signs = rng.choice(["", "-", "+"], 3000)
    texts = [f"{sign}{value:.{places}f}" for sign, value in zip(signs, values, strict=True)]
    texts = [t.replace("0.", ".", 1) if i % 7 == 0 else t for i, t in enumerate(texts)]
    texts[2000] = "1" * 16 + "." + "1" * places  # too many digits for the integer arithmetic
    if broken:
        texts[1500] = "12"
    path = write(
        tmp_path / "run.txt", "".join(f"q Q0 d{i} {i} {t} t\n" for i, t in enumerate(texts))
    )
    fast = fast_trec_run(path)
    assert fast is not None
    assert fast.score.tobytes() == np.array([float(t) for t in texts]).tobytes()


JSONL_RUNS = {
    "plain": '{"query_id": "q1", "doc_id": "d1", "score": 2.5}\n'
    '{"query_id": "q1", "doc_id": "d2", "score": -0.0}\n'
    '{"query_id": "q0", "doc_id": "d1", "score": 7}\n',
    "other keys": '{"qid": "b", "docid": "x", "score": 1e300, "extra": [1]}\n'
    '{"qid": "a", "docid": "x", "score": 1, "extra": null}',
    "crlf": '{"query_id": "q1", "doc_id": "d1", "score": 1}\r\n'
    '{"query_id": "q1", "doc_id": "d2", "score": 2}\r\n',
    "hostile ids": "".join(
        json.dumps({"query_id": q, "doc_id": d, "score": i}) + "\n"
        for i, (q, d) in enumerate(
            [
                ("q\u2028", "d\x00"),
                ("q\u2028", "\x1b[31m"),
                ("::error::x", "中文"),
                ("é", "d\u2029"),
            ]
        )
    ),
    # Each of these is left to the exact reader, which reads it or names the line at fault.
    "blank line": '{"query_id": "q", "doc_id": "a", "score": 1}\n\n'
    '{"query_id": "q", "doc_id": "b", "score": 2}\n',
    "integer id": '{"query_id": 1, "doc_id": "a", "score": 1}\n',
    "string score": '{"query_id": "q", "doc_id": "a", "score": "1.5"}\n',
    "bool score": '{"query_id": "q", "doc_id": "a", "score": true}\n',
    "huge score": '{"query_id": "q", "doc_id": "a", "score": 1' + "0" * 400 + "}\n",
    "nan score": '{"query_id": "q", "doc_id": "a", "score": NaN}\n',
    "keys change": '{"query_id": "q", "doc_id": "a", "score": 1}\n'
    '{"query_id": "q", "doc_id": "b"}\n',
    "empty id": '{"query_id": " ", "doc_id": "a", "score": 1}\n',
    "not an object": '{"query_id": "q", "doc_id": "a", "score": 1}\n[1, 2]\n',
    "broken": '{"query_id": "q", "doc_id": "a", "score": 1}\n{"query_id": "q", \n',
    "duplicate": '{"query_id": "q", "doc_id": "a", "score": 1}\n'
    '{"query_id": "q", "doc_id": "a", "score": 2}\n',
    "grouped": '{"query_id": "q", "results": [{"doc_id": "a", "score": 1}, "b"]}\n',
    "no scores": '{"query_id": "q", "doc_id": "a"}\n{"query_id": "q", "doc_id": "b"}\n',
    "empty": "",
}


@pytest.mark.parametrize("variant", list(JSONL_RUNS))
@pytest.mark.parametrize(("compress", "bom"), [(False, False), (True, False), (False, True)])
def test_the_fast_jsonl_run_reader_reads_what_the_exact_reader_reads(
    tmp_path: Path, variant: str, compress: bool, bom: bool
) -> None:
    from retrieval_gate.readers.jsonl import _exact_run, _plain_run

    path = store(tmp_path / "run.jsonl", JSONL_RUNS[variant], compress=compress, bom=bom)
    assert outcome(read_run, path) == outcome(_exact_run, path)
    if variant in ("plain", "other keys", "crlf", "hostile ids", "empty"):
        fast = _plain_run(path)
        assert fast is not None
        same_run(fast, _exact_run(path))
    elif variant != "duplicate":  # refused by the run itself, naming both lines
        assert _plain_run(path) is None


def test_a_jsonl_run_larger_than_a_batch_reads_as_the_exact_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval_gate.readers import jsonl

    monkeypatch.setattr(jsonl, "_BATCH_CHARS", 300)  # a few lines a batch
    rng = np.random.default_rng(3)
    lines = [
        json.dumps({"query_id": f"q{q}", "doc_id": f"d{d}", "score": float(rng.random())})
        for q in range(9)
        for d in rng.choice(50, size=8, replace=False).tolist()
    ]
    path = store(tmp_path / "run.jsonl", "\n".join(lines) + "\n")
    fast = jsonl._plain_run(path)
    assert fast is not None
    same_run(fast, jsonl._exact_run(path))
    broken = store(tmp_path / "late.jsonl", "\n".join([*lines[:20], "{oops", *lines[20:]]))
    assert jsonl._plain_run(broken) is None
    with pytest.raises(InputError, match=r"late\.jsonl:21: invalid JSON"):
        read_run(broken)


JSONL_QRELS = {
    "plain": '{"query_id": "q1", "doc_id": "d1", "relevance": 2}\n'
    '{"query_id": "q0", "doc_id": "d1", "relevance": -1}\n',
    "other keys": '{"qid": "b", "docid": "x", "grade": 1.5, "score": 3}\n'
    '{"qid": "a", "docid": "x", "grade": 0, "score": 1}',
    "hostile ids": "".join(
        json.dumps({"query_id": q, "doc_id": d, "relevance": 1}) + "\n"
        for q, d in [("q\u2028", "d\x00"), ("q\u2028", "\x1b[31m"), ("::error::x", "中文")]
    ),
    # Left to the exact reader, which reads it or names the line at fault.
    "annotators": '{"query_id": "q", "doc_id": "a", "relevance": 1, "annotator": "x"}\n'
    '{"query_id": "q", "doc_id": "a", "relevance": 2, "annotator": "y"}\n',
    "annotator later": '{"query_id": "q", "doc_id": "a", "relevance": 1}\n'
    '{"query_id": "q", "doc_id": "b", "relevance": 2, "annotator": "y"}\n',
    "string grade": '{"query_id": "q", "doc_id": "a", "relevance": "1"}\n',
    "bool grade": '{"query_id": "q", "doc_id": "a", "relevance": false}\n',
    "integer id": '{"query_id": "q", "doc_id": 7, "relevance": 1}\n',
    "blank line": '{"query_id": "q", "doc_id": "a", "relevance": 1}\n   \n',
    "duplicate": '{"query_id": "q", "doc_id": "a", "relevance": 1}\n'
    '{"query_id": "q", "doc_id": "a", "relevance": 0}\n',
}


@pytest.mark.parametrize("variant", list(JSONL_QRELS))
@pytest.mark.parametrize(("compress", "bom"), [(False, False), (True, False), (False, True)])
def test_the_fast_jsonl_qrels_reader_reads_what_the_exact_reader_reads(
    tmp_path: Path, variant: str, compress: bool, bom: bool
) -> None:
    from retrieval_gate.readers.jsonl import _exact_judgments, _plain_judgments

    path = store(tmp_path / "qrels.jsonl", JSONL_QRELS[variant], compress=compress, bom=bom)
    assert outcome(read_qrels, path) == outcome(lambda p: _exact_judgments(p).qrels(), path)
    if variant in ("plain", "other keys", "hostile ids", "duplicate"):
        fast = _plain_judgments(path)
        assert fast is not None
        same_judgments(fast, _exact_judgments(path))
    else:
        assert _plain_judgments(path) is None


NESTED = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("qrels.jsonl", '{"query_id": "q", "doc_id": "a", "relevance": 1}\n' + NESTED, ":2:"),
        ("run.jsonl", '{"query_id": "q", "doc_id": "a", "score": 1, "x": ' + NESTED + "}", ":1:"),
        ("qrels.json", '{"q": ' + NESTED + "}", ":"),
    ],
)
def test_json_nested_too_deeply_is_an_input_error_naming_the_file(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    path = store(tmp_path / name, text)
    read = read_run if name.startswith("run") else read_qrels
    with pytest.raises(InputError, match="nested too deeply") as caught:
        read(path)
    assert f"{name}{where}" in str(caught.value)
