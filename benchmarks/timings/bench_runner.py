"""Benchmark the query runner: a slow local HTTP retriever, and an in-process one plus scoring."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_gate.adapters.interface import Retriever
from retrieval_gate.core.model import Hit, Query
from retrieval_gate.execution.cache import ResultCache
from retrieval_gate.execution.runner import RunResult, RunSettings, run_queries
from retrieval_gate.metrics import evaluate

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

if TYPE_CHECKING:
    from retrieval_gate.adapters.http_client import ClientName

K = 10
FLOOR = "aiohttp alone"
"""The harness's floor: one aiohttp session on one loop, no runner and no adapter
(bench_http_clients.run_aiohttp), against the same server."""
METRICS = ["ndcg@10", "recall@10", "rr@10"]


def answer(text: str, k: int) -> list[dict[str, Any]]:
    """Deterministic hits for a query text: its own three docs first, then others."""
    number = int(text.rsplit(" ", 1)[-1])
    docs = [f"d{number}-{i}" for i in range(3)] + [f"d{(number * 7 + i) % 5000}" for i in range(k)]
    return [{"id": doc, "score": float(k - rank)} for rank, doc in enumerate(docs[:k])]


# --------------------------------------------------------------------------------------------
# Retrievers
# --------------------------------------------------------------------------------------------


def http_retriever(url: str, concurrency: int, client: ClientName) -> Retriever:
    """The project's http adapter on `client`, as `retrieval-gate run` builds it."""
    from retrieval_gate.adapters.http import HttpConfig, HttpRetriever

    config = HttpConfig.model_validate(
        {
            "url": url,
            "body": {"query": "{query}", "k": "{k}"},
            "results": "hits[*]",
            "concurrency": concurrency,  # as `retrieval-gate run` builds it from the config
        }
    )
    return HttpRetriever(config, client=client)


class InProcess:
    """The same answers as the HTTP service without the network, after `delay` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def describe(self) -> Mapping[str, Any]:
        return {"type": "bench-in-process"}

    def search(self, query: Query, k: int) -> list[Hit]:
        if self.delay:
            time.sleep(self.delay)
        return [Hit(hit["id"], hit["score"]) for hit in answer(query.text, k)]

    def batch_size(self) -> int:
        return 1

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        return [self.search(query, k) for query in queries]

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    queries: int
    concurrency: int
    wall: float
    ideal: float | None
    failures: int
    note: str = ""
    cpu: float | None = None
    """Client CPU seconds (user + sys of this process) per query."""
    served: float | None = None
    """The ideal with the server's own mean hold for the latency: what a client that cost
    nothing would take against this server."""


def make_queries(n: int) -> list[Query]:
    return [Query(f"q{i:05d}", f"query number {i}") for i in range(n)]


def make_qrels(items: Sequence[Query], seed: int) -> dict[str, dict[str, int]]:
    """Per query: one of its top docs relevant (grade 1-3) and two docs it never retrieves."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    for i, query in enumerate(items):
        judged = {f"d{i}-{rng.randrange(3)}": rng.randint(1, 3)}
        judged.update({f"unretrieved-{i}-{j}": 1 for j in range(rng.randrange(3))})
        qrels[query.id] = judged
    return qrels


def checked(result: RunResult, expected: int) -> RunResult:
    if len(result.hits) + len(result.failures) != expected:
        raise SystemExit(f"bench: {expected} queries in, {len(result.hits)} answers out")
    return result


def bench_http(args: argparse.Namespace) -> list[Row]:
    """Per concurrency and client: the median wall and client CPU of `--repeats` runs."""
    from benchmarks.timings.bench_http_clients import cpu_seconds, run_aiohttp, serve

    rows = []
    with serve(args.latency) as service:
        for concurrency in args.concurrency:
            n = args.serial_queries if concurrency == 1 else args.queries
            items = make_queries(n)
            settings = RunSettings(concurrency=concurrency, timeout=30.0)
            for client in [*args.clients, *([] if args.no_floor else [FLOOR])]:
                walls, cpus, holds, failures = [], [], [], 0
                for _ in range(args.repeats):
                    if client == FLOOR:
                        run_aiohttp(service.url, concurrency, concurrency)  # warm up
                        service.trace()
                        cpu, started = cpu_seconds(), time.perf_counter()
                        run_aiohttp(service.url, n, concurrency)
                        walls.append(time.perf_counter() - started)
                        cpus.append((cpu_seconds() - cpu) / n)
                        holds.extend(sent - read for _, read, sent in service.trace())
                        continue
                    retriever = http_retriever(service.url, concurrency, client)
                    try:
                        run_queries(retriever, make_queries(concurrency), K, settings)  # warm up
                        service.trace()
                        cpu, started = cpu_seconds(), time.perf_counter()
                        result = checked(run_queries(retriever, items, K, settings), n)
                        walls.append(time.perf_counter() - started)
                        cpus.append((cpu_seconds() - cpu) / n)
                        holds.extend(sent - read for _, read, sent in service.trace())
                        failures += len(result.failures)
                    finally:
                        retriever.close()
                notes = [f"{n} queries: ideal scaled to them"] if n != args.queries else []
                if len(walls) > 1:
                    notes.append(f"walls {min(walls):.2f}-{max(walls):.2f} s")
                name = FLOOR if client == FLOOR else f"http ({client})"
                rows.append(
                    Row(
                        f"{name}, {args.latency * 1000:g} ms/request",
                        n,
                        concurrency,
                        statistics.median(walls),
                        n * args.latency / concurrency,
                        failures,
                        "; ".join(notes),
                        statistics.median(cpus),
                        n * statistics.fmean(holds) / concurrency,
                    )
                )
                print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    # The same wait without HTTP: what the runner itself costs at the highest concurrency.
    concurrency = max(args.concurrency)
    items = make_queries(args.queries)
    cpu, started = cpu_seconds(), time.perf_counter()
    result = run_queries(InProcess(args.latency), items, K, RunSettings(concurrency=concurrency))
    wall = time.perf_counter() - started
    rows.append(
        Row(
            f"sleep, {args.latency * 1000:g} ms/call",
            len(items),
            concurrency,
            wall,
            len(items) * args.latency / concurrency,
            len(result.failures),
            "time.sleep in-process, no network",
            (cpu_seconds() - cpu) / len(items),
        )
    )
    return rows


TRACE_PARTS = [
    ("start", "slots idle before their first request went out"),
    ("to server", "a request going out (its coroutine) to the server having read it"),
    ("server", "the server's hold beyond the latency (its sleep, its own loop)"),
    ("to client", "the server answering to the client having read the response"),
    ("between", "a slot free between one response read and its next request going out"),
    ("tail", "slots idle after the last responses were read, to the run's end"),
]
"""The parts of the wall beyond the ideal, each summed over the queries, / concurrency."""


def trace_http(args: argparse.Namespace) -> str:
    """Where the wall goes beyond the ideal, per concurrency, on aiohttp: each
    query's timestamps (submitted, coroutine started, server read, server answered, response
    read, answer handled; one monotonic clock for both processes), summed per part over the
    queries and divided by the concurrency, so that the parts add up to wall - ideal."""
    from benchmarks.timings import bench_http_clients

    client: ClientName = "aiohttp"  # the one whose requests go out on a loop we can stamp
    lines = [
        "| concurrency | wall s | ideal s | "
        + " | ".join(f"{name} s" for name, _ in TRACE_PARTS)
        + " | server hold p50 / p99 ms | search to out p50 ms | read to handled p50 ms |",
        "|---:|---:|---:|" + "---:|" * len(TRACE_PARTS) + "---:|---:|---:|",
    ]
    with bench_http_clients.serve(args.latency) as service:
        for concurrency in args.concurrency:
            lines.append(trace_one(service, args, concurrency, client))
            print(lines[-1], file=sys.stderr, flush=True)
    legend = "\n".join(f"- {name}: {meaning}" for name, meaning in TRACE_PARTS)
    return "\n".join(lines) + f"\n\nclient {client}; parts in seconds of wall:\n{legend}"


def trace_one(service: Any, args: argparse.Namespace, concurrency: int, client: ClientName) -> str:
    """One concurrency's run with every query's timestamps: its `trace_row`."""
    from retrieval_gate.execution import runner

    items = make_queries(args.queries)
    settings = RunSettings(concurrency=concurrency, timeout=30.0)
    retriever = http_retriever(service.url, concurrency, client)
    stamps: dict[str, dict[str, float]] = {}
    loop, original_search = retriever.loop_search()  # type: ignore[attr-defined]
    original_sent = retriever._client.sent  # type: ignore[attr-defined]
    original_answered = runner._Sink.answered

    async def search(query: Query, k: int) -> Any:
        stamps.setdefault(query.text, {})["submit"] = time.monotonic()
        return await original_search(query, k)

    async def sent(method: str, url: str, headers: Any, body: bytes | None, **how: Any) -> Any:
        text = json.loads(body or b"{}")["query"]
        stamps.setdefault(text, {})["begin"] = time.monotonic()
        try:
            return await original_sent(method, url, headers, body, **how)
        finally:
            stamps[text]["read"] = time.monotonic()

    def answered(sink: Any, unit: Any, call: Any) -> None:
        stamps[unit.queries[0].text]["handled"] = time.monotonic()
        original_answered(sink, unit, call)

    try:
        run_queries(retriever, make_queries(concurrency), K, settings)  # warm up
        service.trace()
        stamps.clear()
        retriever.loop_search = lambda: (loop, search)  # type: ignore[attr-defined]
        retriever._client.sent = sent  # type: ignore[attr-defined]
        runner._Sink.answered = answered  # type: ignore[method-assign]
        began = time.monotonic()
        checked(run_queries(retriever, items, K, settings), len(items))
        ended = time.monotonic()
    finally:
        runner._Sink.answered = original_answered  # type: ignore[method-assign]
        retriever.close()
    for body, read, answered_at in service.trace():
        stamps[json.loads(body)["query"]].update(got=read, answered=answered_at)
    return trace_row(stamps, began, ended, concurrency, args.latency)


def trace_row(
    stamps: Mapping[str, Mapping[str, float]],
    began: float,
    ended: float,
    concurrency: int,
    latency: float,
) -> str:
    """One concurrency's breakdown: each part's seconds summed over the queries and divided
    by the concurrency (they add up to wall - ideal), then the hand-offs per query."""
    rows = list(stamps.values())
    out = sorted(row["begin"] for row in rows)[:concurrency]
    last = sorted(row["read"] for row in rows)[-concurrency:]
    parts = {
        "start": sum(at - began for at in out),
        "to server": sum(row["got"] - row["begin"] for row in rows),
        "server": sum(row["answered"] - row["got"] - latency for row in rows),
        "to client": sum(row["read"] - row["answered"] for row in rows),
        "tail": sum(ended - at for at in last),
    }
    requests = sum(row["read"] - row["begin"] for row in rows)
    parts["between"] = concurrency * (ended - began) - requests - parts["start"] - parts["tail"]
    holds = sorted((row["answered"] - row["got"]) * 1000 for row in rows)
    ideal = len(rows) * latency / concurrency
    cells = [f"{parts[name] / concurrency:.3f}" for name, _ in TRACE_PARTS]

    def median_ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.2f}"

    to_loop = median_ms([row["begin"] - row["submit"] for row in rows])
    to_runner = median_ms([row["handled"] - row["read"] for row in rows])
    p99 = holds[min(len(holds) - 1, int(0.99 * len(holds)))]
    return (
        f"| {concurrency} | {ended - began:.3f} | {ideal:.3f} | "
        + " | ".join(cells)
        + f" | {holds[len(holds) // 2]:.2f} / {p99:.2f} | {to_loop} | {to_runner} |"
    )


def bench_in_process(args: argparse.Namespace) -> list[Row]:
    items = make_queries(args.queries)
    qrels = make_qrels(items, seed=0)
    settings = RunSettings(concurrency=8)
    started = time.perf_counter()
    result = checked(run_queries(InProcess(), items, K, settings), len(items))
    ran = time.perf_counter()
    scores = evaluate(result.run, qrels, METRICS)
    done = time.perf_counter()
    means = ", ".join(f"{name} {value:.3f}" for name, value in scores.mean().items())
    rows = [
        Row("in-process: run_queries", len(items), 8, ran - started, None, len(result.failures)),
        Row("in-process: evaluate", len(items), 8, done - ran, None, 0, means),
        Row("in-process: run + evaluate", len(items), 8, done - started, None, 0),
    ]
    with tempfile.TemporaryDirectory() as folder:
        with ResultCache(Path(folder) / "cache.sqlite") as cache:
            run_queries(InProcess(), items, K, settings, cache=cache)
            started = time.perf_counter()
            warm = checked(run_queries(InProcess(), items, K, settings, cache=cache), len(items))
            wall = time.perf_counter() - started
        note = f"{warm.cached} cached, {warm.calls} calls"
        rows.append(Row("in-process: warm SQLite cache", len(items), 8, wall, None, 0, note))
    return rows


def table(rows: Sequence[Row]) -> str:
    header = [
        "case",
        "queries",
        "concurrency",
        "wall s",
        "ideal s",
        "wall/ideal",
        "wall/served",
        "client CPU ms/query",
        "failed",
        "note",
    ]
    body = [
        [
            row.case,
            str(row.queries),
            str(row.concurrency),
            f"{row.wall:.3f}",
            "" if row.ideal is None else f"{row.ideal:.3f}",
            "" if row.ideal is None else f"{row.wall / row.ideal:.2f}",
            "" if row.served is None else f"{row.wall / row.served:.2f}",
            "" if row.cpu is None else f"{row.cpu * 1000:.3f}",
            str(row.failures),
            row.note,
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    right = {1, 2, 3, 4, 5, 6, 7, 8}

    def render(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if i in right else "-" * (w + 2) for i, w in enumerate(widths)
        )
        + "|"
    )
    return "\n".join([render(header), rule, *(render(line) for line in body)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=2000, help="queries per case")
    parser.add_argument(
        "--serial-queries", type=int, default=200, help="queries at concurrency 1 (short run)"
    )
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[8, 16, 32, 64],
        help="comma-separated concurrency levels for the HTTP case (1 runs --serial-queries)",
    )
    parser.add_argument("--latency", type=float, default=0.02, help="server seconds per request")
    parser.add_argument(
        "--clients",
        type=lambda text: text.split(","),
        default=["aiohttp", "httpx"],
        help="comma-separated HTTP clients of the http adapter: aiohttp, httpx",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell; medians shown")
    parser.add_argument("--skip-http", action="store_true", help="only the in-process cases")
    parser.add_argument(
        "--no-floor", action="store_true", help=f"no '{FLOOR}' row (the harness's floor)"
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="instead: where the wall goes beyond the ideal, per concurrency (aiohttp)",
    )
    args = parser.parse_args(argv)
    if args.trace:
        print(trace_http(args))
        return 0
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    rows: list[Row] = []
    if not args.skip_http:
        rows.extend(bench_http(args))
    rows.extend(bench_in_process(args))
    print(table(rows))
    after = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"\nhttp: the gate's runner and http adapter against an asyncio server in another "
        "process (benchmarks/timings/bench_http_clients.py) that waits "
        f"{args.latency * 1000:g} ms and "
        f"answers {K} hits; medians of {args.repeats} runs; client CPU = user + sys of this "
        f"process per query; load average before {load}, after {after}; python "
        f"{sys.version.split()[0]}, k = {K}; ideal = queries x latency / concurrency; served "
        f"= queries x the server's mean hold / concurrency (its sleep overshoots the latency); "
        f"'{FLOOR}': one aiohttp session, no runner or adapter, on the "
        f"same server (the harness's floor)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
