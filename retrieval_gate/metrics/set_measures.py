"""Set-based measures users of trec_eval, ranx and BEIR look for: trec_eval's set_P,
set_recall and set_F, ranx's f1@k, BEIR's capped recall R_cap@k, and `hit@k`.

Importing this module registers them in `measures.REGISTRY`. Where each is defined
(commits read):
- trec_eval (usnistgov/trec_eval @ f4253652): m_set_P.c (num_rel_ret / num_ret, left at
  0 when nothing was retrieved), m_set_recall.c (num_rel_ret / num_rel, 0 when R = 0),
  m_set_F.c ((x + 1) P R / (x P + R), x = 1 by default, computed only when num_rel_ret > 0,
  else 0; `-m set_F.0.5` prints as set_F_0.5, meas_init.c append_string);
  form_res_rels.c:218-241 (num_ret counts every retrieved doc, judged or not; a doc is
  relevant when its grade >= the relevance level, so negative grades never are).
- ranx (AmenRa/ranx @ 2cae52f0): ranx/metrics/f1.py:12-28: 2 P@k R@k / (P@k + R@k) with
  P@k = hits / k (k even past a short list), R@k = hits / R; 0 when R = 0, when k = 0 and
  nothing was retrieved, or when no relevant doc is in the top k. Without @k (k = 0) ranx
  uses k = docs retrieved: that is trec_eval's set_F.
- BEIR (beir-cellar/beir @ ef83d293): beir/retrieval/custom_metrics.py:37-62 `recall_cap`:
  relevant docs (grade > 0) in the top k / min(R, k); BEIR divides by zero when R = 0, we
  score 0 there as recall@k does.
"""

from __future__ import annotations

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.metrics.measures import (
    REL,
    _divide,
    _floats,
    _rel,
    _relevant,
)
from retrieval_gate.metrics.ranking import RankedJudgments
from retrieval_gate.metrics.spec import UNIT, MetricSpec, Param, measure

WEIGHT = Param(
    "weight",
    "float",
    1.0,
    "trec_eval's set_F parameter x: F = (1 + x) P R / (x P + R), so x is beta^2 of van "
    "Rijsbergen's F_beta (x > 1 favours recall)",
    low=0,
)


def _found(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """Relevant retrieved docs (within k when given), per query."""
    return _floats(_relevant(spec, ranked).sum(axis=1))


@measure(
    "set_precision",
    "relevant retrieved / docs retrieved (trec_eval's set_P); 0 when nothing was retrieved",
    params=(REL,),
    cutoff="none",
    aliases=("set_p",),
    full_list=True,
    bounds=UNIT,
)
def set_precision(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """trec_eval's set_P: precision over the whole retrieved list, no filling to k."""
    return _divide(_found(spec, ranked), _floats(ranked.num_ret))


@measure(
    "set_recall",
    "relevant retrieved / R (trec_eval's set_recall); 0 when R = 0",
    params=(REL,),
    cutoff="none",
    full_list=True,
    bounds=UNIT,
)
def set_recall(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """trec_eval's set_recall: recall over the whole retrieved list."""
    return _divide(_found(spec, ranked), ranked.num_rel(_rel(spec)))


@measure(
    "set_f",
    "trec_eval's set_F: (1 + x) P R / (x P + R) of set_precision and set_recall, x = weight; "
    "0 when no relevant doc was retrieved",
    params=(WEIGHT, REL),
    cutoff="none",
    full_list=True,
    example="set_f(weight=0.5)",
    bounds=UNIT,
)
def set_f(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """m_set_F.c, computed the same way: P and R first, then the weighted harmonic mean."""
    x = float(spec.param("weight"))
    found = _found(spec, ranked)
    p = _divide(found, _floats(ranked.num_ret))
    r = _divide(found, ranked.num_rel(_rel(spec)))
    return np.where(found > 0, _divide((x + 1.0) * p * r, x * p + r), 0.0)


@measure(
    "f1",
    "harmonic mean of precision@k and recall@k (ranx's f1@k): 2 hits / (k + R)",
    params=(REL,),
    cutoff="required",
    example="f1@10",
    bounds=UNIT,
)
def f1(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """ranx's f1@k: P@k divides by k even past a short list; 0 when no relevant doc is in
    the top k (which includes R = 0)."""
    assert spec.k is not None  # the parser enforces the cutoff
    found = _found(spec, ranked)
    p = found / float(spec.k)
    r = _divide(found, ranked.num_rel(_rel(spec)))
    return 2.0 * _divide(p * r, p + r)  # f1.py:28's order of operations


@measure(
    "capped_recall",
    "relevant docs in the top k / min(k, R) (BEIR's R_cap@k); 0 when R = 0",
    params=(REL,),
    cutoff="required",
    aliases=("r_cap", "recall_cap"),
    example="capped_recall@100",
    bounds=UNIT,
)
def capped_recall(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """BEIR's recall_cap: recall that a run returning k docs can reach 1 on."""
    assert spec.k is not None
    num_rel = ranked.num_rel(_rel(spec))
    return _divide(_found(spec, ranked), np.minimum(num_rel, float(spec.k)))
