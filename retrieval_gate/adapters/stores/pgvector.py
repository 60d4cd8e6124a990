"""The `pgvector` retriever: nearest rows of a PostgreSQL table with a pgvector column."""

from __future__ import annotations

import os
import queue
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from retrieval_gate.adapters.interface import Adapter
from retrieval_gate.adapters.settings import AdapterSettings, redact
from retrieval_gate.adapters.stores.embeddings import Embedder, EmbeddingConfig, embedder
from retrieval_gate.core import redaction
from retrieval_gate.core.model import Document, Hit, Query
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError, RetrieverError

OPERATORS = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}
"""pgvector's distance operators; each ranks nearest first, so an index can serve it."""
SETTING = re.compile(r"(hnsw|ivfflat)\.[a-z_]+")
PLACEHOLDER = re.compile(r"%\((\w+)\)s")
RESERVED = ("query_vector", "k")
WHERE = "retriever (pgvector)"


class PgvectorConfig(AdapterSettings):
    """Nearest rows of a PostgreSQL table by a pgvector column."""

    type: Literal["pgvector"] = Field(
        default="pgvector", description="A PostgreSQL table with a pgvector column."
    )
    dsn: str | None = Field(
        default=None,
        description="Connection string: postgresql://user:password@host:5432/db or "
        "'host=... dbname=...'. Its password is redacted from every message.",
    )
    dsn_env: str | None = Field(
        default=None, description="Environment variable holding the connection string."
    )
    table: str = Field(description="The table (or view), optionally schema.table.")
    id_column: str = Field(default="id", description="Column holding the doc id qrels use.")
    vector_column: str = Field(default="embedding", description="The vector(N) column.")
    text_column: str | None = Field(
        default=None, description="Column holding the document's text, kept for an LLM judge."
    )
    distance: Literal["cosine", "l2", "inner_product"] = Field(
        default="cosine",
        description="cosine (<=>), l2 (<->) or inner_product (<#>): the operator your index "
        "was built for (vector_cosine_ops, vector_l2_ops, vector_ip_ops), or it goes unused.",
    )
    embedding: EmbeddingConfig = Field(
        description="How query text becomes a vector: {python: 'module:callable'}, {openai: "
        "{url, model, api_key_env}} or {wordllama: {dim: 256}}; the same model as the table's."
    )
    filter: str | None = Field(
        default=None,
        description='An SQL condition for WHERE, e.g. "lang = %(lang)s AND NOT archived": '
        "values go in as %(name)s placeholders bound from filter_params, never pasted in "
        "(write a literal % as %%). Runs in a read-only transaction.",
    )
    filter_params: dict[str, Any] = Field(
        default_factory=dict,
        description="Values bound to the filter's placeholders; a string that is exactly "
        "'{metadata.NAME}' takes that field of each query.",
    )
    k: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="Rows asked per query; null: the gate's k. More widens an approximate "
        "search (and helps when several rows share a doc id); the gate keeps its top k.",
    )
    exact: bool = Field(
        default=False,
        description="Scan every row (index scans off for the query) instead of the ANN "
        "index: exact nearest neighbours, the reference of the ANN check.",
    )
    search_settings: dict[str, int | float | str] = Field(
        default_factory=dict,
        description="Index settings for each query, e.g. {hnsw.ef_search: 100} or "
        "{ivfflat.probes: 10}: set as your service sets them (SET LOCAL).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> PgvectorConfig:
        if (self.dsn is None) == (self.dsn_env is None):
            raise ValueError("give exactly one of dsn or dsn_env")
        named = set(PLACEHOLDER.findall(self.filter or ""))
        if named - set(self.filter_params):
            raise ValueError(
                f"filter uses %({sorted(named - set(self.filter_params))[0]})s, which "
                "filter_params does not give"
            )
        if set(self.filter_params) & set(RESERVED):
            raise ValueError(f"filter_params may not be named {' or '.join(RESERVED)}")
        bad = [name for name in self.search_settings if not SETTING.fullmatch(name)]
        if bad:
            raise ValueError(
                f"search_settings: {bad[0]!r} is not an index setting (hnsw.* or ivfflat.*)"
            )
        return self


class PgvectorRetriever(Adapter[PgvectorConfig]):
    """One connection per concurrent caller, each query in a read-only transaction that
    rolls back. Table and column names are quoted identifiers; the query vector, k, the
    filter's values and search settings are bound parameters: query text never reaches SQL.
    Checked when built: the connection, the extension, the table, its columns and the
    vector column's dimension against the embedding's (GateError naming the block).
    Never cached: the table's rows can change without the description changing."""

    config_class = PgvectorConfig

    def __init__(
        self,
        config: PgvectorConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        self.dsn = _dsn(config)
        self.shown = shown_dsn(self.dsn)
        try:
            import psycopg
            from pgvector.psycopg import register_vector
        except ImportError:
            raise GateError(
                f"{WHERE}: psycopg and pgvector are not installed: pip install "
                "'retrieval-gate[pgvector]'"
            ) from None
        self._psycopg = psycopg
        self._register = register_vector
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue()
        self._opened: list[Any] = []
        self._lock = threading.Lock()
        self.embed: Embedder = embedder(config.embedding, base_dir or Path.cwd())
        try:
            self.sql = self._query()
            self.settings, self.settings_sql = self._settings()
            self._check()
        except BaseException:
            self.close()
            raise

    def describe(self) -> Mapping[str, Any]:
        config = self.config
        return {
            "type": "pgvector",
            "dsn": self.shown,
            "table": config.table,
            "id_column": config.id_column,
            "vector_column": config.vector_column,
            "text_column": config.text_column,
            "distance": config.distance,
            "filter": config.filter,
            "filter_params": redact(config.filter_params),
            "k": config.k,
            "exact": config.exact,
            "search_settings": dict(sorted(config.search_settings.items())),
            "embedding": self.embed.describe(),
        }

    def search(self, query: Query, k: int) -> list[Hit]:
        vector = self.embed([query.text])[0]
        params = {**self._filter_values(query), "query_vector": vector, "k": self.config.k or k}
        rows = self._run(params)
        hits: dict[str, Hit] = {}
        for row in rows:
            doc = str(row[0])
            text = row[2] if len(row) > 2 and isinstance(row[2], str) else None
            # The negated distance: higher is better (for inner_product, the product itself).
            hits.setdefault(doc, Hit(doc, -float(row[1]), text))
        ranked = sorted(hits.values(), key=lambda hit: hit.doc_id, reverse=True)
        ranked.sort(key=lambda hit: -(hit.score or 0.0))  # ties: doc id descending
        return ranked[:k]

    def close(self) -> None:
        """Close every connection (idempotent), and the embedding's client."""
        with self._lock:
            opened, self._opened = self._opened, []
        for connection in opened:
            connection.close()
        self.embed.close()

    def _query(self) -> Any:
        from psycopg import sql

        config = self.config
        vector = sql.Identifier(config.vector_column)
        distance = sql.SQL("{} {} %(query_vector)s").format(
            vector, sql.SQL(OPERATORS[config.distance])
        )
        columns = [sql.Identifier(config.id_column), distance]
        if config.text_column is not None:
            columns.append(sql.Identifier(config.text_column))
        # A row without a vector has no distance: never a hit.
        where = sql.SQL(" WHERE {} IS NOT NULL").format(vector)
        if config.filter is not None:
            # The config's own SQL, its values bound: parenthesised, so it and only it
            # restricts the rows; one statement only (bound parameters forbid a second).
            where = sql.SQL("{} AND ({})").format(where, sql.SQL(config.filter))
        return sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT %(k)s").format(
            sql.SQL(", ").join(columns), _table(config.table), where, distance
        )

    def _settings(self) -> tuple[list[str], str]:
        """The transaction's settings as bound values, and the one statement that sets them:
        the index's knobs, index scans off when exact, and a statement timeout (a query
        cancelled by it is retried like any timeout)."""
        config = self.config
        settings = {name: str(value) for name, value in config.search_settings.items()}
        if config.exact:
            settings.update(enable_indexscan="off", enable_bitmapscan="off")
        settings["statement_timeout"] = f"{round(config.timeout * 1000)}ms"
        values = [part for pair in settings.items() for part in pair]
        calls = ", ".join(["set_config(%s, %s, true)"] * len(settings))
        return values, f"SELECT {calls}"

    def _filter_values(self, query: Query) -> dict[str, Any]:
        values = {}
        for name, value in self.config.filter_params.items():
            field = (
                re.fullmatch(r"\{metadata\.([^{}]+)\}", value) if isinstance(value, str) else None
            )
            if field is not None and field[1] not in query.metadata:
                raise RetrieverError(
                    f"{WHERE}: query {query.id!r} has no metadata field {field[1]!r}, which "
                    f"filter_params.{name} uses",
                    mapping=True,
                )
            values[name] = query.metadata[field[1]] if field is not None else value
        return values

    def _run(self, params: Mapping[str, Any]) -> list[Any]:
        psycopg = self._psycopg
        connection = self._connection(building=False)
        try:
            with connection.cursor() as cursor:
                cursor.execute(self.settings_sql, self.settings)
                cursor.execute(self.sql, params)
                rows: list[Any] = cursor.fetchall()
            connection.rollback()  # read-only: nothing to keep, settings end here
        except psycopg.OperationalError as error:
            self._discard(connection)
            raise RetrieverError(self._said(error), retryable=True) from None
        except psycopg.Error as error:
            self._discard(connection)
            # A wrong filter, a dropped table, a vector of another width: the config, not
            # one query, so no error budget absorbs it.
            raise RetrieverError(self._said(error), mapping=True) from None
        self._idle.put(connection)
        return rows

    def _connection(self, *, building: bool) -> Any:
        """An idle connection, or a new one; a failure to connect is a GateError when the
        retriever is built, later a retryable RetrieverError (the server may come back)."""
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        psycopg = self._psycopg
        try:
            connection = psycopg.connect(self.dsn, connect_timeout=max(2, int(self.config.timeout)))
        except psycopg.Error as error:
            message = (
                f"{WHERE}: cannot connect to {self.shown}: {self._said(error, prefix=False)}; "
                "check dsn (host, port, database, user) and that the server is running"
            )
            if building:
                raise GateError(message) from None
            raise RetrieverError(message, retryable=True) from None
        with self._lock:
            self._opened.append(connection)
        connection.read_only = True
        try:
            self._register(connection)
        except psycopg.ProgrammingError:
            self._discard(connection)
            raise GateError(
                f"{WHERE}: the database at {self.shown} has no vector extension; run "
                "CREATE EXTENSION vector there (pgvector)"
            ) from None
        return connection

    def _check(self) -> None:
        """The table, its columns and the vector column's width, asked of the catalog."""
        config = self.config
        connection = self._connection(building=True)
        with connection.cursor() as cursor:
            name = _table(config.table).as_string(connection)
            cursor.execute("SELECT to_regclass(%s)::oid", (name,))
            found = cursor.fetchone()
            if found is None or found[0] is None:
                raise GateError(
                    f"{WHERE}: table {config.table!r} does not exist in {self.shown}; create "
                    "it, or set retriever.table to the table holding your vectors"
                )
            cursor.execute(
                "SELECT attname, format_type(atttypid, atttypmod), atttypmod FROM pg_attribute "
                "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                (found[0],),
            )
            columns = {row[0]: (row[1], row[2]) for row in cursor.fetchall()}
        connection.rollback()
        self._idle.put(connection)
        for field in ("id_column", "vector_column", "text_column"):
            column = getattr(config, field)
            if column is not None and column not in columns:
                raise GateError(
                    f"{WHERE}: table {config.table!r} has no column {column!r} "
                    f"(retriever.{field}); it has {', '.join(sorted(columns))}"
                )
        kind, width = columns[config.vector_column]
        if not kind.startswith("vector"):
            raise GateError(
                f"{WHERE}: column {config.vector_column!r} of {config.table!r} is {kind}, "
                "not a pgvector vector; set retriever.vector_column to the vector column"
            )
        embedded = self.embed.dimension()
        if width > 0 and width != embedded:
            raise GateError(
                f"{WHERE}: column {config.vector_column!r} of {config.table!r} holds vectors "
                f"of dimension {width}, the embedding gives {embedded}; use the embedding "
                "the table was built with (or its dimension)"
            )

    def _discard(self, connection: Any) -> None:
        with self._lock:
            if connection in self._opened:
                self._opened.remove(connection)
        connection.close()

    def _said(self, error: Exception, *, prefix: bool = True) -> str:
        """The database's message on one line, the password redacted."""
        text = excerpt(redaction.redacted(str(error).strip() or type(error).__name__), 300)
        return f"{WHERE}: {type(error).__name__}: {text}" if prefix else text


def _dsn(config: PgvectorConfig) -> str:
    """The connection string, its password registered for redaction everywhere."""
    if config.dsn_env is not None:
        value = os.environ.get(config.dsn_env)
        if not value:
            raise GateError(
                f"{WHERE}: dsn_env names {config.dsn_env}, which is not set; export the "
                "connection string in it (postgresql://user:password@host:5432/db)"
            )
    else:
        value = config.dsn or ""
    for secret in _passwords(value):
        redaction.register(secret)
    return value


def _passwords(dsn: str) -> list[str]:
    """Every password a connection string may hold: URL user info, password=... pairs."""
    found = re.findall(r"://[^:/@?#]*:([^@/?#]*)@", dsn)
    found += re.findall(r"password\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s&']+))", dsn)
    flat = [part for item in found for part in (item if isinstance(item, tuple) else (item,))]
    return [secret for secret in flat if secret]


def shown_dsn(dsn: str) -> str:
    """`dsn` with its passwords replaced by <redacted>: what messages and descriptions show."""
    shown = dsn
    for secret in sorted(_passwords(dsn), key=len, reverse=True):
        shown = shown.replace(secret, redaction.REDACTED)
    return redaction.redacted(shown)


def _table(name: str) -> Any:
    """`schema.table` (or `table`) as a quoted identifier."""
    from psycopg import sql

    return sql.Identifier(*name.split(".", 1))
