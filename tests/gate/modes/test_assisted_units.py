"""Each prediction-powered check's judge against people, by hand on a small case."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
from retrieval_gate.gate.modes.assisted import assisted_comparisons
from retrieval_gate.gate.modes.assisted_units import units_of
from retrieval_gate.stats.ppi import ppi_mean

METRIC = "ndcg@10"


def test_each_gated_check_with_enough_human_judged_queries_gets_its_figures() -> None:
    n_people, n_judge = 12, 30
    n = n_people + n_judge
    rng = np.random.default_rng(5)
    base = rng.uniform(0.4, 0.9, n)
    after = base + rng.normal(-0.05, 0.08, n)
    judge_base, judge_after = base + 0.03, after + rng.normal(0.03, 0.04, n)
    labelled = np.arange(n) < n_people
    human = ({METRIC: base}, {METRIC: after})
    judged = ({METRIC: judge_base}, {METRIC: judge_after})
    # As docs/llm-labels-statistics.md states: 10 human-judged queries in a slice measure
    # the judge there, 9 ("few") say nothing.
    slices = {
        "all": np.arange(n),
        "ten": np.arange(n_people - 10, n),
        "few": np.arange(n_people - 9, n),
    }
    settings = ComparisonSettings(min_size=5)
    made, _, weights = assisted_comparisons(
        human, judged, labelled, slices, {METRIC: Threshold(max_drop=0.05)}, {}, settings
    )
    units = units_of(made, weights, (human, judged), labelled, slices)
    assert [(u.slice, u.queries) for u in units] == [("all", n_people), ("ten", 10)]
    unit = units[0]
    ours = np.arange(n_people)
    differences = judge_after[ours] - after[ours]
    assert unit.queries == n_people
    assert unit.bias == pytest.approx(differences.mean())
    assert unit.high - unit.bias == pytest.approx(1.96 * differences.std(ddof=1))
    people, machine = after - base, judge_after - judge_base
    reach = np.abs(people[ours]) >= 0.05
    assert unit.decisive == int(reach.sum())
    assert unit.agree == int((np.sign(machine[ours][reach]) == np.sign(people[ours][reach])).sum())
    lam = weights[0]
    assert lam is not None
    se = ppi_mean(people[ours], machine[ours], machine[n_people:], lam=lam).se
    assert unit.effective == pytest.approx(min(people[ours].var(ddof=1) / se**2, n))
    assert unit.effective is not None
    assert unit.effective > n_people  # the judge's labels are worth something here


def test_a_check_with_a_floor_only_counts_every_human_judged_delta_as_decisive() -> None:
    n_people, n_judge = 12, 30
    n = n_people + n_judge
    rng = np.random.default_rng(6)
    base = rng.uniform(0.4, 0.9, n)
    after = base + rng.normal(-0.01, 0.05, n)
    judge_after = after + rng.normal(0.0, 0.02, n)
    labelled = np.arange(n) < n_people
    human = ({METRIC: base}, {METRIC: after})
    judged = ({METRIC: base}, {METRIC: judge_after})
    slices = {"all": np.arange(n)}
    made, _, weights = assisted_comparisons(
        human, judged, labelled, slices, {METRIC: Threshold(floor=0.1)}, {}, ComparisonSettings()
    )
    (unit,) = units_of(made, weights, (human, judged), labelled, slices)
    # No max_drop to reach: the sign of every delta people scored is compared.
    people, machine = after[:n_people] - base[:n_people], judge_after[:n_people] - base[:n_people]
    assert unit.decisive == n_people
    assert unit.agree == int((np.sign(machine) == np.sign(people)).sum())
