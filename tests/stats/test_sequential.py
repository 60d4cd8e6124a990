"""The group-sequential t statistics: their formula, their bounds, their level at the looks."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from retrieval_gate.stats.sequential import LOOKS, MIN_SIDE, bound, drop_t
from retrieval_gate.stats.significance import t_quantile
from tests.helpers.paths import DOCS

LEVEL = 0.05


def test_the_looks_spend_the_whole_level_once_and_in_order() -> None:
    shares = [share for share, _ in LOOKS]
    assert shares == sorted(shares)
    assert shares[0] > 0
    assert shares[-1] < 1
    assert math.isclose(sum(weight for _, weight in LOOKS), 1.0)


def test_the_statistic_is_the_drop_past_the_null_over_its_standard_error() -> None:
    deltas = np.array([-0.3, -0.1, 0.0, -0.2, 0.1, -0.25])
    drop, sd, n = 0.125, float(np.std(deltas, ddof=1)), 6
    assert drop_t(deltas, 0.02) == pytest.approx((drop - 0.02) / (sd / math.sqrt(n)))
    # Drawn from a set of 10: the set's mean is 6/10 known, the error shrinks by sqrt(4/10).
    shrunk = sd * math.sqrt((1 - n / 10) / n)
    assert drop_t(deltas, 0.02, population=10) == pytest.approx((drop - 0.02) / shrunk)


def test_the_whole_set_drawn_knows_its_mean_and_more_cannot_be_drawn() -> None:
    deltas = np.array([-0.3, -0.1, 0.0, -0.2])
    # Every delta of the set: its mean drop 0.15 is known, past 0.02 for certain, and short
    # of 0.2 for certain.
    assert drop_t(deltas, 0.02, population=4) == math.inf
    assert drop_t(deltas, 0.2, population=4) == -math.inf
    with pytest.raises(ValueError, match="5 deltas cannot be drawn from a set of 4"):
        drop_t(np.append(deltas, 0.1), 0.02, population=4)


def test_deltas_that_do_not_vary_are_certain_either_way() -> None:
    assert drop_t(np.full(40, -0.9), 0.02) == math.inf
    assert drop_t(np.full(40, 0.1), 0.02) == -math.inf
    assert drop_t(np.full(40, -0.02), 0.02) == 0.0


def test_the_bound_is_the_one_sided_student_quantile() -> None:
    assert bound(0.01, 31) == pytest.approx(t_quantile(0.99, 30))
    assert bound(0.01, 31) > bound(0.01, 301) > bound(0.02, 301)


def _deltas(rng: np.random.Generator, size: int) -> np.ndarray:
    """Paired deltas in [-1, 1]: mean about 0, 30% ties at exactly 0, clipped tails."""
    values = np.clip(rng.normal(0.0, 0.3, size), -0.9, 0.9)
    values[rng.random(size) < 0.3] = 0.0
    return values


def _false_alarms(trials: int, size: int, population: bool) -> float:
    """Share of seeded sets whose statistic at any planned look reached its bound, the level
    shared over the looks as `LOOKS` says: at the null, the set's own mean or 0."""
    hits = 0
    for trial in range(trials):
        values = _deltas(np.random.default_rng([7, trial]), size)
        null = -float(values.mean()) if population else 0.0
        for share, weight in LOOKS:
            n = math.ceil(share * size)
            t = drop_t(values[:n], null, population=size if population else None)
            if t >= bound(LEVEL * weight, n):
                hits += 1
                break
    return hits / trials


@pytest.mark.parametrize("population", [False, True])
def test_at_the_null_the_looks_together_keep_the_level(population: bool) -> None:
    # Of a sample's mean (independent draws, mean 0), and of a set's mean drawn without
    # replacement: the finite-population correction must not make the second liberal.
    rate = _false_alarms(600, 300, population)
    assert rate <= LEVEL
    assert rate > 0.005  # and the bounds are not so wide that they never fire


def test_a_set_past_the_null_shows_at_half() -> None:
    # 300 deltas dropping 8pt against 2pt tolerated: half the set shows it.
    values = _deltas(np.random.default_rng(3), 300) - 0.08
    assert drop_t(values[:150], 0.02, population=300) > bound(LEVEL, 150)
    assert MIN_SIDE <= 150


def test_the_queries_a_look_needs_are_those_the_docs_state() -> None:
    text = " ".join((DOCS / "gate.md").read_text(encoding="utf-8").split())
    stated = re.search(
        r"a look needs (\d+) of the check's queries on each side, so a slice of fewer than "
        r"(\d+) waits",
        text,
    )
    assert stated is not None
    assert (int(stated[1]), int(stated[2])) == (MIN_SIDE, 2 * MIN_SIDE)
