"""How far power's human+llm view shrinks each check's sd: by the people-judge correlation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from retrieval_gate.gate.power.assisted_view import sd_factor

PEOPLE = np.array([0.2, 0.5, 0.9, 0.4, 0.7, 0.1])
MACHINE = np.array([0.3, 0.4, 0.8, 0.6, 0.2, 0.5])
LABELLED = np.array([True, True, True, True, False, False])


def test_the_sd_shrinks_by_the_correlation_times_the_judge_only_share() -> None:
    r = stats.pearsonr(PEOPLE[:4], MACHINE[:4]).statistic
    # Six queries, two judged by the judge alone: a third of the check is its.
    expected = math.sqrt(1 - r * r / 3)
    assert sd_factor(PEOPLE, MACHINE, np.arange(6), LABELLED) == pytest.approx(expected, 1e-12)
    # Three human-judged queries are enough to measure it; one of the four is the judge's.
    three = stats.pearsonr(PEOPLE[:3], MACHINE[:3]).statistic
    rows = np.array([0, 1, 2, 4])
    assert sd_factor(PEOPLE, MACHINE, rows, LABELLED) == pytest.approx(
        math.sqrt(1 - three * three / 4), 1e-12
    )
    # Every query judged by people: nothing to shrink.
    assert sd_factor(PEOPLE, MACHINE, np.arange(4), LABELLED) == 1.0


@pytest.mark.parametrize(
    "people",
    [np.full(6, 0.5), np.array([0.2, 0.2, 0.2, 0.2, 0.7, 0.1])],  # constant where people judged
)
def test_without_a_measured_correlation_the_sd_is_kept(people: np.ndarray) -> None:
    assert sd_factor(people, MACHINE, np.arange(6), LABELLED) == 1.0
    assert sd_factor(MACHINE, people, np.arange(6), LABELLED) == 1.0


def test_fewer_than_three_human_judged_queries_measure_no_correlation() -> None:
    rows = np.array([0, 1, 4, 5])  # two judged by people
    assert sd_factor(PEOPLE, MACHINE, rows, LABELLED) == 1.0
    assert sd_factor(PEOPLE, MACHINE, np.array([], dtype=np.int64), LABELLED) == 1.0
