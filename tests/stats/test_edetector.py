"""The drift's e-values: exact under the sign-flip null, large for a real drop; the bar."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from retrieval_gate.stats.edetector import log_bar, log_e_values, reaches

BAR = math.log(1000)


def _log_e(drops: list[float] | np.ndarray, bar: float = BAR) -> float:
    return float(log_e_values(np.asarray(drops, dtype=np.float64), bar)[0])


@pytest.mark.parametrize("bar", [math.log(20), BAR, math.log(1e6)])
@pytest.mark.parametrize(
    "sizes",
    [
        [0.3] * 10,
        [1.0, 0.5, 0.25, 0.1, 0.0, 0.0, 0.7, 0.05, 0.9, 0.3, 0.6, 2.0],
        [0.01] * 14,
    ],
)
def test_over_every_sign_pattern_the_e_value_averages_at_most_1(
    sizes: list[float], bar: float
) -> None:
    # The sign-flip null exactly: given the sizes, each of the 2^n sign patterns is as likely.
    magnitudes = np.array(sizes)
    patterns = np.array(list(itertools.product((-1.0, 1.0), repeat=magnitudes.size)))
    values = np.exp(log_e_values(patterns * magnitudes, bar))
    assert math.fsum(values) / len(values) <= 1.0 + 1e-12
    # Scale does not matter (the bet follows the sizes); every query dropping is the most.
    assert _log_e(magnitudes * 7.0, bar) == pytest.approx(_log_e(magnitudes, bar))
    assert max(values) == pytest.approx(math.exp(_log_e(magnitudes, bar)))


def test_a_real_drop_reaches_the_bar_and_a_gain_is_none() -> None:
    rng = np.random.default_rng(11)
    noise = rng.normal(0.0, 0.15, 600)
    assert _log_e(noise + 0.03) > BAR
    assert _log_e(noise - 0.03) < 0.0
    # By hand: log E = a z - a^2 / 2, a = sqrt(2 log bar), z the self-normalized sum.
    x = noise + 0.03
    z = x.sum() / math.sqrt((x * x).sum())
    assert _log_e(x) == pytest.approx(math.sqrt(2 * BAR) * z - BAR, rel=1e-12)


def test_undefined_queries_are_left_out_and_no_differences_is_no_evidence() -> None:
    rows = np.array([[0.2, np.nan, 0.4, np.inf], [0.2, 0.4, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    found = log_e_values(rows, BAR)
    assert found[0] == found[1]
    assert found[2] == 0.0


def test_what_n_queries_can_reach_and_the_bar() -> None:
    # n queries that all drop alike give z = sqrt(n): the bar of 1000 needs 2 log 1000 = 13.8.
    assert not reaches(13, BAR)
    assert reaches(14, BAR)
    assert _log_e([0.1] * 13) < BAR <= _log_e([0.1] * 14)
    assert log_bar(50, 0.05) == pytest.approx(math.log(1000))
    assert log_bar(50, 0.0125) == pytest.approx(math.log(4000))


def test_n_queries_reach_a_bar_of_exactly_n_over_2_at_their_most() -> None:
    # 14 queries dropping alike: z = sqrt(14), log E = sqrt(2 * 7) sqrt(14) - 7 = 7, the
    # bar itself; E at the bar trips (the drift's log_e >= log_bar), so 14 can reach it.
    assert reaches(14, 7.0)
    assert not reaches(13, 7.0)
    assert _log_e([0.1] * 14, 7.0) == pytest.approx(7.0, rel=1e-12)
