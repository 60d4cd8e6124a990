"""The ANN check through real store blocks on the command line: a pgvector or LanceDB index
searched to lose recall fails `check`, the same index searched faithfully passes. The exact
side is the block's own `exact: true` (exact_config), not a python retriever's keyword."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.helpers.builders import labelled_set
from tests.helpers.cli import run_cli
from tests.helpers.seeded_vectors import DIMENSION, vector_of

ROWS = 2000
LISTS = 100  # pgvector IVFFlat lists
PARTITIONS = 8  # LanceDB IVF partitions
EMBED = {"python": "tests.helpers.seeded_vectors:embed"}
ANN = {"ann_recall@10": {"min": 0.95}}


def _project(tmp_path: Path, retriever: dict[str, Any]) -> Path:
    """A labelled set, 120 unlabelled queries and a config with the ANN check."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"u{i:03d}", "text": f"how do I {i}"} for i in range(120)]
    (tmp_path / "production.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    return labelled_set(
        tmp_path,
        retriever=retriever,
        metrics={"recall@10": {}},
        unlabelled={"queries": "production.jsonl", "checks": ANN},
    )


def _with(config: Path, **fields: Any) -> Path:
    """`config` with these retriever fields replaced."""
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["retriever"].update(fields)
    config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return config


def _check(config: Path) -> tuple[int, str, str, dict[str, Any]]:
    """Exit code, stdout, stderr and the overall ann_recall@10 comparison of `check`."""
    result = config.parent / "result.json"
    result.unlink(missing_ok=True)
    code, out, err = run_cli("check", "-c", config, "--json", result)
    document = json.loads(result.read_text(encoding="utf-8")) if result.exists() else {}
    found = [
        c
        for c in document.get("comparisons", [])
        if c["metric"] == "unlabelled:ann_recall@10" and c["slice"] == "all"
    ]
    assert found, err
    assert document["label_free"]["exact"] is True
    return code, out, err, found[0]


def _fails_then_passes(config: Path, lossy: dict[str, Any], faithful: dict[str, Any]) -> None:
    assert run_cli("baseline", "-c", _with(config, **faithful), "--quiet").ret == 0
    code, out, err, found = _check(config)
    assert code == 0, out + err
    assert (found["current_mean"], found["failed"]) == (1.0, False)
    code, out, err, found = _check(_with(config, **lossy))
    assert code == 1, out + err
    assert found["failed"]
    assert found["current_mean"] < 0.8  # well below the floor of 0.95
    _names_the_check(out, found["current_mean"])


def _names_the_check(out: str, recall: float) -> None:
    """The report names the check, its value and its floor."""
    assert f"unlabelled:ann_recall@10 is {recall:.4f}, below its floor 0.9500" in out


# --- pgvector ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg_tables(postgres: str) -> str:
    """ann_ivf (IVFFlat, 100 lists) and ann_hnsw (a sparse HNSW graph, m 4) with the same
    2,000 seeded unit vectors."""
    psycopg = pytest.importorskip("psycopg")
    ids = [f"d{i}" for i in range(ROWS)]
    with psycopg.connect(postgres, autocommit=True) as connection:
        for table in ("ann_ivf", "ann_hnsw"):
            connection.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, embedding vector(16))")
            with connection.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                for doc in ids:
                    text = "[" + ",".join(str(float(x)) for x in vector_of(doc)) + "]"
                    copy.write_row((doc, text))
        connection.execute(
            f"CREATE INDEX ON ann_ivf USING ivfflat (embedding vector_cosine_ops) "
            f"WITH (lists = {LISTS})"
        )
        connection.execute(
            "CREATE INDEX ON ann_hnsw USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 4, ef_construction = 8)"
        )
        connection.execute("ANALYZE")
    return postgres


def _pgvector(tmp_path: Path, dsn: str, table: str) -> Path:
    return _project(tmp_path, {"type": "pgvector", "dsn": dsn, "table": table, "embedding": EMBED})


def test_pgvector_ivfflat_probing_one_list_fails_and_every_list_passes(
    tmp_path: Path, pg_tables: str
) -> None:
    """1 of 100 lists probed measured recall 0.2 to 0.25 in the store's own tests; probing
    all 100 is an exhaustive search, the exact top 10."""
    _fails_then_passes(
        _pgvector(tmp_path, pg_tables, "ann_ivf"),
        lossy={"search_settings": {"ivfflat.probes": 1}},
        faithful={"search_settings": {"ivfflat.probes": LISTS}},
    )


def test_pgvector_sparse_hnsw_with_a_small_ef_search_fails(tmp_path: Path, pg_tables: str) -> None:
    """HNSW m 4 with ef_search 10: about 0.47 (it builds at random, so only the lossy side
    is asserted; ef_search 1000 gets 0.9975 to 1.0, not always exactly 1)."""
    config = _with(
        _pgvector(tmp_path, pg_tables, "ann_hnsw"), search_settings={"hnsw.ef_search": 10}
    )
    assert run_cli("baseline", "-c", config, "--quiet").ret == 0
    code, out, err, found = _check(config)
    assert code == 1, out + err
    assert found["failed"]
    assert found["current_mean"] < 0.8
    _names_the_check(out, found["current_mean"])


# --- LanceDB ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lance_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LanceDB table of the same 2,000 seeded vectors with an IVF-Flat index of 8
    partitions (IVF-PQ would lose recall at every nprobes: the block has no refine_factor)."""
    lancedb = pytest.importorskip("lancedb")
    from lancedb.index import IvfFlat

    folder = tmp_path_factory.mktemp("lance") / "db"
    vectors = np.stack([vector_of(f"d{i}") for i in range(ROWS)])
    assert vectors.shape[1] == DIMENSION
    table = lancedb.connect(folder).create_table(
        "docs", data=[{"id": f"d{i}", "vector": v.tolist()} for i, v in enumerate(vectors)]
    )
    table.create_index("vector", config=IvfFlat(distance_type="l2", num_partitions=PARTITIONS))
    return folder


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_lancedb_probing_one_partition_fails_and_every_partition_passes(
    tmp_path: Path, lance_store: Path
) -> None:
    config = _project(
        tmp_path,
        {
            "type": "lancedb",
            "uri": str(lance_store),
            "table": "docs",
            "id_field": "id",
            "distance": "l2",
            "embedding": EMBED,
        },
    )
    _fails_then_passes(config, lossy={"nprobes": 1}, faithful={"nprobes": PARTITIONS})


def test_an_ann_check_on_a_full_text_lancedb_search_is_refused(tmp_path: Path) -> None:
    """query: fts ignores exact, so the check would compare the search with itself: 1.0."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.errors import GateError
    from retrieval_gate.pipeline.unlabelled import exact_config

    block = {"type": "lancedb", "uri": "db", "table": "docs", "id_field": "id"}
    with pytest.raises(GateError, match="with query: fts searches no vector index"):
        exact_config(load(_project(tmp_path, {**block, "query": "fts"})))
    dense = load(_project(tmp_path, {**block, "embedding": EMBED}))
    assert exact_config(dense).exact
    assert not dense.retriever.exact
