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


def test_the_outer_interval_divides_by_the_denominator_that_widens_it() -> None:
    from retrieval_gate.gate.explain.label_hole_extremes import _outer

    # One query, two unjudged docs of weights 1 and -0.5 (current minus baseline), 0.25 from
    # the judged ones, gains 0 to 3, a denominator between 0.5 and 4. The numerator spans
    # 0.25 + 3 x (0, -0.5) = -1.25 to 0.25 + 3 x (1, 0) = 3.25: the lowest value is -1.25
    # over the smallest denominator, the highest 3.25 over it too.
    low, high = _outer(
        parse_metric("dcg@5"),
        np.array([[1.0, -0.5]]),
        np.array([0.25]),
        np.array([0.0, 1.0, 3.0]),
        np.array([[0.5, 4.0]]),
    )
    assert (low.tolist(), high.tolist()) == ([-2.5], [6.5])
    # nDCG: a numerator of 0.1 to 0.3, and a denominator from 0 (no relevant doc: at least
    # the least gain, 1, once one gains) to 2: 0.1 / 2 to 0.3 / 1.
    low, high = _outer(
        parse_metric("ndcg@5"),
        np.array([[0.2]]),
        np.array([0.1]),
        np.array([0.0, 1.0]),
        np.array([[0.0, 2.0]]),
    )
    assert (low.tolist(), high.tolist()) == ([0.05], [pytest.approx(0.3, abs=1e-15)])
