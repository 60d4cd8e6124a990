"""The `python` retriever: a function, batch function, class or object named `module:attr`."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from retrieval_gate.adapters.hits import to_ranking
from retrieval_gate.adapters.interface import Adapter
from retrieval_gate.adapters.settings import AdapterSettings, redact
from retrieval_gate.adapters.targets import load_target, user_errors
from retrieval_gate.core.model import Document, Hit, Query
from retrieval_gate.core.reported import Reported, reported
from retrieval_gate.errors import GateError, RetrieverError

EXPECTED = (
    "a function f(query, k) or f(query, k, metadata), a batch function f(queries, k), "
    "or a class or object with a search or retrieve method"
)
ARGUMENTS = ("query", "k", "metadata")
# Keyword-only parameter names that also receive an argument (batch functions say queries).
ALIASES = {"queries": "query", "texts": "query", "top_k": "k", "metadatas": "metadata"}
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
BATCH_NAMES = ("queries", "texts", "query_texts")
Call = Callable[[Any, int, Any], Any]


class PythonConfig(AdapterSettings):
    """Calls Python code in this process."""

    type: Literal["python"] = Field(default="python", description="A Python function or object.")
    target: str = Field(
        description=(
            "'module:attribute' naming a function f(query, k[, metadata]), a batch function "
            "f(queries, k[, metadatas]), or a class or object with a search or retrieve "
            "method. Sync or async. The config's folder is importable. Returning "
            "{hits: [...], candidates: [...]} gives a first stage's candidates too."
        )
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Constructor arguments when the target is a class; otherwise extra keyword "
            "arguments on every call."
        ),
    )
    mode: Literal["auto", "query", "batch"] = Field(
        default="auto",
        description=(
            "'query': one query per call; 'batch': lists of queries per call (see batch_size); "
            "'auto': batch when the function's first parameter is named queries or texts, or "
            "when batch_size > 1 and the object has search_batch or retrieve_batch."
        ),
    )


class PythonRetriever(Adapter[PythonConfig]):
    """Calls the target in the runner's worker threads (coroutines run with `asyncio.run` in
    that thread). Results may be ids, (id, score) pairs, dicts or objects with an id; see
    `hits.SHAPES`. Code that is not thread-safe should set `concurrency: 1`."""

    config_class = PythonConfig

    def __init__(
        self,
        config: PythonConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        self.where = f"retriever.target {config.target!r}"
        self.named = f"retriever python (target {config.target})"
        with user_exits(self.named, "the module", "while importing"):
            value = load_target(config.target, EXPECTED, search_dir=base_dir)
        self._owned: Any = None
        bound = config.kwargs
        if inspect.isclass(value):
            try:
                with user_exits(self.named, "the class", "while creating it with retriever.kwargs"):
                    value = self._owned = value(**config.kwargs)
            except GateError:
                raise
            except Exception as error:
                raise GateError(
                    f"could not create {config.target} with retriever.kwargs: "
                    f"{type(error).__name__}: {error}"
                ) from error
            bound = {}
        function, self.batched = self._pick(value)
        self._call = _plan(function, bound, self.where, self.batched)

    def _pick(self, value: Any) -> tuple[Callable[..., Any], bool]:
        """The callable to use and whether it takes lists of queries."""
        mode = self.config.mode
        if not inspect.isroutine(value):
            batch = _method(value, ("search_batch", "retrieve_batch"))
            single = _method(value, ("search", "retrieve"))
            wants_batch = mode == "batch" or (mode == "auto" and self.config.batch_size > 1)
            if batch is not None and wants_batch:
                return batch, True
            if single is not None:
                return single, mode == "batch" or (mode == "auto" and _takes_lists(single))
        if not callable(value):
            raise GateError(f"{self.where} is a {type(value).__name__}; expected {EXPECTED}")
        return value, mode == "batch" or (mode == "auto" and _takes_lists(value))

    def describe(self) -> Mapping[str, Any]:
        return {
            "type": "python",
            "target": self.config.target,
            "kwargs": redact(self.config.kwargs),
            "mode": "batch" if self.batched else "query",
        }

    def batch_size(self) -> int:
        return self.config.batch_size if self.batched else 1

    def search(self, query: Query, k: int) -> list[Hit]:
        if self.batched:
            return self.search_batch([query], k)[0]
        return _with_report(self._run(query.text, k, dict(query.metadata)), k, self.where)

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        if not self.batched:
            return super().search_batch(queries, k)
        texts = [query.text for query in queries]
        results = self._run(texts, k, [dict(query.metadata) for query in queries])
        if not isinstance(results, Sequence) or len(results) != len(queries):
            got = len(results) if isinstance(results, Sequence) else type(results).__name__
            raise RetrieverError(
                f"{self.where} returned {got} result lists for {len(queries)} queries; a batch "
                "function returns one list per query, in order"
            )
        return [_with_report(result, k, self.where) for result in results]

    def _run(self, query: Any, k: int, metadata: Any) -> Any:
        exits = user_exits(self.named, "the retriever", "while searching", RetrieverError)
        with exits, user_errors(self.where):
            result = self._call(query, k, metadata)
            if inspect.isawaitable(result):
                import asyncio  # only for coroutine targets: 11 ms of every start-up

                result = asyncio.run(_wait(result))
        return result

    def close(self) -> None:
        close = getattr(self._owned, "close", None)
        if callable(close):
            with user_exits(self.named, "its close method", "while closing"):
                close()


@contextmanager
def user_exits(
    named: str, who: str, doing: str, error: type[GateError] = GateError
) -> Iterator[None]:
    """`sys.exit()` (SystemExit) or another BaseException that is not an Exception, raised by
    user code, as an `error` naming the retriever: otherwise it would end the tool with the
    user's exit code and no message. A KeyboardInterrupt is a real interrupt: it passes.

    `named` is the retriever (`retriever python (target m:f)`), `who` what called exit (`the
    module`), `doing` when (`while importing`). Search calls use RetrieverError, so the runner
    counts the query as failed, under the error budget, like any other exception."""
    try:
        yield
    except (KeyboardInterrupt, Exception):
        raise
    except SystemExit as stop:
        code = "" if stop.code is None else repr(stop.code)
        raise error(
            f"{named}: {who} called sys.exit({code}) {doing}; retriever code must return "
            "results or raise an exception, not exit the process"
        ) from None
    except BaseException as other:
        text = f": {other}" if str(other) else ""
        raise error(
            f"{named}: {who} raised {type(other).__name__}{text} {doing}, which is a "
            "BaseException, not an Exception; raise an Exception subclass instead"
        ) from None


def _method(value: Any, names: Sequence[str]) -> Callable[..., Any] | None:
    for name in names:
        method = getattr(value, name, None)
        if callable(method):
            return method  # type: ignore[no-any-return]
    return None


def _takes_lists(function: Callable[..., Any]) -> bool:
    """Whether a function's first parameter is named like a list of queries."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    return bool(parameters) and parameters[0].name in BATCH_NAMES


def _plan(function: Callable[..., Any], bound: Mapping[str, Any], where: str, batch: bool) -> Call:
    """How to call `function` with (query, k, metadata): the first positional parameters get
    them in that order; keyword-only parameters named query, k and metadata (or an alias)
    get theirs by name; `bound` (retriever.kwargs) fills the rest."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # some builtins and C extensions have no signature
        return lambda query, k, metadata: function(query, k, **bound)
    free = [p for p in parameters if p.name not in bound]
    positional = [p for p in free if p.kind in POSITIONAL]
    count = min(len(positional), 3)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in free):
        count = max(count, 2)
    by_name: dict[str, str] = {}
    for p in free:
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            name = ALIASES.get(p.name, p.name)
            if name in ARGUMENTS[count:]:
                by_name[p.name] = name
            elif p.default is p.empty:
                raise GateError(f"{where}: required keyword argument {p.name!r} has no value")
    extra = [p.name for p in positional[3:] if p.default is p.empty]
    if extra or (count == 0 and "query" not in by_name.values()):
        shape = "f(queries, k)" if batch else "f(query, k) or f(query, k, metadata)"
        problem = f"also requires {', '.join(extra)}" if extra else "takes no query argument"
        raise GateError(f"{where} {problem}; expected {shape}")

    def call(query: Any, k: int, metadata: Any) -> Any:
        values = {"query": query, "k": k, "metadata": metadata}
        keywords = {name: values[argument] for name, argument in by_name.items()}
        return function(*(query, k, metadata)[:count], **keywords, **bound)

    return call


def _with_report(result: Any, k: int, where: str) -> list[Hit]:
    """The hits of `result`, keeping the latency and cost a `Reported` result carries."""
    hits = to_ranking(result, k, where)
    if isinstance(result, Reported):
        return reported(hits, latency=result.latency, cost=result.cost)
    return hits


async def _wait(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
