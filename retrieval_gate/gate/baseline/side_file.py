"""The top-k side file: where a baseline or result of more than TOP_K_INLINE queries keeps
its top-k ids, written beside the JSON and read and checked on first use."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.core.ids import (
    ByteIds,
    IntArray,
    first_duplicate_bytes,
    pair_keys,
    sorted_keys,
)
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.top_k_ids import TopKColumns, TopKIds
from retrieval_gate.core.wording import json_id_lists
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.record import RECREATE, top_k_problems
from retrieval_gate.gate.baseline.side_file_bytes import written_columns, written_pieces

TOP_K_INLINE = 1000
"""Most queries whose top-k ids the JSON holds itself; past it they go to a side file
`NAME.top_k.jsonl` beside it (one line per query), read only when used, so that the JSON stays
small to write, read and diff (benchmarks/timings/bench_check.py)."""


def top_k_path(path: Path) -> Path:
    """The side file holding the top-k ids of the JSON at `path`."""
    return path.with_name(path.name.removesuffix(".json") + ".top_k.jsonl")


def with_top_k_file(document: dict[str, Any], path: Path) -> dict[str, Any]:
    """`document` (a baseline, or a result holding one as `current`) as written to `path`:
    with more than TOP_K_INLINE queries, the top-k ids are written to `top_k_path(path)`
    (atomically, first) and the document names that file and its sha256 instead.

    The two files are replaced one after the other: a crash between the two renames leaves
    a JSON whose side file does not match, which reading refuses (exit 2), never uses."""
    inner = document.get("current") if "current" in document else document
    if not isinstance(inner, dict):
        return document
    top_k = inner.get("top_k")
    if not isinstance(top_k, Mapping) or len(top_k) <= TOP_K_INLINE:
        return document
    side = top_k_path(path)
    laid_out = written_pieces(top_k) if isinstance(top_k, TopKIds) else None
    # The buffers as they are, hashed and written: no copy of them as text.
    pieces = [json_id_lists(top_k.items()).encode()] if laid_out is None else laid_out
    views = [piece if isinstance(piece, bytes) else piece.data for piece in pieces]
    digest = hashlib.sha256()
    for view in views:
        digest.update(view)
    write_text_atomic(side, views)
    reference = {"file": side.name, "sha256": digest.hexdigest(), "queries": len(top_k)}
    if inner is document:
        return {**document, "top_k": reference}
    return {**document, "current": {**inner, "top_k": reference}}


class SideTopK(TopKIds):
    """The top-k ids of a JSON file kept in its side file, read and checked on first use."""

    def __init__(
        self, path: Path, sha256: str, queries: int, labelled: set[str], k: int, source: str
    ) -> None:
        """The side file at `path`, recorded with this `sha256` and count of `queries`."""
        super().__init__(None)
        self._path = path
        self._sha256 = sha256
        self._queries = queries
        self._labelled = labelled
        self._k = k
        self._source = source

    def _columns(self) -> TopKColumns:
        if self._loaded_columns is None:
            data = self._checked_bytes()
            written = written_columns(data)
            columns = written[0] if written is not None and self.valid(*written) else None
            if columns is None:  # the line-by-line reader names what is wrong
                columns = TopKIds.of(self._read(data)).columns
            self._loaded_columns = columns
        return self._loaded_columns

    def valid(self, columns: TopKColumns, rows: int) -> bool:
        """Whether columns read from the file's `rows` pass every check `_read` makes."""
        listed = np.diff(columns.bounds)
        return (
            rows == self._queries
            and int(listed.max(initial=0)) <= self._k
            and self._labelled.issuperset(columns.queries.tolist())
            and not _doc_twice(listed, columns.docs)
        )

    def _checked_bytes(self) -> bytes:
        """The side file's bytes, once their sha256 is the one the JSON recorded."""
        fix = f"the two files belong together: restore both from git, or {RECREATE}"
        try:
            data = regular_file(self._path).read_bytes()
        except OSError as error:
            raise InputError(
                f"cannot read the top-k side file {self._path.name} that {self._source} names "
                f"({error.strerror or error}); {fix}",
                source=self._source,
            ) from None
        if hashlib.sha256(data).hexdigest() != self._sha256:
            raise InputError(
                f"the top-k side file {self._path.name} does not match {self._source} (its "
                f"sha256 differs from the one recorded): one was replaced without the other; "
                f"{fix}",
                source=self._source,
            )
        return data

    def _read(self, data: bytes) -> dict[str, tuple[str, ...]]:
        """Every row of the file, each line checked and named when it is wrong."""
        side = str(self._path)
        top_k: dict[str, tuple[str, ...]] = {}
        try:
            # "\n" alone ends a row: ids may hold U+2028 or U+2029, which json writes raw and
            # str.splitlines would split on.
            lines = data.decode("utf-8").removesuffix("\n").split("\n") if data else []
        except UnicodeDecodeError:
            raise InputError("is not UTF-8 text", source=side) from None
        count = len(lines)
        try:  # one parse of the whole file: JSON escapes newlines inside strings
            rows = parsed_json("[" + ",".join(lines) + "]")
        except (json.JSONDecodeError, RecursionError):
            rows = None
        if rows is not None and len(rows) != len(lines):
            rows = None  # a line held more or less than one row: read them one by one
        if rows is not None and _plain_rows(rows):
            top_k = {row[0]: tuple(row[1]) for row in rows if row[1]}
            lines = []  # every line is a well-formed row: nothing to name
        for number, line in enumerate(lines, 1):
            try:
                row = parsed_json(line) if rows is None else rows[number - 1]
            except json.JSONDecodeError as error:
                raise InputError(f"not valid JSON: {error.msg}", source=side, line=number) from None
            except RecursionError:
                raise InputError("nested too deeply", source=side, line=number) from None
            if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)):
                raise InputError("expected [query id, [doc ids]]", source=side, line=number)
            docs = row[1]
            if not (isinstance(docs, list) and all(isinstance(d, str) for d in docs)):
                raise InputError("expected a list of doc ids", source=side, line=number)
            if len(set(docs)) != len(docs):
                problem = top_k_problems({row[0]: docs}, {row[0]}, len(docs), "top_k")[0]
                raise InputError(problem, source=side, line=number)
            if docs:
                top_k[row[0]] = tuple(docs)
        problems = top_k_problems(top_k, self._labelled, self._k, "top_k")
        if count != self._queries:
            problems.append(f"{count} queries, {self._queries} recorded")
        if problems:
            raise InputError("invalid top-k side file:\n  " + "\n  ".join(problems), source=side)
        return top_k


def _plain_rows(rows: list[Any]) -> bool:
    """Whether every row of a side file is [query id, [doc ids]] with no doc twice."""
    if not all(
        type(row) is list and len(row) == 2 and type(row[0]) is str and type(row[1]) is list
        for row in rows
    ):
        return False
    lists = [row[1] for row in rows]
    if not set(map(type, itertools.chain.from_iterable(lists))) <= {str}:
        return False
    return sum(map(len, map(set, lists))) == sum(map(len, lists))


def _doc_twice(listed: IntArray, docs: ByteIds) -> bool:
    """Whether some query lists a doc twice (the line-by-line reader then names it)."""
    query = np.repeat(np.arange(len(listed), dtype=np.int64), listed)
    keys = sorted_keys(pair_keys(query, docs.hashes(keep=False), in_place=True))
    return first_duplicate_bytes(query, docs, keys) is not None
