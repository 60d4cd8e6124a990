"""The `http` retriever: a JSON search endpoint called with templated requests."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import Field, model_validator

import retrieval_gate.adapters.engine_answers as engine
from retrieval_gate.adapters.hits import doc_id, hit_text, score
from retrieval_gate.adapters.http_client import (
    AiohttpClient,
    ClientName,
    Reply,
    Request,
    UnansweredError,
    json_body,
    open_client,
)
from retrieval_gate.adapters.http_fields import RequestFields, templated
from retrieval_gate.adapters.http_version import read_version
from retrieval_gate.adapters.interface import Adapter, LoopSearch
from retrieval_gate.adapters.measures import with_reported
from retrieval_gate.adapters.paths import PathError, Step, parse_path, select
from retrieval_gate.adapters.serve import ServeConfig, Service
from retrieval_gate.adapters.settings import AdapterSettings, is_secret, redact
from retrieval_gate.core import redaction
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.model import MAX_CANDIDATES, Document, Hit, Query, StagedHits
from retrieval_gate.core.strict import StrictModel
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError, RetrieverError

SINGLE_BODY = {"query": "{query}", "k": "{k}"}
BATCH_BODY = {"queries": "{queries}", "k": "{k}"}
MAX_RETRY_AFTER = 30.0
"""The longest wait, in seconds, a `Retry-After` header gets, whatever `retriever.timeout`
is: the runner holds new calls back until then (`resume_at`), outside their timeout."""


class VersionSource(StrictModel):
    """Where the service's version is read when the gate starts: a command's output or a URL's
    body (an index build id, a deployed model's name)."""

    command: list[str] | None = Field(
        default=None, description="argv of a command (no shell) that prints the version."
    )
    url: str | None = Field(default=None, description="A URL whose body (GET) is the version.")

    @model_validator(mode="after")
    def _one_source(self) -> VersionSource:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command or url")
        if self.command is not None and not self.command:
            raise ValueError("command needs at least the program")
        return self


class HttpConfig(AdapterSettings):
    """Calls a JSON search endpoint."""

    type: Literal["http"] = Field(default="http", description="A JSON search endpoint over HTTP.")
    url: str = Field(description="Endpoint URL; may hold {query}, {k}, {id}, {metadata.NAME}.")
    method: Literal["GET", "POST"] = Field(default="POST", description="HTTP method.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Request headers (templated). Their values never enter descriptions.",
    )
    params: dict[str, str] = Field(
        default_factory=dict, description="Query-string parameters (templated)."
    )
    body: Any = Field(
        default=None,
        description=(
            "JSON body (templated). A string that is exactly '{k}' (or '{metadata.NAME}', "
            "'{queries}') becomes that value, so top_k: '{k}' sends a number. Default for "
            "POST: {query: '{query}', k: '{k}'}; with batch_size > 1: {queries: '{queries}', "
            "k: '{k}'}, where queries is a list of {id, text} objects."
        ),
    )
    results: str = Field(
        default="hits[*]",
        description=(
            "Path to the hits in the response: dotted keys, [N] and [*], e.g. hits[*], "
            "data.results[*]. With batch_size > 1 it selects one list of hits per query."
        ),
    )
    candidates: str | None = Field(
        default=None,
        description=(
            "Path to the first stage's candidates in the response, beside the final hits "
            "at `results`, e.g. candidates[*]; read like the hits (id, score, text), at most "
            "1,000 kept; for `candidates:` checks. null: the service gives none. Not with "
            "batch_size > 1."
        ),
    )
    results_optional: bool = Field(default=False, description=engine.RESULTS_OPTIONAL)
    errors: str | None = Field(default=None, description=engine.ERRORS)
    id: str = Field(
        default="id", description="Path to the doc id within a hit, e.g. _source.doc_id."
    )
    id_pattern: str | None = Field(default=None, description=engine.ID_PATTERN)
    score: str | None = Field(
        default="score",
        description="Path to the score within a hit, when it has one; null for none.",
    )
    text: str | None = Field(
        default=None,
        description="Path to the document's text within a hit, e.g. _source.body: what "
        "`retrieval-gate judge` grades when dataset.corpus lacks the document; null for none.",
    )
    latency: str | None = Field(
        default=None,
        description="Path to the service's own time for the request in milliseconds, e.g. "
        "took; with batch_size > 1 one value per query, or one for the batch (split evenly). "
        "Recorded beside the client's wall time (gate.latency.source picks the one gated).",
    )
    cost: str | None = Field(
        default=None,
        description="Path to the request's cost in any unit (tokens, dollars), e.g. "
        "usage.total_tokens; in a batch one value per query, or one split evenly. What "
        "cost_mean gates.",
    )
    version: str | VersionSource | None = Field(
        default=None,
        description=(
            "What the service behind the URL is: an index build id, a model version, or "
            "{command: [...]} / {url: ...} that answers it when the gate starts. Part of the "
            "cache key; without it `check` cannot prove cached answers current and calls the "
            "service for every query."
        ),
    )
    serve: ServeConfig | None = Field(
        default=None,
        description=(
            "Start the service from the config's folder for the run (in a `check --against` "
            "each side's own checkout): {command: [...], ready: URL, timeout, env}. The gate "
            "runs the command, waits until `ready` answers 2xx, runs the queries and stops it."
        ),
    )


class HttpRetriever(Adapter[HttpConfig]):
    """One pooled, thread-safe HTTP client for every call (adapters/http_client.py).
    Timeouts, connection errors, HTTP 429 and 5xx are retryable errors; other 4xx, bodies
    that are not JSON and missing fields are not. A hit that is a bare string or number is
    its own id.

    A 429 or 503 with `Retry-After` (seconds or an HTTP date) makes every later request of
    this retriever, the runner's retry and other queries' calls alike, wait until that time
    first; the wait is bounded by `MAX_RETRY_AFTER` (30 s), not by `retriever.timeout`,
    which bounds one request: the runner starts no call before `resume_at()`. A longer or
    unreadable `Retry-After` is cut to that bound or ignored, and the runner's own backoff
    still applies.

    Batches (`batch_size > 1`): one POST per batch whose body holds `{queries}` (a list of
    `{"id", "text"}` objects); `results` then selects one list of hits per query, in order,
    e.g. `results[*]` for `{"results": [[hits of q1], [hits of q2]]}`.

    With `serve`, the service is started from the config's folder when the retriever is
    built (before `version` is read, which may ask it) and stopped by `close()`; a build
    that fails after the start stops it too (see adapters/serve.py)."""

    config_class = HttpConfig
    cacheable = True

    def __init__(
        self,
        config: HttpConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
        client: ClientName | None = None,
    ) -> None:
        """`client`: the HTTP client, by default aiohttp when installed, else httpx."""
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        if not config.url.startswith(("http://", "https://")):
            raise GateError(f"retriever.url must start with http:// or https://: {config.url!r}")
        self.batched = config.batch_size > 1
        self.body = config.body
        if self.body is None and config.method == "POST":
            self.body = BATCH_BODY if self.batched else SINGLE_BODY
        if self.batched and "{queries}" not in json.dumps(self.body, default=str):
            raise GateError("retriever.batch_size > 1 needs a retriever.body that uses {queries}")
        self.results = parse_path(config.results, "results")
        self.candidates = None
        if config.candidates is not None:
            if self.batched:
                raise GateError(
                    "retriever.candidates is read from one query's response: set batch_size 1"
                )
            self.candidates = parse_path(config.candidates, "candidates")
        self.id_path = parse_path(config.id, "id")
        self.id_pattern = engine.id_pattern(config.id_pattern)
        self.errors = None if config.errors is None else parse_path(config.errors, "errors")
        self.score_path = None if config.score is None else parse_path(config.score, "score")
        self.text_path = None if config.text is None else parse_path(config.text, "text")
        self.measures = {
            name: (path, parse_path(path, name))
            for name, path in (("latency", config.latency), ("cost", config.cost))
            if path is not None
        }
        self.name = f"{config.method} {public_url(config.url)}"
        import httpx

        # Header values and URL user info are credentials wherever they came from: never
        # echoed (the config's ${VARS} are registered when it is loaded).
        for value in config.headers.values():
            if "{" not in value:
                redaction.register(value)
        password = httpx.URL(config.url).password if "{" not in config.url else None
        if password:
            redaction.register(password)
        # What no query changes is built once, not per request.
        self._url: str | None = None
        if not templated(config.url, *config.params.values()):
            with contextlib.suppress(ValueError):  # an invalid URL fails each request, as before
                self._url = self._fill_url(None)
        self._headers = None if templated(*config.headers.values()) else self._fill_headers(None)
        self._service: Service | None = None
        if config.serve is not None:
            # Started before the version is read: retriever.version.url may ask the service.
            self._service = Service(
                config.serve, base_dir=base_dir, ready_shown=public_url(config.serve.ready)
            )
            self._service.start()
        try:
            self.version = read_version(config.version, config.timeout, base_dir)
            self._resume_at = 0.0  # time.monotonic() before which no request is sent
            self._resume_lock = threading.Lock()
            # A connection kept alive per concurrent caller: fewer make callers reconnect.
            self._client = open_client(client, max(config.concurrency, 1), config.timeout)
        except BaseException:
            self._stop_service()  # never an orphan: nobody can close a retriever not built
            raise

    def describe(self) -> Mapping[str, Any]:
        config = self.config
        return {
            "type": "http",
            "method": config.method,
            "url": public_url(config.url),
            "params": redact(config.params),
            "headers": sorted(config.headers),  # names only: values hold credentials
            "body": redact(self.body),
            "results": config.results,
            **({"candidates": config.candidates} if config.candidates is not None else {}),
            **({"results_optional": True} if config.results_optional else {}),
            **({"errors": config.errors} if config.errors is not None else {}),
            "id": config.id,
            **({"id_pattern": config.id_pattern} if config.id_pattern is not None else {}),
            "score": config.score,
            **({"text": config.text} if config.text is not None else {}),
            **({"latency": config.latency} if config.latency is not None else {}),
            **({"cost": config.cost} if config.cost is not None else {}),
            **({"version": self.version} if self.version is not None else {}),
            **({"serve": self._service.description()} if self._service is not None else {}),
        }

    def unproven_cache(self) -> str | None:
        if self.version is not None:
            return None
        return (
            "the http retriever declares no retriever.version, so answers cached earlier "
            "cannot be proven current (the service behind the URL may have changed)"
        )

    def batch_size(self) -> int:
        return self.config.batch_size

    def search(self, query: Query, k: int) -> list[Hit]:
        if self.batched:
            return self.search_batch([query], k)[0]
        return self._answer(self._request(RequestFields(query=query, k=k)), k)

    def start_search(self, query: Query, k: int) -> Future[list[Hit]] | None:
        """`search` started on the client's own event loop, holding no thread while it waits
        (the runner's way to many calls in flight for little CPU); None when the client has
        no loop (httpx) or queries go in batches."""
        submit = getattr(self._client, "submit", None)
        if submit is None or self.batched or type(self).search is not HttpRetriever.search:
            return None  # a subclass's own search must not be bypassed
        request = self._prepared(RequestFields(query=query, k=k))
        with self._resume_lock:
            delay = self._resume_at - time.monotonic()
        future: Future[list[Hit]] = submit(
            request, lambda reply: self._answer(self._read(reply), k), self._unanswered, delay
        )
        return future

    def loop_search(self) -> LoopSearch | None:
        """`search` as a coroutine function awaited on the client's own event loop, and that
        loop (the runner's way to send each next request from the loop as a response comes
        in). Its caller waits out a `Retry-After` first (`resume_at`) and bounds each call by
        the timeout: no read has a timeout of its own. None when the client has no loop
        (httpx), queries go in batches, or a subclass has its own search."""
        client = self._client
        if not isinstance(client, AiohttpClient) or self.batched:
            return None
        if type(self).search is not HttpRetriever.search:
            return None  # a subclass's own search must not be bypassed
        return client.loop, self._search_on_loop

    async def _search_on_loop(self, query: Query, k: int) -> list[Hit]:
        request = self._prepared(RequestFields(query=query, k=k))
        try:
            reply = await cast(AiohttpClient, self._client).sent(*request, bounded=True)
        except UnansweredError as error:
            raise self._unanswered(error) from None
        return self._answer(self._read(reply), k)

    def _answer(self, data: Any, k: int) -> list[Hit]:
        """One query's hits (with candidates and what the service reports) in a response."""
        hits = self._hits(self._select(data), k)
        if self.candidates is not None:
            found = self._select(data, self.candidates, self.config.candidates or "")
            hits = StagedHits(hits, self._hits(found, MAX_CANDIDATES))
        return with_reported([hits], data, self.measures, self.name)[0]

    def rerank(self, query: Query, candidates: Sequence[Mapping[str, Any]], k: int) -> list[Hit]:
        """The endpoint's top `k` of `candidates` (`{id, score, text}` objects, sent where the
        request template says `{candidates}`), for the stages retriever's rerank."""
        data = self._request(RequestFields(query=query, k=k, candidates=candidates))
        return self._hits(self._select(data), k)

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        if not self.batched:
            return super().search_batch(queries, k)
        data = self._request(RequestFields(queries=queries, k=k))
        lists = self._select(data)
        if len(lists) != len(queries):
            raise RetrieverError(
                f"{self.name}: path {self.config.results} selected {len(lists)} result lists "
                f"for {len(queries)} queries"
            )
        answers = [self._hits(_as_list(hits, self.config.results), k) for hits in lists]
        return with_reported(answers, data, self.measures, self.name)

    def close(self) -> None:
        """Close the connections, and stop the service `serve` started (idempotent)."""
        try:
            self._client.close()
        finally:
            self._stop_service()

    def _stop_service(self) -> None:
        if self._service is not None:
            self._service.stop()

    def _fill_url(self, fields: RequestFields | None) -> str:
        import httpx

        config = self.config
        url, params = config.url, dict(config.params)
        if fields is not None:
            url = fields.fill(url, quote_values=True)
            params = {name: fields.fill(value) for name, value in params.items()}
        try:
            # Merged, not replaced: httpx drops the URL's own query string when given params.
            return str(httpx.URL(url).copy_merge_params(params))
        except httpx.InvalidURL as error:
            raise ValueError(str(error)) from None

    def _fill_headers(self, fields: RequestFields | None) -> dict[str, str]:
        headers = dict(self.config.headers)
        if fields is not None:
            headers = {name: fields.fill(value) for name, value in headers.items()}
        # As httpx's json= sets it, unless the config names its own.
        if self.body is not None and not any(n.lower() == "content-type" for n in headers):
            headers["Content-Type"] = "application/json"
        return headers

    def _request(self, fields: RequestFields) -> Any:
        request = self._prepared(fields)
        self._hold_off()
        try:
            response = self._client.send(*request)
        except UnansweredError as error:
            raise self._unanswered(error) from None
        return self._read(response)

    def _prepared(self, fields: RequestFields) -> Request:
        try:
            url = self._url if self._url is not None else self._fill_url(fields)
        except ValueError as error:
            raise RetrieverError(f"{self.name}: InvalidURL: {error}") from None
        headers = self._headers if self._headers is not None else self._fill_headers(fields)
        body = json_body(fields.fill_json(self.body)) if self.body is not None else None
        return self.config.method, url, headers, body

    def _unanswered(self, error: UnansweredError) -> RetrieverError:
        if error.timeout:
            return RetrieverError(
                f"{self.name}: no answer within {self.config.timeout:g}s", retryable=True
            )
        return RetrieverError(f"{self.name}: {error}", retryable=error.retryable)

    def _read(self, response: Reply) -> Any:
        """The JSON of a response, or the RetrieverError its status or body makes."""
        if response.is_redirect:
            raise RetrieverError(
                f"{self.name}: HTTP {response.status}: redirected to "
                f"{public_url(response.headers.get('Location', '?'))}; redirects are not "
                "followed (headers would go to another origin): set retriever.url to the "
                "final address"
            )
        if response.status >= 400:
            retryable = response.status == 429 or response.status >= 500
            wait = None
            if response.status in (429, 503):
                wait = self._retry_after(response.headers.get("Retry-After"))
            after = "" if wait is None else f" (Retry-After: the next request waits {wait:.3g}s)"
            said = engine.error_text(response.text, self.errors)
            raise RetrieverError(
                f"{self.name}: HTTP {response.status}{after}: {said}",
                retryable=retryable,
                kind=f"{self.name}: HTTP {response.status}",
                throttled=response.status in (429, 503),
                retry_after=wait,
            )
        try:
            data = parsed_json(response.content)
        except ValueError:
            raise RetrieverError(
                f"{self.name}: response is not JSON: {excerpt(response.text)}",
                kind=f"{self.name}: response is not JSON",
            ) from None
        reported = None if self.errors is None else engine.reported_errors(data, self.errors)
        if reported is not None:
            raise RetrieverError(
                f"{self.name}: the answer reports errors at {self.config.errors}: {reported}",
                retryable=True,
                kind=f"{self.name}: the answer reports errors at {self.config.errors}",
            )
        return data

    def resume_at(self) -> float:
        """The monotonic time the last `Retry-After` named (0 when none): the runner holds
        new calls back until then."""
        with self._resume_lock:
            return self._resume_at

    def _hold_off(self) -> None:
        """Sleep until the time the last `Retry-After` named, if it is still ahead."""
        delay = self._resume_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def _retry_after(self, header: str | None) -> float | None:
        """The bounded wait a `Retry-After` header asks for, now recorded for every later
        request; None when there is no readable header."""
        wait = retry_after_seconds(header)
        if wait is None:
            return None
        wait = min(wait, MAX_RETRY_AFTER)
        with self._resume_lock:
            self._resume_at = max(self._resume_at, time.monotonic() + wait)
        return wait

    def _select(
        self, data: Any, steps: tuple[Step, ...] | None = None, path: str | None = None
    ) -> list[Any]:
        """The hits (or with `steps`, what `path` names) in a response."""
        steps = self.results if steps is None else steps
        path = self.config.results if path is None else path
        try:
            found = select(data, steps)
        except PathError as error:
            optional = self.config.results_optional and steps is self.results
            if optional and engine.absent_hits(data, steps):
                return []
            raise RetrieverError(
                f"{self.name}: response has {error} at path {path}: {excerpt(json.dumps(data))}",
                kind=f"{self.name}: response has {error} at path {path}",
                mapping=True,
            ) from None
        # A path without [*] names the list itself: `hits` reads like `hits[*]`.
        if None not in steps:
            return _as_list(found[0], path)
        return found

    def _hits(self, items: list[Any], k: int) -> list[Hit]:
        hits: dict[str, Hit] = {}
        for position, item in enumerate(items, 1):
            try:
                hit = self._hit(item)
            except ValueError as error:  # PathError is one
                has = " has" if isinstance(error, PathError) else ":"
                raise RetrieverError(
                    f"{self.name}: hit {position}{has} {error}: {excerpt(json.dumps(item))}",
                    kind=f"{self.name}: a hit{has} {error}",
                    mapping=True,
                ) from None
            hits.setdefault(hit.doc_id, hit)
            if len(hits) >= k:
                break
        return list(hits.values())

    def _hit(self, item: Any) -> Hit:
        if isinstance(item, (str, int)) and not isinstance(item, bool):
            return Hit(doc_id(item))
        identifier = _one(item, self.id_path, self.config.id)
        value = None
        if self.score_path is not None:
            with contextlib.suppress(PathError):  # a hit without a score ranks as listed
                value = _one(item, self.score_path, self.config.score or "")
        text = None
        if self.text_path is not None:
            with contextlib.suppress(PathError):  # a hit without text is judged from the corpus
                text = hit_text(_one(item, self.text_path, self.config.text or ""))
        if self.id_pattern is not None:
            identifier = engine.id_within(identifier, self.id_pattern)
        return Hit(doc_id(identifier), score(value), text)


def retry_after_seconds(header: str | None, now: datetime | None = None) -> float | None:
    """Seconds a `Retry-After` value asks to wait: a number of seconds, or an HTTP date
    (a date in the past is 0). None when absent or unreadable. Not bounded here."""
    if header is None or not header.strip():
        return None
    text = header.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _one(item: Any, steps: tuple[Step, ...], path: str) -> Any:
    if len(steps) == 1 and type(item) is dict and type(steps[0]) is str and steps[0] in item:
        return item[steps[0]]  # the common case (`id`, `score`) without select's checks
    found = select(item, steps)
    if len(found) != 1:
        raise PathError(f"{len(found)} values at path {path} (expected one)")
    return found[0]


def _as_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise RetrieverError(f"response has {type(value).__name__} at path {path}, not a list")
    return value


def public_url(url: str) -> str:
    """`url` with its user info's password and credential-looking query parameters
    (api_key=...) redacted."""
    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username}:<redacted>@{host}")
    if not parts.query:
        return urlunsplit(parts)
    pairs = [
        (name, "<redacted>" if is_secret(name) else value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(query=urlencode(pairs, safe="<>{}")))
