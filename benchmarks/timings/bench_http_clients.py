"""Benchmark the http retriever's HTTP clients: client CPU per query, wall against the ideal."""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval_gate.adapters.http_client import ClientName

K = 10
BODY = json.dumps({"hits": [{"id": f"d{i}", "score": float(K - i)} for i in range(K)]}).encode()
"""Every answer: built once, so that the server's CPU per request stays small."""


# --------------------------------------------------------------------------------------------
# The service: asyncio, HTTP/1.1 keep-alive, sleeps `latency` and answers BODY. It runs in a
# child process, so that none of its CPU is counted as the client's; it reports its own CPU.
# --------------------------------------------------------------------------------------------


TRACE: list[tuple[bytes, float, float]] = []
"""The server's own record of each request: its body, when it was read and when answered
(time.monotonic, one clock for every process on the machine)."""


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float
) -> None:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
    )
    try:
        while True:
            try:
                header = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError):
                return  # the client left, or the server stops
            length = 0
            for line in header.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length) if length else b""
            read = time.monotonic()
            await asyncio.sleep(latency)
            writer.write(head)
            TRACE.append((body, read, time.monotonic()))
    finally:
        writer.close()


def run_server(latency: float) -> int:
    """Child process: serve on a free port, print it; on a stdin line print this process's
    CPU seconds (user + sys), or on "trace" the requests answered since the last "trace" (a
    JSON line); stop when stdin closes."""

    async def main() -> None:
        server = await asyncio.start_server(
            lambda r, w: _handle(r, w, latency), "127.0.0.1", 0, backlog=1024
        )
        print(server.sockets[0].getsockname()[1], flush=True)
        loop = asyncio.get_running_loop()
        closed = loop.create_future()

        def read_stdin() -> None:
            for line in sys.stdin:
                if line.strip() == "trace":
                    taken = TRACE[:]
                    del TRACE[: len(taken)]
                    shown = [[body.decode(), read, sent] for body, read, sent in taken]
                    print(json.dumps(shown), flush=True)
                else:
                    print(f"{cpu_seconds():.6f}", flush=True)
            loop.call_soon_threadsafe(closed.set_result, None)

        threading.Thread(target=read_stdin, daemon=True).start()
        await closed
        server.close()

    asyncio.run(main())
    return 0


class Service:
    """The child process serving; `cpu()` asks for its CPU seconds so far."""

    def __init__(self, child: subprocess.Popen[str], url: str) -> None:
        self.child = child
        self.url = url

    def cpu(self) -> float:
        assert self.child.stdin is not None  # a pipe
        assert self.child.stdout is not None  # a pipe
        self.child.stdin.write("cpu\n")
        self.child.stdin.flush()
        return float(self.child.stdout.readline())

    def trace(self) -> list[tuple[str, float, float]]:
        """Each request answered since the last call: its body, when the server read it and
        when it answered (time.monotonic)."""
        assert self.child.stdin is not None  # a pipe
        assert self.child.stdout is not None  # a pipe
        self.child.stdin.write("trace\n")
        self.child.stdin.flush()
        return [tuple(row) for row in json.loads(self.child.stdout.readline())]


@contextmanager
def serve(latency: float) -> Iterator[Service]:
    """The search service for the duration of the block (POST /search, any body)."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency", str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None  # a pipe: stdout=PIPE above
        port = int(child.stdout.readline())
        yield Service(child, f"http://127.0.0.1:{port}/search")
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------------------------
# Clients: each sends `n` POSTs {"query", "k"} with `concurrency` in flight and checks the hits.
# --------------------------------------------------------------------------------------------


def _check(data: Any) -> None:
    if len(data["hits"]) != K:
        raise SystemExit("bench: a response lacks its hits")


def run_gate(url: str, n: int, concurrency: int, client: ClientName) -> None:
    """The gate's runner and http adapter, as `retrieval-gate run` calls them."""
    from retrieval_gate.adapters.http import HttpConfig, HttpRetriever
    from retrieval_gate.core.model import Query
    from retrieval_gate.execution.runner import RunSettings, run_queries

    config = HttpConfig.model_validate(
        {"url": url, "body": {"query": "{query}", "k": "{k}"}, "concurrency": concurrency}
    )
    retriever = HttpRetriever(config, client=client)
    try:
        queries = [Query(f"q{i:05d}", f"query number {i}") for i in range(n)]
        result = run_queries(retriever, queries, K, RunSettings(concurrency=concurrency))
        if result.failures or len(result.hits) != n:
            raise SystemExit(f"bench: {len(result.failures)} failures: {result.failures[:1]}")
    finally:
        retriever.close()


def run_httpx_threads(url: str, n: int, concurrency: int) -> None:
    """A bare `httpx.Client` shared by `concurrency` threads."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(limits=limits, timeout=30.0) as client:

        def one(i: int) -> None:
            response = client.post(url, json={"query": f"query number {i}", "k": K})
            response.raise_for_status()
            _check(response.json())

        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, range(n)))


async def _workers(n: int, concurrency: int, one: Callable[[int], Any]) -> None:
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await one(i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def run_aiohttp(url: str, n: int, concurrency: int) -> None:
    """One `aiohttp.ClientSession` on one event loop, `concurrency` tasks."""
    import aiohttp

    async def main() -> None:
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one(i: int) -> None:
                async with session.post(url, json={"query": f"query number {i}", "k": K}) as r:
                    r.raise_for_status()
                    _check(await r.json())

            await _workers(n, concurrency, one)

    asyncio.run(main())


def run_httpx_async(url: str, n: int, concurrency: int) -> None:
    """One `httpx.AsyncClient` on one event loop, `concurrency` tasks."""
    import httpx

    async def main() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=30.0) as client:

            async def one(i: int) -> None:
                response = await client.post(url, json={"query": f"query number {i}", "k": K})
                response.raise_for_status()
                _check(response.json())

            await _workers(n, concurrency, one)

    asyncio.run(main())


CLIENTS: dict[str, Callable[[str, int, int], None]] = {
    "gate runner + httpx": lambda url, n, c: run_gate(url, n, c, "httpx"),
    "gate runner + aiohttp": lambda url, n, c: run_gate(url, n, c, "aiohttp"),
    "httpx.Client + threads": run_httpx_threads,
    "httpx.AsyncClient": run_httpx_async,
    "aiohttp": run_aiohttp,
}


def measure_one(client: str, url: str, n: int, concurrency: int) -> dict[str, float]:
    """Child process: warm up (one query per connection), then time `n` queries."""
    run = CLIENTS[client]
    run(url, concurrency, concurrency)
    cpu = cpu_seconds()
    started = time.perf_counter()
    run(url, n, concurrency)
    return {"wall": time.perf_counter() - started, "cpu": cpu_seconds() - cpu}


def measured(client: str, url: str, n: int, concurrency: int) -> dict[str, float]:
    """`measure_one` in a fresh process: no client's threads or imports touch another's."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--measure",
            client,
            "--url",
            url,
            "--queries",
            str(n),
            "--concurrency",
            str(concurrency),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: {client} at {concurrency} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def load() -> str:
    with open("/proc/loadavg") as file:
        return " ".join(file.read().split()[:3])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=2000, help="queries per run")
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[8, 16, 32, 64],
        help="comma-separated concurrency levels",
    )
    parser.add_argument("--latency", type=float, default=0.02, help="server seconds per request")
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell; medians shown")
    parser.add_argument(
        "--clients",
        default=",".join(CLIENTS),
        help="comma-separated clients: " + ", ".join(CLIENTS),
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return run_server(args.latency)
    if args.measure:
        print(json.dumps(measure_one(args.measure, args.url, args.queries, args.concurrency[0])))
        return 0
    clients = args.clients.split(",")
    print(f"load average before: {load()}")
    lines = [
        "| client | concurrency | wall s | ideal s | wall/ideal | client CPU ms/query "
        "| server CPU ms/query |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    with serve(args.latency) as service:
        for concurrency in args.concurrency:
            ideal = args.queries * args.latency / concurrency
            for client in clients:
                walls, cpus, servers = [], [], []
                for _ in range(args.repeats):
                    before = service.cpu()
                    got = measured(client, service.url, args.queries, concurrency)
                    # The server also answered the warm-up: count it in the per-query share.
                    servers.append((service.cpu() - before) / (args.queries + concurrency))
                    walls.append(got["wall"])
                    cpus.append(got["cpu"] / args.queries)
                wall = statistics.median(walls)
                lines.append(
                    f"| {client} | {concurrency} | {wall:.2f} | {ideal:.2f} | "
                    f"{wall / ideal:.2f} ({min(walls) / ideal:.2f}-{max(walls) / ideal:.2f}) | "
                    f"{1000 * statistics.median(cpus):.3f} | "
                    f"{1000 * statistics.median(servers):.3f} |"
                )
                print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))
    print(
        f"\n{args.queries} POSTs per run, a {args.latency * 1000:g} ms asyncio server in another "
        f"process answering {len(BODY)} bytes ({K} hits); medians of {args.repeats} runs "
        "(range in brackets); CPU = user + sys of the client process (the server's apart); "
        f"ideal = queries x latency / concurrency; load average after: {load()}; "
        f"python {sys.version.split()[0]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
