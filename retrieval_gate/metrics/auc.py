"""AUC per query and GAUC: Mann-Whitney over the judged retrieved documents, by the run's score.

A query's AUC is the chance that a relevant retrieved document is scored above a non-relevant
one, ties counting half; GAUC averages the AUCs weighted by each query's scored documents.
Both are undefined (NaN) for a query with one class, which means and the gate then leave out.
"""

from __future__ import annotations

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.metrics.measures import REL, _rel
from retrieval_gate.metrics.ranking import NOT_RETRIEVED, RankedJudgments
from retrieval_gate.metrics.spec import NONNEGATIVE, UNIT, MetricSpec, Param, measure

UNJUDGED = Param(
    "unjudged",
    "choice",
    "skip",
    "skip = only judged retrieved docs are scored (an unjudged doc is unknown, not wrong); "
    "nonrel = unjudged and negative-grade retrieved docs count as non-relevant",
    choices=("skip", "nonrel"),
)
WEIGHT = Param(
    "weight",
    "choice",
    "docs",
    "a query's weight: docs = its scored documents (the GAUC of the click-model papers), "
    "uniform = 1 (the plain mean of the per-query AUCs)",
    choices=("docs", "uniform"),
)


def auc_and_weight(spec: MetricSpec, ranked: RankedJudgments) -> tuple[FloatArray, FloatArray]:
    """Each query's AUC (NaN with no relevant or no non-relevant scored doc) and its count of
    scored docs.

    The score of a doc is the run's (`RankedJudgments.scores`), or minus its rank when the
    run's scores are not held; equal scores count half, as the Mann-Whitney U with average
    ranks (and scikit-learn's roc_auc_score) count them."""
    grades = ranked.top(spec.k)
    num_queries, width = grades.shape
    if ranked.scores is not None:
        scores = ranked.scores[:, :width]
    else:
        scores = np.broadcast_to(-np.arange(width, dtype=np.float64), grades.shape)
    scored = grades >= 0 if spec.param("unjudged") == "skip" else grades != NOT_RETRIEVED
    relevant = grades >= _rel(spec)
    query, rank = np.nonzero(scored)
    score = scores[query, rank]
    positive = relevant[query, rank]
    # Average ranks of the scores within each query (ascending, ties share their mean rank):
    # U = sum of the positives' ranks - P (P + 1) / 2.
    order = np.lexsort((score, query))
    query, score, positive = query[order], score[order], positive[order]
    counts = np.bincount(query, minlength=num_queries)
    position = np.arange(1, len(query) + 1) - np.repeat(np.cumsum(counts) - counts, counts)
    new_group = np.ones(len(query), dtype=bool)
    new_group[1:] = (query[1:] != query[:-1]) | (score[1:] != score[:-1])
    group = np.cumsum(new_group) - 1
    # `group` numbers the runs of equal scores 0, 1, ... in order: none is empty.
    average = (np.bincount(group, weights=position) / np.bincount(group))[group]
    num_pos = np.bincount(query, weights=positive, minlength=num_queries)
    num_neg = counts - num_pos
    rank_sum = np.bincount(query, weights=np.where(positive, average, 0.0), minlength=num_queries)
    pairs = num_pos * num_neg
    u = rank_sum - num_pos * (num_pos + 1.0) / 2.0
    auc = np.full(num_queries, np.nan)
    np.divide(u, pairs, out=auc, where=pairs > 0)
    return auc, counts.astype(np.float64)


@measure(
    "auc",
    "P(a relevant judged retrieved doc is scored above a non-relevant one), ties half; "
    "undefined for a one-class query",
    params=(REL, UNJUDGED),
    undefined=True,
    needs_scores=True,
    example="auc(unjudged=nonrel)@100",
    bounds=UNIT,
)
def auc(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Mann-Whitney AUC of each query over its scored docs (within k when given)."""
    return auc_and_weight(spec, ranked)[0]


@measure(
    "gauc",
    "group AUC: per-query AUCs averaged, weighted by scored docs; the per-query value is "
    "auc * weight / mean weight, so its mean over defined queries is the GAUC",
    params=(REL, UNJUDGED, WEIGHT),
    undefined=True,
    needs_scores=True,
    example="gauc(weight=uniform)",
    bounds=NONNEGATIVE,
)
def gauc(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """sum_q w_q AUC_q / sum_q w_q over the defined queries, spread over them as
    AUC_q w_q / mean(w) so that the plain mean of the column is that GAUC."""
    values, weight = auc_and_weight(spec, ranked)
    if spec.param("weight") == "uniform":
        weight = np.ones_like(weight)
    defined = ~np.isnan(values)
    if not defined.any():
        return values
    mean_weight = float(weight[defined].mean())
    return np.where(defined, values * weight / mean_weight, np.nan)
