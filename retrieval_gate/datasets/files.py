"""The files labelled sets are made of: paths from the config checked, queries and corpora read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_gate.core.model import Document, Query
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import json_id, json_lines, numbered, open_text

if TYPE_CHECKING:
    from retrieval_gate.config.schema import DatasetConfig

ID_KEYS = ("_id", "id", "query_id", "qid")
TEXT_KEYS = ("text", "query", "question")
JUDGMENT_KEYS = ("qrels", "judgments", "relevance")
_NOT_METADATA = frozenset({*ID_KEYS, *TEXT_KEYS, *JUDGMENT_KEYS, "metadata"})
_TOPIC = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_TOPIC_LABEL = re.compile(r"^(number|topic|description|narrative):\s*", re.I)
_TOPIC_FIELD = re.compile(
    r"<(num|title|desc|narr)>(.*?)(?=<(?:num|title|desc|narr)>|$)", re.S | re.I
)


def query_from_json(row: dict[str, Any], source: str, line: int) -> Query:
    """A query from a BEIR/JSONL object: id, text, and every other field as metadata
    (BEIR's nested `metadata` object is merged in); inline judgments are not metadata."""
    query_id = json_id(row, ID_KEYS, source, line, "query id")
    text = json_id(row, TEXT_KEYS, source, line, "query text")
    metadata: dict[str, Any] = {}
    nested = row.get("metadata")
    if isinstance(nested, dict):
        metadata.update(nested)
    metadata.update({k: v for k, v in row.items() if k not in _NOT_METADATA})
    return Query(query_id, text, metadata)


def read_json_queries(path: Path) -> list[Query]:
    """BEIR `queries.jsonl` or any JSON Lines of queries; an id given twice is an InputError."""
    seen = QueryIds(str(path))
    return [
        seen.first(query_from_json(row, str(path), line), line) for line, row in json_lines(path)
    ]


class QueryIds:
    """The query ids of a file read so far: a second query with an id is an InputError
    naming both lines (the gate would score one of them and drop the other unseen)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[str, int | None] = {}

    def first(self, query: Query, line: int | None = None) -> Query:
        """`query`, the first with its id."""
        if query.id in self.lines:
            before = self.lines[query.id]
            where = f" (first on line {before})" if before is not None else ""
            raise InputError(
                f"query id {query.id!r} is given twice{where}; give each query one entry, "
                "with all its judgments, or another id",
                source=self.source,
                line=line,
            )
        self.lines[query.id] = line
        return query


def read_tsv_queries(path: Path) -> list[Query]:
    """`qid<TAB>text` per line (MS MARCO style)."""
    queries = []
    seen = QueryIds(str(path))
    with open_text(path) as handle:
        for number, line in numbered(handle, str(path)):
            if not line.strip() or line.startswith("#"):
                continue
            query_id, sep, text = line.rstrip("\r\n").partition("\t")
            if not sep or not query_id.strip() or not text.strip():
                raise InputError("expected 'qid<TAB>query text'", source=str(path), line=number)
            queries.append(seen.first(Query(query_id.strip(), text.strip()), number))
    return queries


def read_trec_topics(path: Path, field: str) -> list[Query]:
    """TREC topics (`<top><num> Number: 301 <title> ... </top>`); `field` is the query text,
    the other fields become metadata."""
    with open_text(path) as handle:
        text = handle.read()
    queries = []
    seen = QueryIds(str(path))
    for block in _TOPIC.findall(text):
        fields = {
            name.lower(): _TOPIC_LABEL.sub("", " ".join(value.split()))
            for name, value in _TOPIC_FIELD.findall(block)
        }
        number = fields.get("num", "")
        chosen = fields.get(field, "")
        if not number or not chosen:
            raise InputError(
                f"a topic has no <num> or no <{field}>: {block.strip()[:60]!r}", source=str(path)
            )
        others = {k: v for k, v in fields.items() if k not in ("num", field)}
        queries.append(seen.first(Query(number, chosen, others)))
    if not queries:
        raise InputError("no <top> topics found", source=str(path))
    return queries


def read_corpus(path: Path) -> dict[str, Document]:
    """BEIR `corpus.jsonl`: `{"_id", "title", "text", "metadata"}` per line."""
    corpus: dict[str, Document] = {}
    for line, row in json_lines(path):
        doc_id = json_id(row, ID_KEYS, str(path), line, "doc id")
        if doc_id in corpus:
            raise InputError(
                f"doc {doc_id!r} appears twice in the corpus", source=str(path), line=line
            )
        metadata = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
        corpus[doc_id] = Document(
            doc_id, str(row.get("title") or ""), str(row.get("text") or ""), metadata or {}
        )
    return corpus


def field_corpus(spec: DatasetConfig, base_dir: Path) -> dict[str, Document] | None:
    """The corpus `dataset.corpus` names, None when it names none."""
    return read_corpus(field_path(spec.corpus, base_dir, "dataset.corpus")) if spec.corpus else None


def field_path(value: str | None, base_dir: Path, field: str) -> Path:
    """The file config field `field` names, relative to `base_dir`; an InputError if absent."""
    path = Path(value or "").expanduser()
    return existing_path(path if path.is_absolute() else base_dir / path, field)


def existing_path(path: Path, field: str) -> Path:
    """`path`; an InputError naming config field `field` when it does not exist."""
    if not path.exists():
        raise InputError(
            f"{field}: {path} does not exist; check the path (relative paths "
            "start at the config file's folder)"
        )
    return path
