"""The result cache: round trip, key isolation, threads, and errors for unusable files."""

from __future__ import annotations

import math
import sqlite3
import threading
from pathlib import Path

import pytest

from retrieval_gate.core.model import Hit
from retrieval_gate.errors import CacheError
from retrieval_gate.execution.cache import SCHEMA_VERSION, ResultCache

HITS = [Hit("d1", 3.5), Hit("d2"), Hit("d 3", -1.0)]


def test_round_trip_keeps_ids_scores_and_order(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "cache.sqlite"
    with ResultCache(path) as cache:
        assert cache.get("fp", "what is bm25", 10) is None
        cache.put("fp", "what is bm25", 10, HITS)
        assert cache.get("fp", "what is bm25", 10) == HITS
    assert path.is_file()
    with ResultCache(path) as reopened:
        assert reopened.get("fp", "what is bm25", 10) == HITS


def test_hit_texts_round_trip_and_entries_without_text_stay_readable(tmp_path: Path) -> None:
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        texts = [Hit("d1", 1.0, "a passage\n\x1b"), Hit("d2", None, "")]
        cache.put("fp", "q", 2, texts)
        assert cache.get("fp", "q", 2) == texts
        with sqlite3.connect(tmp_path / "cache.sqlite") as conn:
            conn.execute(
                "INSERT INTO answers VALUES ('old', 'q', 2, '[[\"d1\",1.5],[\"d2\",null]]', 0)"
            )
        assert cache.get("old", "q", 2) == [Hit("d1", 1.5), Hit("d2")]


def test_empty_answers_and_non_finite_scores_round_trip(tmp_path: Path) -> None:
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        cache.put("fp", "nothing", 5, [])
        cache.put("fp", "odd", 5, [Hit("a", math.inf), Hit("b", -math.inf), Hit("c", math.nan)])
        assert cache.get("fp", "nothing", 5) == []
        odd = cache.get("fp", "odd", 5)
    assert odd is not None
    assert [hit.score for hit in odd[:2]] == [math.inf, -math.inf]
    assert odd[2].score is not None
    assert math.isnan(odd[2].score)


def test_keys_isolate_fingerprint_text_and_k(tmp_path: Path) -> None:
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        cache.put("fp1", "query", 10, [Hit("a")])
        cache.put("fp2", "query", 10, [Hit("b")])
        cache.put("fp1", "query ", 10, [Hit("c")])
        cache.put("fp1", "query", 5, [Hit("d")])
        assert cache.get("fp1", "query", 10) == [Hit("a")]
        assert cache.get("fp2", "query", 10) == [Hit("b")]
        assert cache.get("fp1", "query ", 10) == [Hit("c")]
        assert cache.get("fp1", "query", 5) == [Hit("d")]
        assert cache.get("fp3", "query", 10) is None
        assert len(cache) == 4


def test_put_replaces_and_clear_forgets(tmp_path: Path) -> None:
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        cache.put_many([("fp", f"q{i}", 3, [Hit(f"d{i}")]) for i in range(50)])
        cache.put("fp", "q7", 3, [Hit("new")])
        assert len(cache) == 50
        assert cache.get("fp", "q7", 3) == [Hit("new")]
        cache.clear()
        assert len(cache) == 0
        assert cache.get("fp", "q7", 3) is None


def test_wal_mode_and_a_second_connection_sees_writes(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with ResultCache(path) as writer, ResultCache(path) as reader:
        writer.put("fp", "q", 10, HITS)
        assert reader.get("fp", "q", 10) == HITS
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        connection.close()


def test_threads_share_one_cache(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    with ResultCache(tmp_path / "cache.sqlite") as cache:

        def work(worker: int) -> None:
            try:
                for i in range(40):
                    hits = [Hit(f"w{worker}-d{i}", float(i))]
                    cache.put(f"fp{worker}", f"q{i}", 10, hits)
                    assert cache.get(f"fp{worker}", f"q{i}", 10) == hits
            except BaseException as exc:  # collected: an assertion in a thread is otherwise lost
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(cache) == 8 * 40


def test_corrupt_file_says_to_delete_it(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a database\n" * 200)
    with pytest.raises(CacheError) as caught:
        ResultCache(path)
    message = str(caught.value)
    assert str(path) in message
    assert "corrupt" in message
    assert "delete it" in message
    assert "--no-cache" in message
    assert caught.value.exit_code == 2


def test_unreadable_entry_says_to_delete_it(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with ResultCache(path) as cache:
        cache.put("fp", "q", 10, HITS)
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("UPDATE answers SET hits = 'not json'")
    connection.close()
    with ResultCache(path) as cache, pytest.raises(CacheError, match="delete it"):
        cache.get("fp", "q", 10)


def test_cache_from_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    with pytest.raises(CacheError, match="another version of retrieval-gate"):
        ResultCache(path)


def test_close_twice_is_harmless(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache.sqlite")
    cache.close()
    cache.close()
