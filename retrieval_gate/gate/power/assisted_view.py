"""What `power` assumes under gate.labels human+llm: the prediction-powered checks' view."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.ids import BoolArray, FloatArray, IntArray
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold
from retrieval_gate.gate.modes.assisted import (
    JudgeLabels,
    assisted_comparisons,
    card_of,
    human_judged,
    judge_scores,
    labels_of,
    pooled,
    pools_of,
    restricted,
    scores_at,
)


def power_view(
    config: GateConfig,
    dataset: Dataset,
    baseline: Baseline,
    scores: Mapping[str, FloatArray],
    slices: Mapping[str, IntArray],
    policy: tuple[
        Mapping[str, Threshold], Mapping[str, Mapping[str, Threshold]], ComparisonSettings
    ],
    *,
    judge: JudgeLabels | InputError | None,
) -> PowerView:
    """What `power` assumes under gate.labels human+llm: the baseline's scores and slices
    over the human-judged queries; with a trusted judge, the assisted checks (gated, levels
    and reasons as `check` decides them, n the human-judged count) and per (metric, slice) the
    factor PPI++ shrinks the sd by at its best weight, sqrt(1 - rho^2 N / (n + N)), rho the
    correlation of people's and the judge's per-query scores of the baseline on the n
    human-judged queries, N the judge-only ones. Without a layer or a trusted judge, the
    human-only figures (`judge` the error reading its layer raised). And the sentence that
    says which."""
    assert config.judge is not None
    labelled = human_judged(dataset)
    n, total = int(labelled.sum()), len(labelled)
    view = PowerView(
        scores=scores_at(scores, labelled),
        slices=restricted(slices, labelled),
        checks=None,
        factors={},
        note="",
    )
    if isinstance(judge, InputError):
        return dataclasses.replace(
            view, note=f"human-only figures on the {n} human-judged queries: {judge}"
        )
    labels = labels_of(judge, dataset)
    card = card_of(dataset.qrels, labels.qrels)
    why_not = card.distrust(config.judge.trust.min_pairs, config.judge.trust.min_kappa)
    if why_not:
        return dataclasses.replace(
            view,
            note=f"human-only figures on the {n} human-judged queries: LLM labels are "
            f"provisional ({why_not})",
        )
    judged = judge_scores(
        baseline,
        pooled(
            labels.qrels, pools_of([baseline], baseline.query_ids, config.judge.depth or config.k)
        ),
    )
    made, counts, _ = assisted_comparisons(
        (scores, scores), (judged, judged), labelled, slices, *policy
    )
    factors = {
        (c.metric, c.slice): sd_factor(
            scores[c.metric], judged[c.metric], slices[c.slice], labelled
        )
        for c in made
    }
    checks = tuple(dataclasses.replace(c, n=k) for c, k in zip(made, counts, strict=True))
    return dataclasses.replace(
        view,
        checks=checks,
        factors=factors,
        note=f"gate.labels human+llm: prediction-powered figures (a t-test), n the "
        f"human-judged queries ({n}) beside the judge's labels on the other {total - n}; each "
        "check's sd is shrunk as PPI++ shrinks it at its best weight, by the correlation of "
        "people's and the judge's per-query scores of the baseline (a stand-in for that of "
        "the deltas); queries needed are human-judged ones",
    )


def sd_factor(
    people: FloatArray, machine: FloatArray, rows: IntArray, labelled: BoolArray
) -> float:
    """What a check on `rows` has its sd scaled by: sqrt(1 - r^2 x the share of its queries
    only the judge labelled), r the correlation of people's and the judge's scores on the
    human-judged ones (0 with under 3 of them, or either side constant: none is measured)."""
    people, machine = np.asarray(people), np.asarray(machine)
    rows = np.asarray(rows, dtype=np.int64)
    ours = rows[labelled[rows]]
    if not (ours.size >= 3 and people[ours].std() > 0 and machine[ours].std() > 0):
        return 1.0
    rho = float(np.corrcoef(people[ours], machine[ours])[0, 1])
    share = (rows.size - ours.size) / rows.size
    return float(np.sqrt(max(0.0, 1.0 - rho * rho * share)))


@dataclass(frozen=True, kw_only=True)
class PowerView:
    """`power_view`'s answer: what `power.estimate` runs on in human+llm mode."""

    scores: dict[str, FloatArray]
    slices: dict[str, IntArray]
    checks: tuple[Comparison, ...] | None
    """The assisted checks (n = human-judged), or None for human-only figures."""
    factors: dict[tuple[str, str], float]
    note: str
