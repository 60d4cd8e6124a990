"""A SQLite cache of retriever answers, keyed by (retriever fingerprint, query text, k)."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.model import Hit, StagedHits, candidates_of
from retrieval_gate.errors import CacheError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    fingerprint TEXT NOT NULL,
    query TEXT NOT NULL,
    k INTEGER NOT NULL,
    hits TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (fingerprint, query, k)
)
"""
_GET = "SELECT hits FROM answers WHERE fingerprint = ? AND query = ? AND k = ?"
_PUT = (
    "INSERT OR REPLACE INTO answers (fingerprint, query, k, hits, created) VALUES (?, ?, ?, ?, ?)"
)

CacheEntry = tuple[str, str, int, Sequence[Hit]]
"""(retriever fingerprint, query text, k, hits) as given to `ResultCache.put_many`."""


class ResultCache:
    """Answers of earlier runs; only successful answers are stored (the runner never puts
    failures). One connection guarded by a lock: calls come from one thread in the runner,
    so a lock costs nothing and keeps the class safe for any other caller."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"{self.path}: cannot create the cache folder ({exc}); "
                "choose another cache path or run with --no-cache"
            ) from exc
        try:
            # check_same_thread=False: the lock below serialises every use of the connection.
            # timeout: another retrieval-gate process may hold the write lock for a moment.
            self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        try:
            self._setup()
        except BaseException:
            self._conn.close()
            self._closed = True
            raise

    def _setup(self) -> None:
        try:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise CacheError(
                    f"{self.path}: the result cache was written by another version of "
                    f"retrieval-gate (cache schema {version}, this one reads {SCHEMA_VERSION}); "
                    f"delete it (rm {self.path}) or run with --no-cache"
                )
            # WAL lets a reader (another CI job, a local run) read while this run writes.
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            with self._conn:
                self._conn.execute(_SCHEMA)
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def get(self, fingerprint: str, text: str, k: int) -> list[Hit] | None:
        """The cached hits for this retriever, query text and k (a `StagedHits` when the answer
        had candidates), or None when not cached."""
        with self._lock:
            try:
                row = self._conn.execute(_GET, (fingerprint, text, k)).fetchone()
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
        return None if row is None else self._decode(row[0])

    def put(self, fingerprint: str, text: str, k: int, hits: Sequence[Hit]) -> None:
        """Store (or replace) one answer."""
        self.put_many([(fingerprint, text, k, hits)])

    def put_many(self, entries: Iterable[CacheEntry]) -> None:
        """Store (or replace) several answers in one transaction."""
        now = time.time()
        rows = [(fp, text, k, _encode(hits), now) for fp, text, k, hits in entries]
        if not rows:
            return
        with self._lock:
            try:
                with self._conn:
                    self._conn.executemany(_PUT, rows)
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    def clear(self) -> None:
        """Forget every cached answer."""
        with self._lock:
            try:
                with self._conn:
                    self._conn.execute("DELETE FROM answers")
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    def __len__(self) -> int:
        with self._lock:
            try:
                return int(self._conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    def close(self) -> None:
        """Close the connection; calling it twice is harmless."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> ResultCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _decode(self, text: str) -> list[Hit]:
        try:
            rows: Any = parsed_json(text)
            if isinstance(rows, dict):  # a two-stage answer: final hits and candidates
                return StagedHits(
                    [_hit(*row) for row in rows["hits"]],
                    [_hit(*row) for row in rows["candidates"]],
                )
            hits = [_hit(*row) for row in rows]
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise CacheError(
                f"{self.path}: the result cache holds an unreadable entry ({exc}); "
                f"delete it (rm {self.path}) or run with --no-cache"
            ) from exc
        return hits

    def _error(self, exc: sqlite3.Error) -> CacheError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return CacheError(
                f"{self.path}: the result cache is locked by another process ({text}); "
                "wait for it to finish or run with --no-cache"
            )
        if "unable to open" in text or "readonly" in text:
            return CacheError(
                f"{self.path}: cannot open the result cache for writing ({text}); "
                "check that the folder is writable, or run with --no-cache"
            )
        return CacheError(
            f"{self.path}: the result cache is unreadable or corrupt ({text}); "
            f"delete it (rm {self.path}) or run with --no-cache"
        )


def _encode(hits: Sequence[Hit]) -> str:
    # A two-stage answer is an object, so a single-stage entry stays the list it always was.
    candidates = candidates_of(hits)
    if candidates is not None:
        staged = {"hits": _rows(hits), "candidates": _rows(candidates)}
        return json.dumps(staged, separators=(",", ":"))
    return json.dumps(_rows(hits), separators=(",", ":"))


def _rows(hits: Sequence[Hit]) -> list[list[Any]]:
    # Non-finite scores are stored as strings: JSON has no NaN/inf, and float() reads them back.
    # A hit's text, when it has one, is a third element: entries without it stay as they were.
    return [
        [hit.doc_id, hit.score if hit.score is None or math.isfinite(hit.score) else str(hit.score)]
        + ([] if hit.text is None else [hit.text])
        for hit in hits
    ]


def _hit(doc: Any, score: Any, text: Any = None) -> Hit:
    """A hit from its stored row [doc, score] or [doc, score, text]."""
    return Hit(
        str(doc), None if score is None else float(score), None if text is None else str(text)
    )
