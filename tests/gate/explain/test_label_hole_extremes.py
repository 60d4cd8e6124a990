"""The ideal DCGs the nDCG bounds divide by: counted by gain, as the sorted gains give them."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.gate.explain import label_hole_extremes
from retrieval_gate.gate.explain.label_hole_extremes import _denominators, multisets
from retrieval_gate.metrics import parse_metric


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("k", [1, 3, 10])
def test_ideal_dcgs_counted_by_gain_are_those_of_the_sorted_gains(
    seed: int, k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(seed)
    gains = np.asarray([0.0, 1.0, 3.0, 7.0, 2.5][: int(rng.integers(1, 6))])
    queries, judged = int(rng.integers(1, 30)), int(rng.integers(0, 14))
    # Each query's judged gains highest first, zeros after (as `_known_gains` lays them out).
    known = -np.sort(-rng.choice(gains, (queries, judged)), axis=1)
    added = gains[::-1][multisets(int(rng.integers(0, 6)), len(gains))]
    spec = parse_metric(f"ndcg@{k}")
    counted = _denominators(spec, known, np.zeros(queries), added)
    monkeypatch.setattr(label_hole_extremes, "_COUNTED_GAINS", -1)  # every query's gains sorted
    sorted_ = _denominators(spec, known, np.zeros(queries), added)
    assert counted.shape == sorted_.shape == (queries, len(added))
    np.testing.assert_allclose(counted, sorted_, rtol=1e-13, atol=1e-13)
    # By hand: the k highest gains of the first query with the last row, discounted.
    every = sorted([*known[0], *added[-1]], reverse=True)[:k]
    by_hand = sum(g / np.log2(r + 2.0) for r, g in enumerate(every))
    assert counted[0, -1] == pytest.approx(by_hand, abs=1e-12)
