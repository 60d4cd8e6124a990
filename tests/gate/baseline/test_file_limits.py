"""The baseline file's limits, at the edge: where the top-k ids move to a side file, the
smallest k and metric list it takes, and how far the scores may be from the repeats' mean."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.file import read_baseline, write_baseline
from retrieval_gate.gate.baseline.record import Baseline, Fingerprints, Repeats, make_baseline
from retrieval_gate.gate.baseline.side_file import top_k_path

FINGERPRINTS = Fingerprints(
    dataset="0" * 64, k=2, metrics=("ndcg@10",), slices="1" * 64, retriever="2" * 16
)


def make(queries: int, scores: np.ndarray | None = None) -> Baseline:
    ids = [f"q{i:05d}" for i in range(queries)]
    return make_baseline(
        fingerprints=FINGERPRINTS,
        retriever={"type": "bm25"},
        slice_definition={"by": []},
        query_ids=ids,
        scores={"ndcg@10": np.linspace(0, 1, queries) if scores is None else scores},
        top_k={q: ["d1", "d2"] for q in ids},
        tool_version="0.1.0",
        repo_dir=None,
        now=datetime(2024, 5, 1, tzinfo=timezone.utc),
    )


@pytest.mark.parametrize(("queries", "side"), [(1000, False), (1001, True)])
def test_the_json_holds_the_top_k_of_up_to_1000_queries_itself(
    tmp_path: Path, queries: int, side: bool
) -> None:
    path = tmp_path / "baseline.json"
    baseline = make(queries)
    write_baseline(baseline, path)
    document = json.loads(path.read_text())
    assert top_k_path(path).exists() == side
    if side:
        assert document["top_k"]["queries"] == queries
    else:
        assert len(document["top_k"]) == queries
    assert read_baseline(path) == baseline


def edited(tmp_path: Path, baseline: Baseline, edit: Any) -> Path:
    path = tmp_path / "baseline.json"
    write_baseline(baseline, path)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def with_k(k: int) -> Any:
    def edit(document: dict[str, Any]) -> None:
        document["fingerprints"]["k"] = k
        document["top_k"] = {}  # nothing retrieved: no list can be longer than k

    return edit


def test_k_must_be_at_least_1_and_the_metrics_at_least_one(tmp_path: Path) -> None:
    path = edited(tmp_path, make(3), with_k(0))
    with pytest.raises(InputError, match=r"fingerprints\.k"):
        read_baseline(path)
    path = edited(tmp_path, make(3), with_k(1))
    assert read_baseline(path).fingerprints.k == 1

    def no_metrics(document: dict[str, Any]) -> None:
        document["fingerprints"]["metrics"] = []
        document["scores"] = {}  # consistent with it: only the list's length is wrong

    path = edited(tmp_path, make(3), no_metrics)
    with pytest.raises(InputError, match=r"fingerprints\.metrics: List should have at least 1"):
        read_baseline(path)


def with_repeats(offset: float) -> Baseline:
    first = np.array([0.25, 0.5, 0.75])
    second = np.array([0.75, 0.5, 0.25])
    baseline = make(3, scores=(first + second) / 2)
    return dataclasses.replace(
        baseline,
        repeats=Repeats(runs=({"ndcg@10": first}, {"ndcg@10": second + offset}), varying=()),
    )


def test_scores_may_differ_from_the_repeats_mean_by_float_noise_only(tmp_path: Path) -> None:
    path = edited(tmp_path, with_repeats(1e-12), lambda d: None)
    assert read_baseline(path).repeats is not None
    path = edited(tmp_path, with_repeats(2e-6), lambda d: None)  # the mean moves by 1e-6
    with pytest.raises(InputError, match=r"scores\.ndcg@10: not the mean of repeats\.runs"):
        read_baseline(path)


def test_repeats_need_two_runs_or_more(tmp_path: Path) -> None:
    path = edited(
        tmp_path, with_repeats(0.0), lambda d: d["repeats"].update(runs=d["repeats"]["runs"][:1])
    )
    with pytest.raises(InputError, match=r"repeats\.runs: List should have at least 2"):
        read_baseline(path)


def test_a_doc_listed_twice_is_named_where_it_repeats(tmp_path: Path) -> None:
    path = edited(
        tmp_path,
        dataclasses.replace(make(3), fingerprints=dataclasses.replace(FINGERPRINTS, k=3)),
        lambda d: d["top_k"].update(q00001=["d1", "d2", "d2"]),
    )
    with pytest.raises(InputError, match=r"top_k\.q00001: lists 'd2' twice"):
        read_baseline(path)


def test_a_side_file_of_no_queries_is_read(tmp_path: Path) -> None:
    empty = make(0)
    path = tmp_path / "baseline.json"
    write_baseline(empty, path)
    document = json.loads(path.read_text())
    top_k_path(path).write_text("")
    document["top_k"] = {
        "file": top_k_path(path).name,
        "sha256": hashlib.sha256(b"").hexdigest(),
        "queries": 0,
    }
    path.write_text(json.dumps(document))
    assert read_baseline(path) == empty
