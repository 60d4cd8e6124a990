"""Measures for incomplete judgments: trec_eval's infAP and condensed (judged-only) lists.

References (commits read):
- trec_eval (usnistgov/trec_eval @ f425365): m_infap.c:40-94 (te_calc_infap), trec_eval.h:239
  (INFAP_EPSILON = .00001), form_res_rels.c:172-188 (a retrieved doc absent from the qrels is
  RELVALUE_NONPOOL, one the qrels grade < 0 is RELVALUE_UNJUDGED, "in pool but unjudged"),
  form_res_rels.c:202-217 (-J, judged_docs_only_flag: docs that are not judged are thrown out
  of the ranking before any measure; R still counts every judged relevant doc).
- ir_measures (terrierteam/ir_measures @ dc04a88f): providers/pytrec_eval_provider.py:27-43
  and :204 (`judged_only=True` on P, RR, Rprec, AP, nDCG, R and Success runs pytrec_eval with
  judged_docs_only_flag=1, i.e. trec_eval's -J); measures/infap.py (infAP is trec_eval's).

trec_eval's -M N (form_res_rels.c:115-117) cuts each query's sorted list to its first N docs
before any measure: that is our metrics on the run cut to its top N, not `@N` cutoffs. `@N`
agrees for map/map_cut, recall_k, P_k and ndcg_cut_k with k <= N, recip_rank, success and the
counts, but not for P_k with k > N (it divides by k), ndcg and ndcg_cut_k with k > N (ideal
over all relevant docs / over k), Rprec, bpref or infAP (tests/metrics/test_incomplete.py).

In our grade matrix a doc absent from the qrels is NaN (trec_eval's NONPOOL), a grade < 0 is
trec_eval's pooled-but-unjudged, and -inf is past the end of the results.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.metrics.measures import REL
from retrieval_gate.metrics.ranking import NOT_RETRIEVED, RankedJudgments
from retrieval_gate.metrics.spec import REGISTRY, UNIT, Measure, MetricSpec, measure

INFAP_EPSILON = 0.00001
"""trec_eval.h:239, the smoothing of the judged-relevant fraction above a relevant doc."""

CONDENSED_OF = ("ndcg", "ap", "rr", "precision", "recall", "hit_rate", "r_precision")
"""The measures that get a `<name>_condensed` twin: those ir_measures takes judged_only= on."""


@measure(
    "infap",
    "inferred AP (Yilmaz & Aslam 2006), trec_eval's infAP: qrels grades < 0 are pooled but "
    "unjudged, docs absent from the qrels are unpooled",
    params=(REL,),
    cutoff="none",
    full_list=True,
    example="infap",
    bounds=UNIT,
)
def infap(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """m_infap.c:55-91. At each judged relevant doc of 0-based rank j > 0 it adds
    1/(j+1) + j/(j+1) * (pooled above / j) * ((rel above + eps) / (judged above + 2 eps)),
    where "pooled above" counts the judged and the pooled-but-unjudged docs above rank j and
    "judged above" the judged ones; at j = 0 it adds 1. Unpooled docs (absent from the qrels)
    are skipped but still take a rank. The sum is divided by R (left as is, i.e. 0, when R = 0).
    """
    rel = int(spec.param("rel"))
    grades = ranked.grades
    relevant = grades >= rel
    nonrel = (grades >= 0) & (grades < rel)
    pooled_unjudged = (grades < 0) & np.isfinite(grades)  # -inf: not retrieved; NaN: unpooled
    rel_above = _above(relevant)  # rel_so_far - 1 at a relevant doc
    nonrel_above = _above(nonrel)
    unjudged_above = _above(pooled_unjudged)
    fj = np.arange(grades.shape[1], dtype=np.float64)
    safe_fj = np.where(fj > 0, fj, 1.0)  # the j = 0 term is 1.0 (m_infap.c:73-74)
    term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
        (rel_above + nonrel_above + unjudged_above) / safe_fj
    ) * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON))
    term = np.where(fj > 0, term, 1.0)
    total = _floats(np.where(relevant, term, 0.0).sum(axis=1))
    num_rel = ranked.num_rel(rel)
    return _floats(np.where(num_rel > 0, total / np.where(num_rel > 0, num_rel, 1.0), total))


def condense(ranked: RankedJudgments) -> RankedJudgments:
    """The judged-only ranking (Sakai's condensed list, trec_eval -J): docs absent from the
    qrels or graded < 0 are removed and the judged ones move up, keeping their order.

    The qrels side (R, the ideal ranking) is unchanged, as in form_res_rels.c:202-217."""
    judged = ranked.grades >= 0
    order = np.argsort(~judged, axis=1, kind="stable")
    num_ret = judged.sum(axis=1).astype(np.int64)
    width = int(num_ret.max()) if len(num_ret) else 0
    grades = np.take_along_axis(ranked.grades, order, axis=1)[:, :width]
    grades[np.arange(width) >= num_ret[:, None]] = NOT_RETRIEVED
    return dataclasses.replace(ranked, grades=grades, num_ret=num_ret)


def _condensed(base: Measure) -> None:
    """Register `<base>_condensed`: `base` computed on the condensed ranking."""

    def compute(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
        return base.compute(MetricSpec(base.name, spec.params, spec.k), condense(ranked))

    example = base.example.replace(base.name, f"{base.name}_condensed", 1)
    measure(
        f"{base.name}_condensed",
        f"{base.name} on the judged-only (condensed) list: unjudged docs removed first "
        "(trec_eval -J, ir_measures judged_only=True)",
        params=base.params,
        cutoff=base.cutoff,
        example=example,
        full_list=True,  # judged docs past rank k move into the top k
        bounds=base.bounds,
    )(compute)


def _above(mask: np.ndarray) -> FloatArray:
    """How many ranks strictly above each rank `mask` holds."""
    return _floats(np.cumsum(mask, axis=1) - mask)


def _floats(values: Any) -> FloatArray:
    return np.asarray(values, dtype=np.float64)


for _name in CONDENSED_OF:
    _condensed(REGISTRY[_name])
