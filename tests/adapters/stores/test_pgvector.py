"""The pgvector retriever against a real PostgreSQL server with the vector extension."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from retrieval_gate.adapters.stores.pgvector import PgvectorConfig, PgvectorRetriever, shown_dsn
from retrieval_gate.core.model import Query
from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import GateError, RetrieverError
from tests.helpers.cli import run_cli
from tests.helpers.local_server import free_port
from tests.helpers.paths import REPO
from tests.helpers.seeded_vectors import DIMENSION, vector_of
from tests.helpers.waiting import GUARD

psycopg = pytest.importorskip("psycopg")
ROWS = 2000
LISTS = 100
HOSTILE_IDS = ["x'; DROP TABLE docs; --", "\n::error::boom", 'q"uote\\back\u202eslash', "ünï"]
PASSWORD = "S3cret-Pg-passw0rd"
EMBED = {"python": "tests.helpers.seeded_vectors:embed"}
QUERIES = [Query(f"q{i}", f"question {i}", {"lang": "de" if i % 2 else "en"}) for i in range(40)]


@pytest.fixture(scope="module")
def database(postgres: str) -> dict[str, Any]:
    """docs (IVFFlat, 100 lists) and docs_hnsw (a sparse HNSW graph) with the same rows:
    seeded unit vectors, lang 'en' for even rows and 'de' for odd ones, and hostile ids."""
    ids = [f"doc-{i}" for i in range(ROWS)] + HOSTILE_IDS
    langs = ["en" if i % 2 == 0 else "de" for i in range(ROWS)] + ["xx"] * len(HOSTILE_IDS)
    vectors = np.stack([vector_of(doc) for doc in ids])
    with psycopg.connect(postgres, autocommit=True) as connection:
        for table in ("docs", "docs_hnsw"):
            connection.execute(
                f"CREATE TABLE {table} (id text PRIMARY KEY, body text, lang text, "
                f"embedding vector({DIMENSION}))"
            )
            with connection.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                for doc, lang, vector in zip(ids, langs, vectors, strict=True):
                    text = "[" + ",".join(str(float(x)) for x in vector) + "]"
                    copy.write_row((doc, f"body of {doc}", lang, text))
        connection.execute(
            f"CREATE INDEX ON docs USING ivfflat (embedding vector_cosine_ops) "
            f"WITH (lists = {LISTS})"
        )
        connection.execute(
            "CREATE INDEX ON docs_hnsw USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 4, ef_construction = 8)"
        )
        connection.execute("ANALYZE")
    return {"dsn": postgres, "ids": ids, "langs": langs, "vectors": vectors}


def build(database: dict[str, Any], **settings: Any) -> PgvectorRetriever:
    config = {"dsn": database["dsn"], "table": "docs", "embedding": EMBED, **settings}
    return PgvectorRetriever(PgvectorConfig(**config), base_dir=REPO)


def truth(database: dict[str, Any], query: Query, k: int, lang: str | None = None) -> list[str]:
    """The exact top k by cosine distance, computed here."""
    distances = 1 - database["vectors"] @ vector_of(query.text)
    order = np.argsort(distances, kind="stable")
    ids, langs = database["ids"], database["langs"]
    return [ids[i] for i in order if lang is None or langs[i] == lang][:k]


def ranked(retriever: PgvectorRetriever, queries: list[Query], k: int = 10) -> list[list[str]]:
    return [[hit.doc_id for hit in retriever.search(query, k)] for query in queries]


def recall(found: list[list[str]], expected: list[list[str]]) -> float:
    return float(
        np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, expected, strict=True)])
    )


def test_exact_search_finds_the_true_neighbours_despite_a_lossy_index(database: Any) -> None:
    with build(database, exact=True, search_settings={"ivfflat.probes": 1}) as retriever:
        found = ranked(retriever, QUERIES)
        hits = retriever.search(QUERIES[0], 3)
    assert found == [truth(database, query, 10) for query in QUERIES]
    # Scores are the negated cosine distances, best first.
    expected = 1 - database["vectors"] @ vector_of(QUERIES[0].text)
    position = {doc: i for i, doc in enumerate(database["ids"])}
    assert [hit.score for hit in hits] == pytest.approx(
        [-expected[position[hit.doc_id]] for hit in hits], abs=1e-5
    )


@pytest.mark.parametrize(
    ("table", "lossy", "faithful", "at_least"),
    [
        # Every list probed is an exhaustive search: the same hits as exact.
        ("docs", {"ivfflat.probes": 1}, {"ivfflat.probes": LISTS}, 1.0),
        # A sparse graph (m 4) searched wide: 0.9975 to 1.0 in five runs (HNSW builds at random).
        ("docs_hnsw", {"hnsw.ef_search": 10}, {"hnsw.ef_search": 1000}, 0.98),
    ],
)
def test_an_index_built_to_lose_recall_differs_from_exact(
    database: Any, table: str, lossy: dict[str, int], faithful: dict[str, int], at_least: float
) -> None:
    """Recall@10 against the exact top 10 over 40 queries: IVFFlat with 1 of 100 lists
    probed measured 0.195 to 0.248, HNSW with ef_search 10 0.455 to 0.493 (five runs)."""
    expected = [truth(database, query, 10) for query in QUERIES]
    with build(database, table=table, search_settings=lossy) as retriever:
        approximate = ranked(retriever, QUERIES)
    with build(database, table=table, search_settings=lossy, exact=True) as retriever:
        assert ranked(retriever, QUERIES) == expected
    with build(database, table=table, search_settings=faithful) as retriever:
        assert recall(ranked(retriever, QUERIES), expected) >= at_least
    assert recall(approximate, expected) < 0.9


def test_the_filter_binds_its_values(database: Any) -> None:
    settings = {
        "exact": True,
        "filter": "lang = %(lang)s AND body LIKE 'body of %%'",
        "filter_params": {"lang": "{metadata.lang}"},
    }
    with build(database, **settings) as retriever:
        found = ranked(retriever, QUERIES[:6])
        # A value that would widen the filter if pasted into the SQL matches nothing.
        widened = retriever.search(Query("w", "question 1", {"lang": "de' OR '1'='1"}), 10)
        with pytest.raises(RetrieverError, match="no metadata field 'lang'") as raised:
            retriever.search(Query("bare", "question 1"), 10)
    assert raised.value.mapping
    assert found == [truth(database, query, 10, query.metadata["lang"]) for query in QUERIES[:6]]
    assert widened == []


def test_hostile_ids_and_query_text_are_data(database: Any) -> None:
    with build(database, exact=True, text_column="body") as retriever:
        for hostile in HOSTILE_IDS:  # the id's own vector: its row comes first
            top = retriever.search(Query("h", hostile), 1)
            assert (top[0].doc_id, top[0].text) == (hostile, f"body of {hostile}")
        injection = "'; DROP TABLE docs; -- \x00 %(k)s {k}"
        assert len(retriever.search(Query("i", injection), 5)) == 5
    with psycopg.connect(database["dsn"]) as connection:
        count = connection.execute("SELECT count(*) FROM docs").fetchone()
    assert count == (ROWS + len(HOSTILE_IDS),)


def test_rows_without_a_vector_are_never_hits(database: Any) -> None:
    with psycopg.connect(database["dsn"], autocommit=True) as connection:
        connection.execute(f"CREATE TABLE sparse (id text, embedding vector({DIMENSION}))")
        connection.execute(
            "INSERT INTO sparse VALUES ('none', NULL), ('one', %s::vector)",
            ("[" + ",".join(str(float(x)) for x in vector_of("one")) + "]",),
        )
    with build(database, table="sparse") as retriever:
        assert [hit.doc_id for hit in retriever.search(QUERIES[0], 10)] == ["one"]


def test_queries_run_read_only(database: Any) -> None:
    sneaky = "lang = %(lang)s OR (SELECT count(*) FROM (DELETE FROM docs RETURNING 1) d) > 0"
    retriever = build(database, filter=sneaky, filter_params={"lang": "en"})
    with retriever, pytest.raises(RetrieverError) as raised:
        retriever.search(QUERIES[0], 10)
    assert raised.value.mapping
    with psycopg.connect(database["dsn"]) as connection:
        count = connection.execute("SELECT count(*) FROM docs").fetchone()
    assert count == (ROWS + len(HOSTILE_IDS),)


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"table": "nope"}, "table 'nope' does not exist"),
        ({"table": "public.nope"}, "table 'public.nope' does not exist"),
        ({"id_column": "doc_id"}, "has no column 'doc_id' (retriever.id_column)"),
        ({"vector_column": "body"}, "column 'body' of 'docs' is text, not a pgvector vector"),
        (
            {"embedding": {"python": "tests.helpers.seeded_vectors:embed_wide"}},
            f"holds vectors of dimension {DIMENSION}, the embedding gives {DIMENSION + 1}",
        ),
    ],
)
def test_a_wrong_table_is_a_clear_error_at_build(
    database: Any, settings: dict[str, Any], says: str
) -> None:
    with pytest.raises(GateError) as raised:
        build(database, **settings)
    assert "retriever (pgvector)" in str(raised.value)
    assert says in str(raised.value)


def test_a_database_without_the_extension(database: Any) -> None:
    with psycopg.connect(database["dsn"], autocommit=True) as connection:
        connection.execute("DROP DATABASE IF EXISTS bare")
        connection.execute("CREATE DATABASE bare")
    dsn = database["dsn"].replace("/postgres?", "/bare?")
    with pytest.raises(GateError, match="has no vector extension; run CREATE EXTENSION vector"):
        build({**database, "dsn": dsn})


def test_a_filter_the_database_rejects_fails_every_query(database: Any) -> None:
    retriever = build(database, filter="lang = = 'en'")
    with retriever, pytest.raises(RetrieverError, match="SyntaxError") as raised:
        retriever.search(QUERIES[0], 10)
    assert raised.value.mapping
    assert not raised.value.retryable


def test_a_slow_query_is_cancelled_at_the_timeout_and_retried(database: Any) -> None:
    slow = {"filter": "pg_sleep(%(wait)s) IS NOT NULL", "filter_params": {"wait": 0.01}}
    retriever = build(database, exact=True, timeout=0.3, **slow)
    with retriever, pytest.raises(RetrieverError, match="statement timeout") as raised:
        retriever.search(QUERIES[0], 10)
    assert raised.value.retryable


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://gate:{PASSWORD}@127.0.0.1:{free_port()}/search",
        f"host=127.0.0.1 port={free_port()} user=gate password={PASSWORD} dbname=search",
        f"host=127.0.0.1 password='{PASSWORD}' dbname",  # malformed: psycopg quotes it back
    ],
    ids=["url", "key-value", "malformed"],  # not the free port: the same on every worker
)
def test_no_connection_names_the_server_never_the_password(dsn: str) -> None:
    config = PgvectorConfig(dsn=dsn, table="docs", embedding=EMBED)
    with pytest.raises(GateError) as raised:
        PgvectorRetriever(config, base_dir=REPO)
    message = one_line(str(raised.value))
    assert "retriever (pgvector): cannot connect to" in message
    assert "<redacted>" in message
    assert PASSWORD not in str(raised.value)


def test_the_description_and_dsn_env_hide_the_password(
    database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = database["dsn"].replace("postgres:@", f"postgres:{PASSWORD}@")  # trust auth
    monkeypatch.setenv("PG_DSN_TEST", dsn)
    with build(database, dsn=None, dsn_env="PG_DSN_TEST", k=20) as retriever:
        text = json.dumps(retriever.describe())
        assert len(retriever.search(QUERIES[0], 10)) == 10
    assert PASSWORD not in text
    assert shown_dsn(dsn) in text
    monkeypatch.delenv("PG_DSN_TEST")
    with pytest.raises(GateError, match="dsn_env names PG_DSN_TEST, which is not set"):
        build(database, dsn=None, dsn_env="PG_DSN_TEST")


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({}, "exactly one of dsn or dsn_env"),
        ({"dsn": "x", "dsn_env": "Y"}, "exactly one of dsn or dsn_env"),
        ({"dsn": "x", "filter": "a = %(b)s"}, "filter uses %(b)s"),
        ({"dsn": "x", "filter_params": {"k": 1}}, "may not be named"),
        ({"dsn": "x", "search_settings": {"work_mem": "1GB"}}, "not an index setting"),
        ({"dsn": "x", "distance": "dot"}, "cosine"),
    ],
)
def test_config_errors(settings: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(says)):
        PgvectorConfig(table="docs", embedding=EMBED, **settings)


def test_the_template_runs_and_a_wrong_port_exits_2(
    database: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """configs/adapters/pgvector.yaml on the tiny sample, its corpus embedded by wordllama
    into the table the template names."""
    pytest.importorskip("wordllama")
    from retrieval_gate.adapters.stores.embeddings import load_wordllama

    corpus = REPO / "configs" / "tiny" / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
    texts = [f"{row['title']} {row['text']}" for row in rows]
    vectors = load_wordllama(256).embed(texts, norm=True)
    with psycopg.connect(database["dsn"], autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE help_centre (id text PRIMARY KEY, body text, lang text, "
            "embedding vector(256))"
        )
        for row, text, vector in zip(rows, texts, vectors, strict=True):
            connection.execute(
                "INSERT INTO help_centre VALUES (%s, %s, 'en', %s::vector)",
                (row["_id"], text, "[" + ",".join(str(float(x)) for x in vector) + "]"),
            )
        connection.execute("CREATE INDEX ON help_centre USING hnsw (embedding vector_cosine_ops)")
    monkeypatch.chdir(tmp_path)  # the run's .retrieval-gate folder goes here
    template = REPO / "configs" / "adapters" / "pgvector.yaml"
    monkeypatch.setenv("PG_DSN", database["dsn"].replace("postgres:@", f"postgres:{PASSWORD}@"))
    code, out, err = run_cli("run", "-c", template)
    assert code == 0, err
    assert "ndcg@10" in out
    monkeypatch.setenv("PG_DSN", f"postgresql://gate:{PASSWORD}@127.0.0.1:{free_port()}/x")
    code, out, err = run_cli("run", "-c", template)
    assert code == 2
    assert "cannot connect to postgresql://gate:<redacted>@127.0.0.1" in err
    assert PASSWORD not in out + err


def test_psycopg_is_imported_only_when_built() -> None:
    code = (
        "import sys, retrieval_gate.adapters; "
        "print([m for m in ('psycopg', 'pgvector') if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=GUARD
    )
    assert done.stdout.strip() == "[]"
