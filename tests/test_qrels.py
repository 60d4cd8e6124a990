"""Qrels: one query's judgments without building every query's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.readers import read_qrels


@pytest.mark.parametrize("seed", range(5))
def test_one_querys_judgments_equal_its_by_query_entry(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lines = []
    for query in rng.permutation(40).tolist():  # queries interleaved, not grouped
        for doc in rng.choice(200, size=int(rng.integers(1, 8)), replace=False).tolist():
            lines.append(f"q{query} 0 d{doc} {int(rng.integers(-1, 4))}\n")
    order = rng.permutation(len(lines))
    path = tmp_path / "qrels.txt"
    path.write_text("".join(lines[i] for i in order), encoding="utf-8")
    fresh = read_qrels(path)
    alone = {query: fresh.judgments_of(query) for query in fresh.query_ids.tolist()}
    assert "by_query" not in fresh.__dict__  # it did not build every query's
    built = read_qrels(path)
    expected = dict(zip(built.query_ids.tolist(), built.by_query, strict=True))
    assert alone == expected
    assert all(list(alone[q]) == list(expected[q]) for q in alone)  # row order too
    assert all(built.judgments_of(q) is expected[q] for q in expected)
