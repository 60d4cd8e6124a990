"""The core measures: each a numpy reduction over the grade matrix, registered by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.errors import MetricError
from retrieval_gate.metrics.ranking import RankedJudgments
from retrieval_gate.metrics.spec import (
    NONNEGATIVE,
    UNIT,
    MetricSpec,
    Param,
    format_value,
    measure,
    parse_gains,
)

EXP_GRADE_MAX = 1023
"""The highest grade gain=exp takes: 2^1024 is past the largest float."""
REL = Param("rel", "int", 1, "grades >= rel count as relevant")
GAIN = Param(
    "gain", "choice", "exp", "gain of grade g: exp = 2^g - 1, linear = g", choices=("exp", "linear")
)
GAINS = Param(
    "gains",
    "gains",
    "",
    "gains of the listed grades (others keep `gain`), e.g. gains=1:3;2:9 (trec_eval's "
    "ndcg.1=3,2=9 with gain=linear); the ideal ranking sorts by these gains",
)


def _floats(values: Any) -> FloatArray:
    """`values` as a float64 array (typing: numpy operators return Any)."""
    return np.asarray(values, dtype=np.float64)


def _divide(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    """numerator / denominator, 0 where the denominator is 0."""
    out = np.zeros_like(numerator, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def _rel(spec: MetricSpec) -> int:
    return int(spec.param("rel"))


def _relevant(spec: MetricSpec, ranked: RankedJudgments) -> np.ndarray:
    return ranked.top(spec.k) >= _rel(spec)


def _discount(width: int) -> FloatArray:
    return 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))


def gain(grades: FloatArray, spec: MetricSpec) -> FloatArray:
    """Gain of each grade: `gain`'s function, replaced by `gains` for the grades it lists.

    As trec_eval's gain_init.c (usnistgov/trec_eval, setup_gains/get_gain): a listed level
    gets its given gain (0 or negative allowed, level 0 too), an unlisted one its default;
    an unjudged or unretrieved doc gains 0."""
    positive = np.where(grades > 0, grades, 0.0)
    exponential = spec.param("gain") == "exp"
    if exponential and positive.size and float(positive.max()) > EXP_GRADE_MAX:
        raise MetricError(
            f"{spec}: a grade of {format_value(float(positive.max()))} under gain=exp makes "
            f"2^grade overflow (gain=exp takes grades up to {EXP_GRADE_MAX}); use "
            "gain=linear, or grades on a smaller scale"
        )
    gains = np.exp2(positive) - 1.0 if exponential else positive
    for grade, value in parse_gains(spec.param("gains")).items():
        gains = np.where(grades == grade, value, gains)
    return _floats(gains)


def _dcg(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    top = ranked.top(spec.k)
    return gain(top, spec) @ _discount(top.shape[1])


def _ideal_dcg(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    if not spec.param("gains"):
        ideal = ranked.ideal if spec.k is None else ranked.ideal[:, : spec.k]
        return gain(ideal, spec) @ _discount(ideal.shape[1])
    # Custom gains can reorder the grades and give grade 0 a gain: rank every judged qrel
    # (grade >= 0) by its gain, descending, keeping the positive ones, as m_ndcg.c's ideal
    # loop does (it stops at the first gain <= 0 of its levels sorted by gain).
    judged = ranked.qrels_grade >= 0
    query = ranked.qrels_query[judged]
    gains = gain(ranked.qrels_grade[judged], spec)
    keep = gains > 0
    query, gains = query[keep], gains[keep]
    order = np.lexsort((-gains, query))
    query, gains = query[order], gains[order]
    counts = np.bincount(query, minlength=len(ranked.query_ids))
    rank = np.arange(len(query)) - np.repeat(np.cumsum(counts) - counts, counts)
    inside = rank < (len(query) if spec.k is None else spec.k)
    weights = gains[inside] / np.log2(rank[inside] + 2.0)
    return np.bincount(query[inside], weights=weights, minlength=len(ranked.query_ids)).astype(
        np.float64
    )


@measure(
    "ndcg",
    "normalised DCG; log2(rank+1) discount, ideal ranking from all the qrels",
    params=(GAIN, GAINS),
    example="ndcg@10",
    shape="gain_sum",
    bounds=UNIT,
)
def ndcg(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """DCG@k / ideal DCG@k (0 when the query has no positive grade)."""
    return _divide(_dcg(spec, ranked), _ideal_dcg(spec, ranked))


@measure(
    "dcg",
    "discounted cumulative gain, log2(rank+1) discount",
    params=(GAIN, GAINS),
    example="dcg@10",
    shape="gain_sum",
    bounds=NONNEGATIVE,
)
def dcg(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Sum of gain / log2(rank + 1) over the first k ranks."""
    return _dcg(spec, ranked)


@measure(
    "ap",
    "average precision: mean of P@i at relevant ranks i <= k, over R",
    params=(REL,),
    aliases=("map",),
    example="ap@100",
    bounds=UNIT,
)
def ap(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """trec_eval's map / map_cut: divides by R, not by min(k, R)."""
    relevant = _relevant(spec, ranked)
    # Only relevant ranks add to the sum, so it runs over them alone (few, beside the whole
    # matrix), in rank order as trec_eval adds them: P@i is (relevant so far) / i there.
    query, rank = np.nonzero(relevant)
    counts = np.bincount(query, minlength=len(relevant))
    found = np.arange(1, len(query) + 1) - np.repeat(np.cumsum(counts) - counts, counts)
    total = np.bincount(query, weights=found / (rank + 1.0), minlength=len(relevant))
    return _divide(_floats(total), ranked.num_rel(_rel(spec)))


@measure(
    "rr",
    "reciprocal rank of the first relevant doc within k, else 0",
    params=(REL,),
    aliases=("mrr", "recip_rank"),
    example="rr@10",
    shape="first_relevant",
    bounds=UNIT,
)
def rr(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """1 / rank of the first relevant doc."""
    relevant = _relevant(spec, ranked)
    if relevant.shape[1] == 0:  # nothing retrieved for any query: argmax has no column
        return np.zeros(relevant.shape[0])
    first = np.argmax(relevant, axis=1)
    return np.where(relevant.any(axis=1), 1.0 / (first + 1.0), 0.0)


@measure(
    "precision",
    "relevant docs in the top k, divided by k",
    params=(REL,),
    cutoff="required",
    aliases=("p",),
    example="precision@10",
    shape="gain_sum",
    bounds=UNIT,
)
def precision(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """P@k: divides by k even when fewer docs were returned."""
    assert spec.k is not None  # the parser enforces the cutoff
    return _floats(_relevant(spec, ranked).sum(axis=1) / float(spec.k))


@measure(
    "recall",
    "relevant docs in the top k, divided by R (0 when R = 0)",
    params=(REL,),
    cutoff="required",
    aliases=("r",),
    example="recall@100",
    shape="gain_sum",
    bounds=UNIT,
)
def recall(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Recall@k."""
    found = _relevant(spec, ranked).sum(axis=1).astype(np.float64)
    return _divide(found, ranked.num_rel(_rel(spec)))


@measure(
    "hit_rate",
    "1 if any relevant doc is in the top k",
    params=(REL,),
    cutoff="required",
    aliases=("success", "hit", "hits"),
    example="hit_rate@10",
    shape="first_relevant",
    bounds=UNIT,
)
def hit_rate(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Success@k."""
    return _floats(_relevant(spec, ranked).any(axis=1).astype(np.float64))


@measure(
    "r_precision",
    "precision at rank R",
    params=(REL,),
    cutoff="none",
    aliases=("rprec", "r_prec"),
    full_list=True,
    bounds=UNIT,
)
def r_precision(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Relevant docs in the top R, divided by R."""
    num_rel = ranked.num_rel(_rel(spec))
    relevant = ranked.grades >= _rel(spec)
    within = np.arange(relevant.shape[1]) < num_rel[:, None]
    return _divide((relevant & within).sum(axis=1).astype(np.float64), num_rel)


@measure(
    "bpref",
    "binary preference: judged non-relevant docs ranked above each relevant one",
    params=(REL,),
    cutoff="none",
    full_list=True,
    bounds=UNIT,
)
def bpref(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """trec_eval's bpref: unjudged and negative-grade docs are skipped."""
    rel = _rel(spec)
    grades = ranked.grades
    relevant = grades >= rel
    nonrel_above = np.cumsum((grades >= 0) & (grades < rel), axis=1)
    num_rel = ranked.num_rel(rel)
    bound = np.minimum(ranked.num_nonrel(rel), num_rel)[:, None]
    penalty = np.minimum(nonrel_above, num_rel[:, None]) / np.where(bound > 0, bound, 1.0)
    credit = np.where(nonrel_above > 0, 1.0 - penalty, 1.0)
    return _divide(np.where(relevant, credit, 0.0).sum(axis=1), num_rel)


@measure(
    "err",
    "expected reciprocal rank; R = (2^g - 1) / 2^g_max, grades above g_max capped",
    params=(Param("g_max", "float", None, "the highest grade of the scale", low=0, low_open=True),),
    example="err(g_max=3)@20",
    bounds=UNIT,
)
def err(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Sum over ranks r of R_r / r times the chance no earlier doc satisfied the user."""
    g_max = float(spec.param("g_max"))
    grades = np.minimum(np.where(ranked.top(spec.k) > 0, ranked.top(spec.k), 0.0), g_max)
    # (2^g - 1) / 2^g_max, written so that no power overflows: g <= g_max, any g_max.
    satisfied = np.exp2(grades - g_max) - np.exp2(-g_max)
    not_yet = np.cumprod(1.0 - satisfied, axis=1)
    before = np.ones_like(not_yet)
    before[:, 1:] = not_yet[:, :-1]
    return _floats((satisfied * before) @ (1.0 / np.arange(1, grades.shape[1] + 1)))


@measure(
    "rbp",
    "rank-biased precision (1 - p) * sum of p^(rank-1) over relevant ranks",
    params=(
        Param("p", "float", None, "persistence", low=0, high=1, low_open=True, high_open=True),
        REL,
    ),
    example="rbp(p=0.8)",
    bounds=UNIT,
)
def rbp(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Binary RBP, truncated at k when a cutoff is given."""
    p = float(spec.param("p"))
    relevant = _relevant(spec, ranked)
    weights = p ** np.arange(relevant.shape[1], dtype=np.float64)
    return (1.0 - p) * (relevant @ weights)


@measure(
    "judged",
    "1 - unjudged docs in the top k / k (trec_eval's 1 - unj_k); judged = grade >= 0",
    params=(
        Param(
            "of",
            "choice",
            "k",
            "k = trec_eval's 1 - unj_k (ranks past a short list count as judged); "
            "retrieved = ir_measures' Judged@k: judged / min(k, retrieved), 0 if none",
            choices=("k", "retrieved"),
        ),
    ),
    cutoff="required",
    example="judged@10",
    bounds=UNIT,
)
def judged(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """trec_eval 10's `unj` turned round: judged@k = 1 - unj_k, unj_k = unjudged docs among
    the top k / k (m_unjudged.c). A doc is unjudged when the qrels lack it or grade it < 0;
    ranks past the end of a short list are not unjudged, and a query nothing was retrieved
    for scores 1 (trec_eval -c sets its unj to 0). `of=retrieved` is ir_measures' Judged@k:
    judged docs in the top k / min(k, docs retrieved), 0 when nothing was retrieved (its
    Measure.DEFAULT); unlike ir_measures, a grade < 0 still counts as unjudged here.
    """
    assert spec.k is not None
    judged_docs = _floats((ranked.top(spec.k) >= 0).sum(axis=1))
    retrieved = _floats(np.minimum(ranked.num_ret, spec.k))
    if spec.param("of") == "retrieved":
        return _divide(judged_docs, retrieved)
    return _floats(1.0 - (retrieved - judged_docs) / float(spec.k))


@measure("num_ret", "docs retrieved (within k when given)", integer=True, bounds=NONNEGATIVE)
def num_ret(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Number of retrieved docs."""
    count = ranked.num_ret if spec.k is None else np.minimum(ranked.num_ret, spec.k)
    return count.astype(np.float64)


@measure(
    "num_rel",
    "R: judged docs with grade >= rel",
    params=(REL,),
    cutoff="none",
    integer=True,
    bounds=NONNEGATIVE,
)
def num_rel(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """R."""
    return _floats(ranked.num_rel(_rel(spec)).copy())


@measure(
    "num_rel_ret",
    "relevant docs retrieved (within k when given)",
    params=(REL,),
    integer=True,
    full_list=False,
    bounds=NONNEGATIVE,
)
def num_rel_ret(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Number of relevant retrieved docs."""
    return _floats(_relevant(spec, ranked).sum(axis=1).astype(np.float64))
