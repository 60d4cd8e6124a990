"""Latency and cost columns in a baseline file: null where nothing was measured."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.file import read_baseline, write_baseline
from retrieval_gate.gate.baseline.record import Baseline
from tests.helpers.baselines import FINGERPRINTS, make

TIMED = dataclasses.replace(FINGERPRINTS, metrics=("ndcg@10", "latency_p95", "cost_mean"))


def timed(latency: list[float], cost: list[float]) -> Baseline:
    return make(
        fingerprints=TIMED,
        scores={
            "ndcg@10": np.array([0.1, 0.2, 0.3]),
            "latency_p95": np.array(latency),
            "cost_mean": np.array(cost),
        },
    )


def test_unmeasured_latency_is_written_as_null_and_read_back_as_nan(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(timed([12.5, math.nan, 3.0], [math.nan, 1.0, 2.0]), path)
    document = json.loads(path.read_text())
    assert document["scores"]["latency_p95"] == [12.5, None, 3.0]
    assert document["scores"]["cost_mean"] == [None, 1.0, 2.0]
    back = read_baseline(path)
    assert np.isnan(back.scores["latency_p95"][1])
    assert back.scores["latency_p95"][0] == 12.5


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("ndcg@10", None, "scores.ndcg@10[1]: null, but ndcg@10 is defined for every query"),
        ("latency_p95", -4.0, "scores.latency_p95[1] (query 'q2'): -4.0 is outside [0, 1e+15]"),
        ("latency_p95", "12ms", "scores.latency_p95[1]"),
        ("latency_p95", 1e999, "scores.latency_p95[1]"),
    ],
)
def test_hand_edits_of_the_columns_are_named(
    tmp_path: Path, column: str, value: object, expected: str
) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(timed([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]), path)
    document = json.loads(path.read_text())
    document["scores"][column][1] = value
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=re.escape(expected)):
        read_baseline(path)


def test_an_infinite_latency_is_never_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="finite"):
        write_baseline(timed([1.0, math.inf, 3.0], [1.0, 1.0, 1.0]), tmp_path / "b.json")
