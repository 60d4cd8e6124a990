"""Benchmark the query runner: a slow local HTTP retriever, and an in-process one plus scoring."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from retrieval_gate.adapters.interface import Retriever
from retrieval_gate.core.model import Hit, Query
from retrieval_gate.errors import RetrieverError
from retrieval_gate.execution.cache import ResultCache
from retrieval_gate.execution.runner import RunResult, RunSettings, run_queries
from retrieval_gate.metrics import evaluate

K = 10
METRICS = ["ndcg@10", "recall@10", "rr@10"]


# --------------------------------------------------------------------------------------------
# A local search service: POST {"query": ..., "k": ...} -> {"hits": [{"id", "score"}, ...]}
# --------------------------------------------------------------------------------------------


def make_handler(latency: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real search service would offer
        # Headers and body go out in two writes; with Nagle on, the second waits for the
        # client's delayed ACK (~40 ms on Linux), which would be measured as runner overhead.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            try:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hits = answer(str(request["query"]), int(request["k"]))
            except (KeyError, TypeError, ValueError):
                self.send_error(400, "expected a JSON body with query and k")
                return
            time.sleep(latency)
            data = json.dumps({"hits": hits}).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: no line per request
            pass

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 drops connections at concurrency 32


def run_server(latency: float) -> int:
    """Child process: serve on a free port, print it, stop when stdin closes."""
    server = Server(("127.0.0.1", 0), make_handler(latency))
    print(server.server_address[1], flush=True)

    def stop_on_eof() -> None:
        sys.stdin.read()
        server.shutdown()

    threading.Thread(target=stop_on_eof, daemon=True).start()
    server.serve_forever(poll_interval=0.05)
    server.server_close()
    return 0


@contextmanager
def serve(latency: float) -> Iterator[str]:
    """The search service for the duration of the block; yields its URL. It runs in a child
    process so that its request handling does not share the runner's GIL, which would count
    the server's CPU time as runner overhead."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency", str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None  # a pipe: stdout=PIPE above
        port = int(child.stdout.readline())
        yield f"http://127.0.0.1:{port}/search"
    finally:
        if child.stdin is not None:
            child.stdin.close()  # asks the server to stop
        try:
            child.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def answer(text: str, k: int) -> list[dict[str, Any]]:
    """Deterministic hits for a query text: its own three docs first, then others."""
    number = int(text.rsplit(" ", 1)[-1])
    docs = [f"d{number}-{i}" for i in range(3)] + [f"d{(number * 7 + i) % 5000}" for i in range(k)]
    return [{"id": doc, "score": float(k - rank)} for rank, doc in enumerate(docs[:k])]


# --------------------------------------------------------------------------------------------
# Retrievers
# --------------------------------------------------------------------------------------------


class MinimalHttp:
    """A bare httpx retriever, used when the project's http adapter is not available."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        import httpx

        self.url = url
        self.client = httpx.Client(
            timeout=timeout,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )

    def describe(self) -> Mapping[str, Any]:
        return {"type": "bench-http", "url": self.url}

    def search(self, query: Query, k: int) -> list[Hit]:
        import httpx

        try:
            response = self.client.post(self.url, json={"query": query.text, "k": k})
        except httpx.TransportError as error:
            raise RetrieverError(f"{type(error).__name__}: {error}", retryable=True) from None
        if response.status_code >= 400:
            raise RetrieverError(f"HTTP {response.status_code}", retryable=True)
        return [Hit(str(hit["id"]), float(hit["score"])) for hit in response.json()["hits"]]

    def batch_size(self) -> int:
        return 1

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        return [self.search(query, k) for query in queries]

    def close(self) -> None:
        self.client.close()


def http_retriever(url: str, concurrency: int) -> tuple[Retriever, str]:
    """The project's http adapter when it imports and builds, else MinimalHttp."""
    try:
        from retrieval_gate.adapters.http import HttpConfig, HttpRetriever

        config = HttpConfig.model_validate(
            {
                "url": url,
                "body": {"query": "{query}", "k": "{k}"},
                "results": "hits[*]",
                "concurrency": concurrency,  # as `retrieval-gate run` builds it from the config
            }
        )
        retriever: Retriever = HttpRetriever(config)
        return retriever, "retrieval_gate.adapters.http.HttpRetriever"
    except Exception as error:  # any failure here means "not ready yet": use our own
        return MinimalHttp(url), f"MinimalHttp (project adapter unavailable: {error})"


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


def bench_http(args: argparse.Namespace) -> tuple[list[Row], str]:
    rows = []
    with serve(args.latency) as url:
        for concurrency in args.concurrency:
            retriever, used = http_retriever(url, concurrency)
            try:
                settings = RunSettings(concurrency=concurrency, timeout=30.0)
                run_queries(retriever, make_queries(concurrency), K, settings)  # warm up
                n = args.serial_queries if concurrency == 1 else args.queries
                items = make_queries(n)
                started = time.perf_counter()
                result = checked(run_queries(retriever, items, K, settings), n)
                wall = time.perf_counter() - started
                note = f"{n} queries: ideal scaled to them" if n != args.queries else ""
                ideal = n * args.latency / concurrency
                rows.append(
                    Row(
                        f"http, {args.latency * 1000:g} ms/request",
                        n,
                        concurrency,
                        wall,
                        ideal,
                        len(result.failures),
                        note,
                    )
                )
            finally:
                retriever.close()
    # The same wait without HTTP: what the runner itself costs at the highest concurrency.
    concurrency = max(args.concurrency)
    items = make_queries(args.queries)
    started = time.perf_counter()
    result = run_queries(InProcess(args.latency), items, K, RunSettings(concurrency=concurrency))
    wall = time.perf_counter() - started
    ideal = len(items) * args.latency / concurrency
    note = "time.sleep in-process, no network"
    rows.append(
        Row(
            f"sleep, {args.latency * 1000:g} ms/call",
            len(items),
            concurrency,
            wall,
            ideal,
            len(result.failures),
            note,
        )
    )
    return rows, used


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
    header = ["case", "queries", "concurrency", "wall s", "ideal s", "wall/ideal", "failed", "note"]
    body = [
        [
            row.case,
            str(row.queries),
            str(row.concurrency),
            f"{row.wall:.3f}",
            "" if row.ideal is None else f"{row.ideal:.3f}",
            "" if row.ideal is None else f"{row.wall / row.ideal:.2f}",
            str(row.failures),
            row.note,
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    right = {1, 2, 3, 4, 5, 6}

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
        default=[1, 8, 32],
        help="comma-separated concurrency levels for the HTTP case",
    )
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per request")
    parser.add_argument("--skip-http", action="store_true", help="only the in-process cases")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    if args.serve:
        return run_server(args.latency)
    rows: list[Row] = []
    used = "not run"
    if not args.skip_http:
        http_rows, used = bench_http(args)
        rows.extend(http_rows)
    rows.extend(bench_in_process(args))
    print(table(rows))
    print(f"\nhttp retriever: {used}")
    print(f"python {sys.version.split()[0]}, k = {K}; ideal = queries x latency / concurrency")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
