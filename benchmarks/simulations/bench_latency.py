"""The latency_p95 check under run-wide load bursts: A/A false alarms with the two sides
interleaved and back to back, and the catch of a real 25% slowdown.

The service: a threaded HTTP server on 127.0.0.1 whose answer to query i sleeps
base_i x noise x load(t) x effect ms: base_i lognormal (median 2 ms, sigma 0.6) per query,
noise lognormal (sigma 0.1) per call, load(t) a seeded run-wide factor of 1.5-3x in bursts
(2 a second, 150 ms long on average) that come and go while the sides run, and on the
changed side of the power rows a slowdown of the service's time (1.4x: the p95 the client
sees, HTTP and client time included, about 1.25x; the p95 ratio column says what it was).
100 queries, the first 5 of each side a warm-up.

Both sides are called through the gate's own parts: the http adapter and the runner (one
query at a time: concurrency 1, so each latency is one call's), the interleaving turns of
`check --against` (`execution/turns.py`: a seeded coin per turn picks the side that goes
first) and compare() with the latency column (`gate/checks/operational.py`: the paired swap test of
the p95, the queries of a turn swapped together). Back to back runs every reference query,
then every current query, as two separate jobs would. A row's rate is the share of trials
whose test showed an increase at alpha 0.05 (the gate's false alarm when nothing changed:
a check can fail only then), and the share that failed the check with max_increase 10%.

The simulation rows run the same model in virtual time, without HTTP, so their trials are
many more; they add turns of 8 queries, with turn swaps and with per-query swaps (unsound).

    python benchmarks/simulations/bench_latency.py  # 200 HTTP, 1000 simulated a row: ~15 min
    python benchmarks/simulations/bench_latency.py --trials 40 --simulated 400
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.adapters.http import HttpConfig, HttpRetriever
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.model import Query
from retrieval_gate.execution.runner import RunSettings, run_queries
from retrieval_gate.execution.turns import Turns
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.operational import Measured
from tests.helpers.local_server import Answer, Respond, serving

QUERIES = 100
WARMUP = 5
ALPHA = 0.05
MAX_INCREASE = 0.10
EFFECT = 1.25
"""The simulation's slowdown: every call of the changed side takes 25% longer."""
SERVICE_EFFECT = 1.4
"""The HTTP service's slowdown of its own time: with the client's and HTTP's time on top
(about a third of a call at the p95 here), what the client sees grows by about 25%; the
table's p95 ratio column is what it measured."""
BASE_MS, BASE_SIGMA = 2.0, 0.6
NOISE_SIGMA = 0.1
BURSTS_PER_S, BURST_S, BURST_FACTOR = 2.0, 0.15, (1.5, 3.0)
CALL_OVERHEAD_S = 0.0007
"""The simulation's client and HTTP time around each call (about what 127.0.0.1 adds)."""
HORIZON_S = 30.0


@dataclass(frozen=True)
class World:
    """One trial's service: each query's base latency and the run-wide load over time."""

    base: FloatArray
    bursts: tuple[tuple[float, float, float], ...]
    """(start, end, factor) in seconds since the trial started."""

    @classmethod
    def draw(cls, rng: np.random.Generator) -> World:
        base = BASE_MS * rng.lognormal(0.0, BASE_SIGMA, QUERIES)
        bursts, t = [], 0.0
        while t < HORIZON_S:
            t += rng.exponential(1.0 / BURSTS_PER_S)
            bursts.append((t, t + rng.exponential(BURST_S), rng.uniform(*BURST_FACTOR)))
        return cls(base, tuple(bursts))

    def load(self, t: float) -> float:
        return max([f for start, end, f in self.bursts if start <= t < end], default=1.0)


# --------------------------------------------------------------------------------------------
# The two ways of running the sides: one call at a time, in turns or back to back
# --------------------------------------------------------------------------------------------

Call = Callable[[int, int], float]
"""(side 0 reference / 1 current, query) -> that call's latency in ms."""


def interleaved(call: Call, turns: Turns) -> tuple[FloatArray, FloatArray, IntArray]:
    """Both sides in turns, as `check --against` runs them; each query's turn."""
    latencies = np.zeros((2, QUERIES))
    for turn, start in enumerate(range(0, QUERIES, turns.size)):
        order = (0, 1) if turns.reference_first(turn) else (1, 0)
        for side in order:
            for query in range(start, min(QUERIES, start + turns.size)):
                latencies[side, query] = call(side, query)
    return latencies[0], latencies[1], np.arange(QUERIES) // turns.size


def back_to_back(call: Call) -> tuple[FloatArray, FloatArray, None]:
    latencies = np.asarray([[call(side, q) for q in range(QUERIES)] for side in (0, 1)])
    return latencies[0], latencies[1], None


def judged(
    reference: FloatArray, current: FloatArray, turns: IntArray | None, seed: int
) -> Comparison:
    """The latency_p95 check of compare(), the warm-up left out."""
    both = np.ones(QUERIES, dtype=bool)
    both[:WARMUP] = False
    column = Measured(both=both, quantile=0.95, turns=turns, reason="")
    (found,) = compare(
        {"latency_p95": reference},
        {"latency_p95": current},
        {"all": np.arange(QUERIES)},
        {
            "latency_p95": Threshold(
                max_drop=MAX_INCREASE, relative=True, direction="lower", unit="ms"
            )
        },
        {},
        ComparisonSettings(alpha=ALPHA, seed=seed, resamples=2000),
        columns={"latency_p95": column},
    )
    return found


# --------------------------------------------------------------------------------------------
# The HTTP service
# --------------------------------------------------------------------------------------------


class Service:
    """What the server answers with, for the trial in progress."""

    def __init__(self) -> None:
        self.world = World(np.ones(QUERIES), ())
        self.effect = 1.0
        self.started = time.monotonic()
        self.rng = np.random.default_rng(0)
        self.lock = threading.Lock()

    def begin(self, world: World, effect: float, seed: int) -> None:
        with self.lock:
            self.world, self.effect = world, effect
            self.rng = np.random.default_rng([seed, 1])
            self.started = time.monotonic()

    def delay(self, query: int, side: str) -> float:
        with self.lock:
            noise = float(self.rng.lognormal(0.0, NOISE_SIGMA))
            load = self.world.load(time.monotonic() - self.started)
            slower = self.effect if side == "b" else 1.0
            return float(self.world.base[query]) * noise * load * slower / 1000.0


def answering(service: Service) -> Respond:
    """The service's answer to a request: its sleep for the query and side, then one hit."""

    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        asked = parse_qs(urlsplit(path).query)
        time.sleep(service.delay(int(asked["q"][0]), asked["side"][0]))
        return 200, {"Content-Type": "application/json"}, b'{"hits": [{"id": "d"}]}'

    return respond


def http_call(url: str) -> tuple[Call, Callable[[], None]]:
    """One call through the http adapter and the runner: its recorded wall latency."""
    settings = RunSettings(concurrency=1, retries=0, timeout=10.0)
    sides = [
        HttpRetriever(HttpConfig(url=f"{url}/s?q={{id}}&side={side}", method="GET", retries=0))
        for side in ("a", "b")
    ]
    queries = [Query(str(q), "x") for q in range(QUERIES)]

    def call(side: int, query: int) -> float:
        result = run_queries(sides[side], [queries[query]], 1, settings)
        return result.timings[str(query)].latency

    def close() -> None:
        for retriever in sides:
            retriever.close()

    return call, close


def simulated_call(world: World, effect: float, rng: np.random.Generator) -> Call:
    """The same service in virtual time: each call moves the clock by its latency."""
    clock = [0.0]

    def call(side: int, query: int) -> float:
        load = world.load(clock[0])
        latency = float(world.base[query] * rng.lognormal(0.0, NOISE_SIGMA) * load)
        latency *= effect if side == 1 else 1.0
        clock[0] += latency / 1000.0 + CALL_OVERHEAD_S
        return latency

    return call


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    alarms: int = 0
    fails: int = 0
    trials: int = 0
    ratio: float = 0.0

    def add(self, found: Comparison) -> None:
        self.trials += 1
        self.alarms += found.p_value is not None and found.p_value <= ALPHA
        self.fails += found.failed
        self.ratio += found.current_mean / found.baseline_mean

    def cells(self, kind: str) -> list[str]:
        return [
            kind,
            self.label,
            str(self.trials),
            f"{self.ratio / self.trials:.3f}",
            rate(self.alarms, self.trials),
            rate(self.fails, self.trials),
        ]


def http_rows(trials: int) -> list[Row]:
    rows = [
        Row("A/A, interleaved (turns of 1)"),
        Row("A/A, back to back"),
        Row(f"service x{SERVICE_EFFECT} slower, interleaved (turns of 1)"),
    ]
    service = Service()
    with serving(answering(service)) as url:
        call, close = http_call(url)
        try:
            for trial in range(trials):
                for r, row in enumerate(rows):
                    seed = trial * len(rows) + r
                    service.begin(World.draw(np.random.default_rng([seed, 0])), 1.0, seed)
                    if r == 2:
                        service.effect = SERVICE_EFFECT
                    ref, cur, turns = (
                        back_to_back(call) if r == 1 else interleaved(call, Turns(1, WARMUP, seed))
                    )
                    row.add(judged(ref, cur, turns, seed))
        finally:
            close()
    return rows


def simulated_rows(trials: int) -> list[Row]:
    plans: list[tuple[str, float, int | None, bool]] = [
        ("A/A, interleaved (turns of 1)", 1.0, 1, True),
        (f"x{EFFECT} slower, interleaved (turns of 1)", EFFECT, 1, True),
        ("A/A, interleaved (turns of 8, turns swapped)", 1.0, 8, True),
        (f"x{EFFECT} slower, interleaved (turns of 8)", EFFECT, 8, True),
        ("A/A, turns of 8, queries swapped one by one", 1.0, 8, False),
        ("A/A, back to back", 1.0, None, True),
        (f"x{EFFECT} slower, back to back", EFFECT, None, True),
    ]
    rows = [Row(label) for label, *_ in plans]
    for trial in range(trials):
        for r, (_, effect, size, by_turn) in enumerate(plans):
            seed = 10**6 + trial * len(plans) + r
            rng = np.random.default_rng([seed, 0])
            call = simulated_call(World.draw(rng), effect, rng)
            if size is None:
                ref, cur, turns = back_to_back(call)
            else:
                ref, cur, turns = interleaved(call, Turns(size, WARMUP, seed))
            rows[r].add(judged(ref, cur, turns if by_turn else None, seed))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="HTTP trials per row")
    parser.add_argument("--simulated", type=int, default=1000, help="simulated trials per row")
    args = parser.parse_args()
    started = time.perf_counter()
    body = [row.cells("simulated") for row in simulated_rows(args.simulated)]
    simulated_s = time.perf_counter() - started
    body += [row.cells("HTTP") for row in http_rows(args.trials)]
    print(
        f"{QUERIES} queries ({WARMUP} warm-up), p95 of lognormal latencies (median "
        f"{BASE_MS:g} ms) under load bursts of {BURST_FACTOR[0]:g}-{BURST_FACTOR[1]:g}x; "
        f"alpha {ALPHA}, max_increase {MAX_INCREASE:.0%}; Wilson 95% intervals\n"
    )
    header = ["run", "sides", "trials", "p95 ratio", "test alarms", "check fails"]
    print(table(header, body, right={2, 3, 4, 5}))
    total = time.perf_counter() - started
    print(f"\nsimulation {simulated_s:.0f} s, HTTP {total - simulated_s:.0f} s (1 process)")


if __name__ == "__main__":
    main()
