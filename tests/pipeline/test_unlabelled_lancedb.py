"""The ANN check on a real store: a LanceDB IVF-PQ index probed in one partition loses
recall and fails; probing every partition and re-ranking exactly passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.builders import labelled_set
from tests.helpers.cli import run_cli

DIMENSION = 16
# The retriever a team would write: open the table, embed the text, search the index (or,
# with exact=True, every vector: LanceDB's bypass_vector_index).
RETRIEVER = """
import hashlib

import lancedb
import numpy as np


def embed(text):
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    return np.random.default_rng(seed).standard_normal(16).astype("float32")


class LanceSearch:
    def __init__(self, folder, nprobes, refine=None, exact=False):
        self.table = lancedb.connect(folder).open_table("docs")
        self.nprobes, self.refine, self.exact = nprobes, refine, exact

    def search(self, query, k):
        found = self.table.search(embed(query)).limit(k)
        if self.exact:
            found = found.bypass_vector_index()
        else:
            found = found.nprobes(self.nprobes)
            if self.refine:
                found = found.refine_factor(self.refine)
        return [(row["id"], -float(row["_distance"])) for row in found.to_list()]
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LanceDB table of 2,000 seeded vectors with an IVF-PQ index of 8 partitions."""
    lancedb = pytest.importorskip("lancedb")
    from lancedb.index import IvfPq

    folder = tmp_path_factory.mktemp("lance") / "db"
    vectors = np.random.default_rng(7).standard_normal((2000, DIMENSION)).astype("float32")
    table = lancedb.connect(folder).create_table(
        "docs", data=[{"id": f"d{i}", "vector": v.tolist()} for i, v in enumerate(vectors)]
    )
    table.create_index(
        "vector", config=IvfPq(distance_type="l2", num_partitions=8, num_sub_vectors=4)
    )
    return folder


def _project(tmp_path: Path, store: Path, **kwargs: Any) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "lance_search.py").write_text(RETRIEVER, encoding="utf-8")
    rows = [{"id": f"u{i:03d}", "text": f"how do I {i}"} for i in range(120)]
    (tmp_path / "production.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    return labelled_set(
        tmp_path,
        retriever={
            "type": "python",
            "target": "lance_search:LanceSearch",
            "kwargs": {"folder": str(store), **kwargs},
        },
        metrics={"recall@10": {}},
        unlabelled={"queries": "production.jsonl", "checks": {"ann_recall@10": {"min": 0.95}}},
    )


def _ann_recall(config: Path) -> tuple[int, float, bool, str]:
    result = config.parent / "result.json"
    code, _, err = run_cli("check", "-c", config, "--quiet", "--json", result)
    document = json.loads(result.read_text(encoding="utf-8")) if result.exists() else {}
    found = [
        c
        for c in document.get("comparisons", [])
        if c["metric"] == "unlabelled:ann_recall@10" and c["slice"] == "all"
    ]
    assert found, err
    return code, found[0]["current_mean"], found[0]["failed"], err


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_lossy_index_fails_and_a_faithful_one_passes(tmp_path: Path, store: Path) -> None:
    faithful = _project(tmp_path / "faithful", store, nprobes=8, refine=50)
    assert run_cli("baseline", "-c", faithful, "--quiet").ret == 0
    code, recall, failed, err = _ann_recall(faithful)
    assert (code, recall, failed) == (0, 1.0, False), err
    lossy = _project(tmp_path / "lossy", store, nprobes=1)
    assert run_cli("baseline", "-c", lossy, "--quiet").ret == 0
    code, recall, failed, err = _ann_recall(lossy)
    assert (code, failed) == (1, True), err
    assert recall < 0.8


def test_the_exact_search_is_what_the_index_is_measured_against(store: Path) -> None:
    import lancedb

    table = lancedb.connect(store).open_table("docs")
    vector = np.ones(DIMENSION, dtype="float32")
    exact = [row["id"] for row in table.search(vector).limit(10).bypass_vector_index().to_list()]
    every = np.asarray(table.to_arrow()["vector"].to_pylist(), dtype="float32")
    nearest = np.argsort(np.square(every - vector).sum(axis=1), kind="stable")[:10]
    assert exact == [f"d{i}" for i in nearest]
