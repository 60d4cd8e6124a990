"""`evaluate_shards`: score run shards on a Dask cluster and gather one `Scores` here."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.core.ids import ObjectArray, object_array
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.core.wording import one_line
from retrieval_gate.distributed.worker import ShardScores, restricted, score_shard
from retrieval_gate.errors import InputError
from retrieval_gate.metrics import Scores, evaluate
from retrieval_gate.metrics.parse import parse_metrics

INSTALL = "pip install 'retrieval-gate[distributed]'"
LOCAL = "local:"
"""`--scheduler local:N` starts N worker processes on this machine for the one command."""
NO_WORKERS_TIMEOUT = "5 minutes"
"""How long a `local:N` cluster's scheduler waits for a worker when none is left."""


def evaluate_shards(
    qrels: Qrels,
    shards: Sequence[Path],
    metrics: Sequence[str],
    scheduler: str,
    format: str | None = None,
) -> Scores:
    """`evaluate(concatenated shards, qrels, metrics)`, value for value, with each shard scored
    on a worker of the Dask `scheduler` (an address, or `local:N`). Shards are split by query:
    a query in two shards is an error naming both."""
    specs = parse_metrics(metrics)  # a bad metric fails before a cluster starts
    names = [str(spec) for spec in specs]
    light = Qrels(qrels.query_ids, qrels.query, qrels.doc_bytes, qrels.grade, qrels.source)
    with _client(scheduler) as client:
        from distributed import KilledWorker
        from distributed.scheduler import NoValidWorkerError, NoWorkerError

        token = uuid.uuid4().hex[:12]
        # A task, not client.scatter: scattered data dies with the worker holding it, and a
        # task's result is computed again (the scheduler keeps the task).
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph")
            shared = client.submit(_held, light, key=f"retrieval-gate-qrels-{token}")
        keys = {f"retrieval-gate-shard-{i}-{token}": path for i, path in enumerate(shards)}
        futures = [
            client.submit(score_shard, str(path), format, shared, names, key=key)
            for key, path in keys.items()
        ]
        keys[str(shared.key)] = Path(qrels.source)
        try:
            parts: list[ShardScores] = client.gather(futures)
        except (KilledWorker, NoWorkerError, NoValidWorkerError) as error:
            shard = keys.get(str(getattr(error, "task", "")), Path("?"))
            if not isinstance(error, KilledWorker):  # the task named may be the qrels' own
                shard = next((keys[str(f.key)] for f in futures if f.status != "finished"), shard)
            why = (
                "every worker that held this file's rows died (out of memory, or killed); Dask "
                "gave up after distributed.scheduler.allowed-failures retries"
                if isinstance(error, KilledWorker)
                else "no worker was left to score this file: the cluster's workers died (out of "
                "memory, or killed) and none came back within "
                "distributed.scheduler.no-workers-timeout"
            )
            raise InputError(
                f"{why}. Split the run into smaller shards or give the workers more memory; "
                "their logs say why",
                source=one_line(shard),
            ) from error
        except OSError as error:  # the scheduler went away mid-way
            raise InputError(
                f"lost the Dask scheduler while scoring: {one_line(error)}",
                source=f"--scheduler {one_line(scheduler)}",
            ) from error
    return merged(qrels, specs, parts)


def _held(qrels: Qrels) -> Qrels:
    """`qrels` itself: the one task every shard's scoring depends on."""
    return qrels


def merged(qrels: Qrels, specs: Sequence[Any], parts: Sequence[ShardScores]) -> Scores:
    """The shards' values placed at their queries' positions in `qrels`; the labelled
    queries no shard retrieved for scored here as `evaluate` scores them (0)."""
    _refuse_shared_queries(parts)
    labelled = qrels.query_ids
    covered = np.zeros(len(labelled), dtype=bool)
    values = {str(spec): np.zeros(len(labelled), dtype=np.float64) for spec in specs}
    for part in parts:
        at = np.searchsorted(labelled, part.query_ids)
        covered[at] = True
        for name, column in values.items():
            column[at] = part.values[name]
    missing = [q for part in parts for q in part.missing]
    if not covered.all():
        nothing = Run(object_array([]), np.zeros(0, np.int64), object_array([]), np.zeros(0))
        rest = evaluate(nothing, restricted(qrels, ~covered), specs)
        for name, column in values.items():
            column[~covered] = rest.values[name]
        missing += rest.missing_queries
    ignored = np.concatenate([part.ignored for part in parts]) if parts else object_array([])
    return Scores(
        tuple(str(q) for q in labelled),
        tuple(specs),
        values,
        tuple(sorted(missing)),
        tuple(str(q) for q in np.sort(ignored)),
    )


def _refuse_shared_queries(parts: Sequence[ShardScores]) -> None:
    """Nothing, or an error naming a query two shards hold and both shards."""
    ids: ObjectArray = np.concatenate(
        [object_array([]), *(np.concatenate([p.query_ids, p.ignored]) for p in parts)]
    )
    owner = np.repeat(np.arange(len(parts)), [len(p.query_ids) + len(p.ignored) for p in parts])
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(twice):
        first, second = owner[order[twice[0]]], owner[order[twice[0] + 1]]
        raise InputError(
            f"query {one_line(ordered[twice[0]])!r} is in two run shards, "
            f"{one_line(parts[first].shard)} and {one_line(parts[second].shard)}: split the "
            "run by query, every query's rows in one shard"
        )


@contextmanager
def _client(scheduler: str) -> Iterator[Any]:
    """A Dask client of `scheduler`, closed after; `local:N` starts (and stops) N worker
    processes of one thread on this machine."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as error:
        raise InputError(
            f"scoring on a Dask cluster needs dask.distributed: {INSTALL}",
            source=f"--scheduler {one_line(scheduler)}",
        ) from error
    if scheduler.startswith(LOCAL):
        count = scheduler[len(LOCAL) :]
        if not count.isdigit() or int(count) < 1:
            raise InputError(
                "local:N needs a number of worker processes, e.g. local:2",
                source=f"--scheduler {one_line(scheduler)}",
            )
        import dask

        # Only on 127.0.0.1, and no dashboard: its HTTP server would want port 8787 and warn
        # when another cluster has it. A cluster of our own never waits for good on workers
        # that died and did not come back: its scheduler fails their tasks after a while.
        with dask.config.set({"distributed.scheduler.no-workers-timeout": NO_WORKERS_TIMEOUT}):
            cluster = LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=int(count),
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            )
        with cluster, Client(cluster) as client:  # type: ignore[no-untyped-call]
            yield client
        return
    try:
        client = Client(scheduler)  # type: ignore[no-untyped-call]
    except (OSError, ValueError, TypeError) as error:
        raise InputError(
            f"cannot reach the Dask scheduler: {one_line(error)}. Start one (`dask scheduler`, "
            "then `dask worker ADDRESS` on each machine) or use local:N",
            source=f"--scheduler {one_line(scheduler)}",
        ) from error
    with client:
        yield client
