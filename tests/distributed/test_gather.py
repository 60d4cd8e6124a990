"""Shards scored on a real local Dask cluster of 2 worker processes equal one process."""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_gate.distributed.gather import evaluate_shards
from retrieval_gate.metrics import evaluate
from retrieval_gate.readers import read_qrels, read_run
from tests.helpers.cli import run_cli

METRICS = ("ndcg@10", "ap@100", "rr@10", "recall@100", "num_ret", "judged@10", "bpref")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The address of a LocalCluster of 2 worker processes, one thread each, whose scheduler
    fails a task no worker is left to run after 20 s (a loaded machine can keep a dead
    worker's nanny from starting another; Dask would wait for one for good)."""
    import dask
    from distributed import LocalCluster

    with (
        dask.config.set({"distributed.scheduler.no-workers-timeout": "20s"}),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as local,
    ):
        yield local.scheduler_address


def _lines(seed: int, queries: int) -> tuple[list[str], dict[int, list[str]]]:
    """Qrels lines and each query's run lines: 30 results, 2-decimal scores (ties)."""
    rng = random.Random(seed)
    qrels, runs = [], {}
    for q in range(queries):
        docs = rng.sample(range(60), 6)
        qrels += [f"q{q} 0 d{d} {rng.randrange(-1, 4)}" for d in docs]
        if q % 7 == 3:
            continue  # labelled, retrieved nothing: scores 0 as under trec_eval -c
        picked = rng.sample(range(60), 30)
        runs[q] = [f"q{q} Q0 d{d} {i} {round(rng.random(), 2)} r" for i, d in enumerate(picked)]
    return qrels, runs


@pytest.fixture
def split(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """Qrels, the whole run, and the run in 5 shards split by query (one unlabelled query)."""
    qrels, runs = _lines(7, 400)
    runs[10_000] = ["unlabelled Q0 d1 1 0.5 r"]
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n")
    whole = [line for q in sorted(runs) for line in runs[q]]
    (tmp_path / "all.trec").write_text("\n".join(whole) + "\n")
    folder = tmp_path / "shards"
    folder.mkdir()
    shards = []
    for i in range(5):
        shard = folder / f"part-{i}.trec"
        shard.write_text("\n".join(line for q in runs if q % 5 == i for line in runs[q]) + "\n")
        shards.append(shard)
    return tmp_path / "qrels.txt", tmp_path / "all.trec", shards


def test_shards_on_two_workers_equal_one_process_bit_for_bit(
    cluster: str, split: tuple[Path, Path, list[Path]]
) -> None:
    qrels_path, whole, shards = split
    qrels = read_qrels(qrels_path)
    one = evaluate(read_run(whole), qrels, METRICS)
    many = evaluate_shards(qrels, shards, METRICS, cluster)
    assert many.query_ids == one.query_ids
    assert [str(spec) for spec in many.metrics] == [str(spec) for spec in one.metrics]
    for name, values in one.values.items():
        assert many.values[name].tobytes() == values.tobytes(), name
    assert many.missing_queries == one.missing_queries
    assert len(one.missing_queries) > 0
    assert many.ignored_queries == one.ignored_queries == ("unlabelled",)


def test_the_command_prints_what_one_process_prints(
    cluster: str, split: tuple[Path, Path, list[Path]]
) -> None:
    qrels_path, whole, shards = split
    options = ["-m", *METRICS, "-q", "-f", "json"]
    one = run_cli("evaluate", qrels_path, whole, *options)
    many = run_cli("evaluate", qrels_path, shards[0].parent, *options, "--scheduler", cluster)
    assert (many.ret, many.out, many.err) == (one.ret, one.out, one.err)
    assert one.ret == 0
    assert len(json.loads(one.out)["per_query"]) == 400


def test_parquet_shards_score_as_their_rows_in_trec(
    cluster: str, split: tuple[Path, Path, list[Path]], tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    qrels_path, whole, shards = split
    for shard in shards:
        rows = [line.split() for line in shard.read_text().splitlines()]
        columns = {"qid": [r[0] for r in rows], "docid": [r[2] for r in rows]}
        columns["score"] = [float(r[4]) for r in rows]  # type: ignore[misc]
        pq.write_table(pa.table(columns), tmp_path / f"{shard.stem}.parquet")
    one = run_cli("evaluate", qrels_path, whole, "-f", "trec", "-q")
    glob = str(tmp_path / "*.parquet")
    many = run_cli("evaluate", qrels_path, glob, "-f", "trec", "-q", "--scheduler", cluster)
    assert many.ret == 0, many.err
    assert many.out == one.out


def test_a_query_in_two_shards_is_refused_naming_both(
    cluster: str, split: tuple[Path, Path, list[Path]], tmp_path: Path
) -> None:
    qrels_path, _, shards = split
    hostile = tmp_path / "shards" / "x\n::error::owned\x1b[31m.trec"
    hostile.write_text(shards[1].read_text().splitlines()[0] + "\n")
    result = run_cli("evaluate", qrels_path, *shards, hostile, "--scheduler", cluster)
    assert result.ret == 2
    assert "is in two run shards" in result.err
    assert "part-1.trec" in result.err
    assert "::error::owned" in result.err  # the hostile name, shown inert:
    assert "\x1b" not in result.err
    assert not any(line.startswith("::") for line in result.err.splitlines())


def test_a_malformed_shard_is_refused_naming_it(
    cluster: str, split: tuple[Path, Path, list[Path]]
) -> None:
    qrels_path, _, shards = split
    bad = shards[0].parent / "::error::bad\r.trec"
    bad.write_text("q1 Q0 d1 1 not-a-score r\n")
    result = run_cli("evaluate", qrels_path, *shards, bad, "--scheduler", cluster)
    assert result.ret == 2
    assert "::error::bad" in result.err
    assert "\r" not in result.err
    assert not any(line.startswith("::") for line in result.err.splitlines())


def test_a_worker_that_dies_once_is_replaced_and_its_shard_rerun(
    cluster: str, split: tuple[Path, Path, list[Path]], tmp_path: Path
) -> None:
    from distributed import Client

    from tests.helpers.dying_worker import DieWhenScoring

    qrels_path, whole, shards = split
    deaths = tmp_path / "deaths"
    with Client(cluster) as client:
        client.register_plugin(DieWhenScoring(deaths, times=1))
        try:
            qrels = read_qrels(qrels_path)
            many = evaluate_shards(qrels, shards, METRICS, cluster)
        finally:
            client.unregister_worker_plugin(DieWhenScoring.name)
    assert len(deaths.read_text().splitlines()) == 1
    one = evaluate(read_run(whole), qrels, METRICS)
    for name, values in one.values.items():
        assert many.values[name].tobytes() == values.tobytes(), name


def test_a_shard_that_kills_every_worker_is_an_error_naming_it(
    cluster: str, split: tuple[Path, Path, list[Path]], tmp_path: Path
) -> None:
    from distributed import Client

    from tests.helpers.dying_worker import DieWhenScoring

    qrels_path, _, shards = split
    deaths = tmp_path / "deaths"
    with Client(cluster) as client:
        client.register_plugin(DieWhenScoring(deaths, times=1_000))
        try:
            result = run_cli("evaluate", qrels_path, shards[0], "--scheduler", cluster)
        finally:
            client.unregister_worker_plugin(DieWhenScoring.name)
    assert result.ret == 2
    assert "part-0.trec" in result.err
    assert "died (out of memory, or killed)" in result.err
    # Dask retries a task whose worker died (distributed.scheduler.allowed-failures, 3): four
    # deaths, or fewer when the restarted workers never came back and the scheduler gave up;
    # on a loaded machine no nanny may restart its worker within the cluster's
    # no-workers-timeout, so one death is enough for the same error.
    assert 1 <= len(deaths.read_text().splitlines()) <= 4


def test_a_cluster_left_without_workers_is_an_error_naming_the_shard(
    split: tuple[Path, Path, list[Path]],
) -> None:
    import dask
    from distributed import LocalCluster

    qrels_path, _, shards = split
    # No worker at all: the state a cluster is in when every worker died and none came back.
    with (
        dask.config.set({"distributed.scheduler.no-workers-timeout": "1s"}),
        LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None) as local,
    ):
        result = run_cli("evaluate", qrels_path, shards[0], "--scheduler", local.scheduler_address)
    assert result.ret == 2
    assert "no worker was left to score this file" in result.err
    assert "part-0.trec" in result.err
    assert "none came back within distributed.scheduler.no-workers-timeout" in result.err


def test_an_unreachable_scheduler_is_a_clear_error(split: tuple[Path, Path, list[Path]]) -> None:
    import dask

    qrels_path, _, shards = split
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        result = run_cli("evaluate", qrels_path, *shards, "--scheduler", f"tcp://127.0.0.1:{port}")
    assert result.ret == 2
    assert f"--scheduler tcp://127.0.0.1:{port}: cannot reach the Dask scheduler" in result.err


def test_local_n_starts_and_stops_its_own_cluster(split: tuple[Path, Path, list[Path]]) -> None:
    qrels_path, whole, shards = split
    one = run_cli("evaluate", qrels_path, whole, "-m", "ndcg@10")
    many = run_cli(
        "evaluate",
        qrels_path,
        *shards[:3],
        shards[3],
        shards[4],
        "-m",
        "ndcg@10",
        "--scheduler",
        "local:2",
    )
    assert (many.ret, many.out) == (0, one.out), many.err


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ([], "several RUN files are the shards of one run: give --scheduler"),
        (["--scheduler", "local:two"], "local:N needs a number of worker processes"),
        (["--scheduler", "local:1", "--subtopics", "x"], "--subtopics does not go with"),
    ],
)
def test_shards_without_a_usable_scheduler_are_refused(
    split: tuple[Path, Path, list[Path]], extra: list[str], problem: str
) -> None:
    qrels_path, _, shards = split
    result = run_cli("evaluate", qrels_path, *shards, *extra)
    assert result.ret == 2
    assert problem in result.err


def test_without_the_extra_the_error_says_what_to_install(
    split: tuple[Path, Path, list[Path]],
) -> None:
    qrels_path, _, shards = split
    script = (
        "import sys\n"
        "sys.modules['distributed'] = None  # as if dask.distributed were not installed\n"
        "from retrieval_gate.cli.main import main\n"
        f"sys.exit(main(['evaluate', {str(qrels_path)!r}, {str(shards[0])!r}, "
        "'--scheduler', 'local:2']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "pip install 'retrieval-gate[distributed]'" in done.stderr
