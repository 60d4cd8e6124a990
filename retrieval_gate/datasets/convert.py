"""Public collections' files converted into BEIR folders (corpus.jsonl, queries.jsonl, qrels)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval_gate.core.input_files import regular_file
from retrieval_gate.errors import GateError, InputError

QRELS_HEADER = "query-id\tcorpus-id\tscore\n"
BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")


def convert_beir(folder: Path, out: Path) -> None:
    """Move a BEIR folder (as in BEIR's zips) to `out` unchanged."""
    missing = [file for file in BEIR_FILES if not (folder / file).is_file()]
    if missing:
        raise GateError(f"the archive has no {folder.name}/{missing[0]}; it is not a BEIR folder")
    os.replace(folder, out)


_SMART_ID = re.compile(r"\.I\s+(\S+)\s*$")
_SMART_TAGS = {".T": "title", ".A": "author", ".B": "source", ".W": "text"}


@dataclass(frozen=True)
class SmartRecord:
    """One record of a SMART tagged file: its `.I` id, the line it starts on, its fields."""

    id: str
    line: int
    fields: dict[str, str]


def read_smart(path: Path) -> list[SmartRecord]:
    """The records of a SMART file (`.I id`, then `.T`/`.A`/`.B`/`.W` tag lines each followed
    by their text); a field's lines are joined with single spaces, carriage returns ignored."""
    starts: list[tuple[str, int]] = []
    fields: list[dict[str, list[str]]] = []
    field: list[str] | None = None
    for number, line in enumerate(_read_text(path).split("\n"), 1):
        tag = line.strip()
        if match := _SMART_ID.match(line):
            starts.append((match[1], number))
            fields.append({})
            field = None
        elif tag in _SMART_TAGS and fields:
            field = fields[-1].setdefault(_SMART_TAGS[tag], [])
        elif field is not None:
            field.append(line)
        elif tag:
            raise InputError(
                "text outside a field; expected a .I, .T, .A, .B or .W line",
                source=str(path),
                line=number,
            )
    return [
        SmartRecord(key, line, {name: " ".join(" ".join(text).split()) for name, text in f.items()})
        for (key, line), f in zip(starts, fields, strict=True)
    ]


def _read_text(path: Path) -> str:
    """The file's text without carriage returns; an InputError unless it is UTF-8."""
    try:
        return regular_file(path).read_bytes().replace(b"\r", b"").decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"not UTF-8 text ({error})", source=str(path)) from None


def convert_cranfield(unpacked: Path, out: Path) -> None:
    """Write Cranfield's SMART files (`cran.all.1400`, `cran.qry`, `cranqrel`) as BEIR.

    Documents keep their `.I` numbers, title from `.T`, text from `.W`. Queries are numbered by
    their position in cran.qry (1-225), which is how cranqrel refers to them: the `.I` numbers
    run 001-365 with gaps. cranqrel's Cleverdon codes rank 1 (complete answer) above 4
    (minimum interest), so grade = 5 - code. Each query has one `-1` row, undocumented, which
    is the query's source paper (query 1's is document 486; see the notes on the collection
    shipped with the reference data): those rows are kept with grade 0, judged not relevant.
    For nDCG, AP, recall and precision that is the same as leaving them out; bpref and
    judged@k count them as judged."""
    docs = read_smart(unpacked / "cran.all.1400")
    queries = read_smart(unpacked / "cran.qry")
    doc_ids: dict[str, None] = {}
    for record in docs:
        if not record.id.isdigit() or str(int(record.id)) in doc_ids:
            raise InputError(
                f"bad or repeated document id {record.id!r}",
                source=str(unpacked / "cran.all.1400"),
                line=record.line,
            )
        doc_ids[str(int(record.id))] = None
    rows = list(_cranfield_qrels(unpacked / "cranqrel", len(queries), doc_ids))
    out.mkdir(parents=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
        for record, doc in zip(docs, doc_ids, strict=True):
            title, text = record.fields.get("title", ""), record.fields.get("text", "")
            handle.write(json.dumps({"_id": doc, "title": title, "text": text}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
        for position, record in enumerate(queries, 1):
            text = record.fields.get("text", "")
            handle.write(json.dumps({"_id": str(position), "text": text}) + "\n")
    (out / "qrels").mkdir()
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(QRELS_HEADER)
        handle.writelines(f"{query}\t{doc}\t{grade}\n" for query, doc, grade in rows)


def _cranfield_qrels(
    path: Path, queries: int, docs: dict[str, None]
) -> Iterator[tuple[str, str, int]]:
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(_read_text(path).split("\n"), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            query, doc, code = (int(field) for field in fields)
        except ValueError:
            raise InputError(
                "expected 'query_no doc_id code' (three integers)", source=str(path), line=number
            ) from None
        if not 1 <= query <= queries or str(doc) not in docs or code not in (-1, 1, 2, 3, 4):
            raise InputError(
                f"query {query} (of {queries}), document {doc} or code {code} (1-4 or -1) "
                "is out of range",
                source=str(path),
                line=number,
            )
        pair = (str(query), str(doc))
        if pair in seen:
            raise InputError(
                f"query {query}, document {doc} judged twice", source=str(path), line=number
            )
        seen.add(pair)
        yield pair[0], pair[1], 5 - code if code > 0 else 0
