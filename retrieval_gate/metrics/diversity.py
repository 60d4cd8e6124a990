"""Intent-aware (diversity) measures over subtopic qrels, exactly as TREC's ndeval computes them."""

# Reference read: ndeval.c "version 4.5 (Mon 29 Apr 2013)" as vendored by pyndeval 0.0.8
# (seanmacavaney/pyndeval: src/ndeval.c, src/pyndeval.c, pyndeval/__init__.py), which
# ir_measures' pyndeval provider calls. tests/metrics/test_diversity.py compares every measure
# here with pyndeval at 1e-9. What ndeval does, and so what this module does:
# - Relevance is binary per (doc, subtopic): ndeval caps a judgment at 1 (processQrels),
#   pyndeval keeps judgment >= relevance_level; here judgment >= `rel` (default 1).
# - Only "actual" subtopics count: those with at least one relevant doc (actualSubtopics);
#   A is their number. A topic with A = 0 scores 0 on every measure, except that ndeval's
#   nNRBP is 0/0 = NaN there (renormalize): we score it 0, as a query with no relevant doc
#   scores 0 on ndcg. Likewise nNRBP = 0 when alpha = 0 and beta = 1 (both NRBPs are 0).
# - A doc's gain at rank r: the sum over its relevant subtopics j of (1 - alpha)^c_j, c_j the
#   docs above r relevant to j (computeDCG), summed in subtopic order (ascending numeric ids,
#   ndeval's subtopic numbers; ids that are not whole numbers after them, as strings).
# - alpha-DCG@k = sum_{r<=k} gain_r / log2(r+1) divided by the "ideal ideal" sum_{r<=k}
#   A (1-alpha)^(r-1) / log2(r+1), except at k = 1, where ndeval leaves it undivided (its
#   normalising loop starts at rank 2), so alpha_dcg@1 and err_ia@1 can exceed 1. ERR-IA@k
#   is the same with 1/r for the discount. The log is ndeval's log(2)/log(r+1).
# - alpha-nDCG@k and nERR-IA@k divide by the same measure of the ideal ranking, which ndeval
#   builds greedily over every judged doc of the topic: at each rank the doc of largest gain
#   given the ranks above, ties to the larger doc id (strcmp); the greedy ranking is not
#   always optimal, so both can exceed 1. Each is 0 when the run's alpha-DCG@k is 0.
# - NRBP = (1 - (1-alpha) beta) / A * sum_r gain_r beta^(r-1) over the whole run; nNRBP is
#   NRBP over the ideal ranking's NRBP.
# - MAP-IA: the mean over the actual subtopics of that subtopic's AP (sum of precision at the
#   ranks of its relevant docs over its relevant doc count), whole run.
# - P-IA@k = (relevant (doc, subtopic) pairs in the top k) / (k A), dividing by k even past a
#   short list; strec@k (s_recall) = subtopics with a relevant doc in the top k / A.
# - Ranks: ndeval sorts a run by its rank column, or with -traditional by score descending,
#   then doc id descending: trec_eval's order, and ours. pyndeval (so ir_measures) sorts by
#   score descending, then doc id ASCENDING: on tied scores it can differ from us.
# - A doc missing from the subtopic qrels is non-relevant to every subtopic. ndeval averages
#   over the topics both in the qrels and the run; we score every labelled query (a query the
#   run lacks scores 0, as trec_eval -c), and a labelled query absent from the subtopic qrels
#   is a topic with A = 0.
# - ndeval's cutoffs stop at 20 (DEPTH); @k past 20 here continues the same definitions.

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from retrieval_gate.core.ids import FloatArray, ObjectArray, factorize
from retrieval_gate.core.run import Run
from retrieval_gate.errors import MetricError
from retrieval_gate.metrics.measures import REL
from retrieval_gate.metrics.ranking import RankedJudgments
from retrieval_gate.metrics.spec import NONNEGATIVE, UNIT, Cutoff, MetricSpec, Param, measure
from retrieval_gate.readers.subtopics import SubtopicQrels, subtopics_from_dict

SubtopicsLike = SubtopicQrels | Mapping[str, Mapping[str, Mapping[str, float]]]

ALPHA = Param(
    "alpha",
    "float",
    0.5,
    "redundancy intolerance: a doc's gain for a subtopic already covered c times above it "
    "is (1 - alpha)^c (ndeval -alpha)",
    low=0,
    high=1,
)
BETA = Param(
    "beta", "float", 0.5, "patience: rank r weighs beta^(r-1) (ndeval -beta)", low=0, high=1
)

DIVERSITY: frozenset[str] = frozenset(
    {"alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia", "p_ia", "s_recall", "nrbp", "nnrbp", "ap_ia"}
)
"""The measures that need subtopic qrels."""

NEEDS_SUBTOPICS = (
    "diversity metrics need subtopic qrels (each query's intents, 'topic subtopic docno "
    "judgment' lines): give them with `retrieval-gate evaluate --subtopics FILE`, "
    "`dataset.subtopics` in the config, or evaluate(..., subtopics=...)"
)


def _needs_subtopics(spec: MetricSpec, ranked: RankedJudgments) -> FloatArray:
    """The registry's entry point, which has no subtopics: `evaluate` computes these itself."""
    raise MetricError(f"{spec}: {NEEDS_SUBTOPICS}")


_MEASURES: tuple[tuple[str, str, tuple[Param, ...], Cutoff, tuple[str, ...], str], ...] = (
    (
        "alpha_ndcg",
        "alpha-nDCG (Clarke et al. 2008) as ndeval: alpha-DCG@k over the greedy ideal's",
        (ALPHA, REL),
        "required",
        (),
        "alpha_ndcg(alpha=0.5)@20",
    ),
    (
        "alpha_dcg",
        "ndeval's alpha-DCG@k: novelty-discounted DCG over its ideal-ideal sum (k = 1 undivided)",
        (ALPHA, REL),
        "required",
        (),
        "alpha_dcg@20",
    ),
    (
        "err_ia",
        "ndeval's ERR-IA@k: novelty-discounted gain / rank over its ideal-ideal sum",
        (ALPHA, REL),
        "required",
        (),
        "err_ia@20",
    ),
    (
        "nerr_ia",
        "ndeval's nERR-IA@k: ERR-IA@k over the greedy ideal ranking's",
        (ALPHA, REL),
        "required",
        (),
        "nerr_ia@20",
    ),
    (
        "p_ia",
        "intent-aware precision@k (ndeval's P-IA): relevant (doc, subtopic) pairs / k / subtopics",
        (REL,),
        "required",
        (),
        "p_ia@10",
    ),
    (
        "s_recall",
        "subtopic recall@k (ndeval's strec): subtopics covered in the top k / subtopics",
        (REL,),
        "required",
        ("strec", "subtopic_recall"),
        "s_recall@20",
    ),
    (
        "nrbp",
        "novelty- and rank-biased precision (Clarke et al. 2009) as ndeval, whole run",
        (ALPHA, BETA, REL),
        "none",
        (),
        "nrbp",
    ),
    (
        "nnrbp",
        "NRBP over the greedy ideal ranking's NRBP (ndeval's nNRBP; 0 when that is 0)",
        (ALPHA, BETA, REL),
        "none",
        (),
        "nnrbp",
    ),
    (
        "ap_ia",
        "intent-aware average precision (ndeval's MAP-IA): mean over subtopics of their AP",
        (REL,),
        "none",
        ("map_ia",),
        "ap_ia",
    ),
)
"""(name, help, parameters, cutoff rule, aliases, example) of each diversity measure."""

NORMALISED = frozenset({"alpha_ndcg", "nerr_ia", "nnrbp"})
"""The measures divided by the same measure of ndeval's greedy ideal ranking."""
_PAST_ONE = NORMALISED | {"alpha_dcg", "err_ia"}
"""The measures that can exceed 1: over a greedy ideal, or left undivided at k = 1."""

for _name, _help, _params, _cutoff, _aliases, _example in _MEASURES:
    measure(
        _name,
        f"{_help}; needs subtopic qrels",
        params=_params,
        cutoff=_cutoff,
        aliases=_aliases,
        example=_example,
        full_list=_cutoff == "none",
        bounds=NONNEGATIVE if _name in _PAST_ONE else UNIT,
    )(_needs_subtopics)


@dataclass(frozen=True, eq=False)
class _Topic:
    """One query's relevant (doc, subtopic) pairs: rows are docs (ids ascending), columns the
    actual subtopics in ndeval's order."""

    rows: dict[str, int]
    relevant: np.ndarray
    per_subtopic: FloatArray
    """Relevant docs of each subtopic (ndeval's nrelSub)."""


def diversity_scores(
    run: Run | Mapping[str, Mapping[str, float]],
    query_ids: ObjectArray | Sequence[str],
    subtopics: SubtopicsLike,
    specs: Sequence[MetricSpec],
) -> dict[str, FloatArray]:
    """Each diversity spec's value per query of `query_ids` (0 for a query the run lacks)."""
    from retrieval_gate.readers.dicts import run_from_dict

    if not isinstance(subtopics, SubtopicQrels):
        subtopics = subtopics_from_dict(subtopics)
    results = run if isinstance(run, Run) else run_from_dict(run)
    labelled = [str(q) for q in query_ids]
    values = {str(spec): np.zeros(len(labelled)) for spec in specs}
    if not specs:
        return values
    cutoffs = [spec.k for spec in specs]
    depth = None if None in cutoffs else max(int(k or 0) for k in cutoffs)
    ranked = _ranked(results, labelled, depth)
    groups: dict[tuple[float, float], list[MetricSpec]] = {}
    for spec in specs:
        alpha = float(spec.param("alpha")) if "alpha" in dict(spec.params) else 0.5
        groups.setdefault((float(spec.param("rel")), alpha), []).append(spec)
    for (rel, alpha), members in groups.items():
        topics = _topics(subtopics, rel)
        depth, beta = _ideal_extent(members)
        for position, query in enumerate(labelled):
            topic = topics.get(query)
            if topic is None:
                continue  # no relevant subtopic: ndeval's A = 0, every measure 0
            matrix = _judged(topic, ranked.get(query, []))
            gains = _gains(matrix, alpha)
            needed = depth > 0 or beta is not None
            ideal = _ideal_gains(topic, alpha, depth, beta) if needed else np.zeros(0)
            for spec in members:
                values[str(spec)][position] = _value(spec, alpha, topic, matrix, gains, ideal)
    return values


def _ideal_extent(specs: Sequence[MetricSpec]) -> tuple[int, float | None]:
    """How much of the ideal ranking `specs` divide by: the largest cutoff of those that
    divide by it (0 for none), and nNRBP's largest beta when one needs all of it."""
    normalised = [spec for spec in specs if spec.name in NORMALISED]
    depth = max((int(spec.k) for spec in normalised if spec.k is not None), default=0)
    betas = [float(spec.param("beta")) for spec in normalised if spec.name == "nnrbp"]
    return depth, max(betas, default=None)


def _ranked(run: Run, labelled: list[str], depth: int | None) -> dict[str, list[str]]:
    """Each labelled query's doc ids in trec_eval's order (score descending, then doc id
    descending), `depth` deep."""
    wanted = set(labelled)
    run_ids = run.query_ids.tolist()
    keep_query = np.fromiter((q in wanted for q in run_ids), dtype=bool, count=len(run_ids))
    rows = np.flatnonzero(keep_query[run.query]) if len(run.query) else np.zeros(0, np.int64)
    query, docs, score = run.query[rows], run.docs_at(rows), run.score[rows]
    codes, _ = factorize(docs, sort=True)  # code order is Python's str order: strcmp's
    order = np.lexsort((-codes, -score, query))
    query, docs = query[order], docs[order].tolist()
    out: dict[str, list[str]] = {}
    bounds = np.flatnonzero(np.diff(query)) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(docs)]
    for start, end in zip(starts, ends, strict=True):
        if end > start:
            stop = end if depth is None else min(end, start + depth)
            out[run_ids[int(query[start])]] = docs[start:stop]
    return out


def _subtopic_key(subtopic: str) -> tuple[int, int, str]:
    """ndeval's subtopic order: whole numbers ascending, then any other id as a string."""
    if subtopic.isascii() and subtopic.isdigit():
        return (0, int(subtopic), "")
    return (1, 0, subtopic)


def _topics(subtopics: SubtopicQrels, rel: float) -> dict[str, _Topic]:
    """The topics with at least one relevant (doc, subtopic) pair at relevance level `rel`."""
    keep = subtopics.judgment >= rel
    grouped: dict[int, dict[str, list[str]]] = {}
    for q, s, d in zip(
        subtopics.query[keep].tolist(),
        subtopics.subtopic[keep].tolist(),
        subtopics.docs[keep].tolist(),
        strict=True,
    ):
        grouped.setdefault(q, {}).setdefault(s, []).append(d)
    out: dict[str, _Topic] = {}
    for q, intents in grouped.items():
        order = sorted(intents, key=_subtopic_key)
        names = sorted({d for docs in intents.values() for d in docs})
        rows = {d: i for i, d in enumerate(names)}
        relevant = np.zeros((len(names), len(order)), dtype=bool)
        for j, subtopic in enumerate(order):
            relevant[[rows[d] for d in intents[subtopic]], j] = True
        per_subtopic = np.array([len(intents[s]) for s in order], dtype=np.float64)
        out[str(subtopics.query_ids[q])] = _Topic(rows, relevant, per_subtopic)
    return out


def _judged(topic: _Topic, docs: list[str]) -> np.ndarray:
    """Relevance of the ranked `docs` to each actual subtopic (a doc not judged relevant to
    any is a row of False)."""
    index = np.fromiter((topic.rows.get(d, -1) for d in docs), dtype=np.int64, count=len(docs))
    matrix = np.zeros((len(docs), topic.relevant.shape[1]), dtype=bool)
    hit = index >= 0
    matrix[hit] = topic.relevant[index[hit]]
    return matrix


def _gains(matrix: np.ndarray, alpha: float) -> FloatArray:
    """Each rank's novelty-discounted gain, summed over subtopics in order as ndeval does."""
    n = matrix.shape[0]
    if n == 0:
        return np.zeros(0)
    # (1 - alpha)^c by repeated multiplication, ndeval's `subtopicGain[j] *= (1.0 - alpha)`.
    powers = np.cumprod(np.concatenate(([1.0], np.full(n, 1.0 - alpha))))
    before = np.cumsum(matrix, axis=0) - matrix
    contribution = np.where(matrix, powers[before], 0.0)
    score = np.zeros(n)
    for j in range(matrix.shape[1]):
        score = score + contribution[:, j]
    return score


def _ideal_gains(topic: _Topic, alpha: float, depth: int, beta: float | None = None) -> FloatArray:
    """The gains of ndeval's greedy ideal ranking (idealResult), `depth` ranks deep, or with
    nNRBP's `beta` as deep as its sum can tell (and at least `depth`); never past the last
    positive gain. At each rank: the doc of largest gain given the ranks above, ties to the
    larger doc id.

    Lazy greedy, not a rescan of every doc per rank (quadratic: 100 s for one topic of 32,000
    docs): a doc's gain only falls as the ranks above fill its subtopics, so the heap's top,
    once its gain is recomputed and unchanged, is the largest. A gain is summed over the doc's
    own subtopics in ndeval's order, the bits of the sum over all of them (the rest add 0.0).
    NRBP's terms only fall down the ranking (gains never rise, beta^r falls): once one is
    below a quarter of the running sum's last bit, it and all after it leave the sum as is.
    """
    relevant = topic.relevant
    n = relevant.shape[0]
    covers = [np.flatnonzero(row).tolist() for row in relevant]
    gain = [1.0] * relevant.shape[1]

    def current(row: int) -> float:
        total = 0.0
        for j in covers[row]:
            total += gain[j]
        return total

    heap = [(-current(row), -row) for row in range(n)]
    heapq.heapify(heap)
    out: list[float] = []
    decay, total = 1.0, 0.0
    while heap and (beta is not None or len(out) < depth):
        stale, negative_row = heapq.heappop(heap)
        row = -negative_row
        best = current(row)
        if best != -stale:
            heapq.heappush(heap, (-best, negative_row))
            continue
        if best <= 0.0:
            break  # every doc left gains 0 wherever it goes
        if beta is not None:
            if out:
                decay *= beta
            if len(out) >= depth and best * decay < math.ulp(total) / 4:
                break
            total += best * decay
        out.append(best)
        for j in covers[row]:
            gain[j] *= 1.0 - alpha
    return np.asarray(out, dtype=np.float64)


@cache
def _discounts(width: int) -> FloatArray:
    """ndeval's discount(i) = log(2) / log(i + 2) of 0-based rank i (1 at rank 0)."""
    return np.array([1.0] + [math.log(2.0) / math.log(i + 2.0) for i in range(1, width)])


def _normalised(
    gains: FloatArray, width: int, subtopics: int, alpha: float
) -> tuple[FloatArray, FloatArray]:
    """ndeval's dcg[] and err[] to `width` ranks: cumulative discounted gain over the same
    sum for the "ideal ideal" run (A (1-alpha)^i at rank i), left undivided at rank 1."""
    padded = np.zeros(width)
    used = min(width, len(gains))
    padded[:used] = gains[:used]
    ranks = np.arange(1, width + 1, dtype=np.float64)
    discounts = _discounts(width)
    ideal_ideal = np.cumprod(np.concatenate(([float(subtopics)], np.full(width - 1, 1.0 - alpha))))
    dcg = np.cumsum(padded * discounts)
    err = np.cumsum(padded / ranks)
    dcg[1:] /= np.cumsum(ideal_ideal * discounts)[1:]
    err[1:] /= np.cumsum(ideal_ideal / ranks)[1:]
    return dcg, err


def _nrbp(gains: FloatArray, subtopics: int, alpha: float, beta: float) -> float:
    """ndeval's computeNRBP over the whole ranking."""
    if len(gains) == 0:
        return 0.0
    decay = np.cumprod(np.concatenate(([1.0], np.full(len(gains) - 1, beta))))
    total = float(np.cumsum(gains * decay)[-1])
    return total * ((1 - (1 - alpha) * beta) / subtopics)


def _value(
    spec: MetricSpec,
    alpha: float,
    topic: _Topic,
    matrix: np.ndarray,
    gains: FloatArray,
    ideal: FloatArray,
) -> float:
    """One query's value of `spec` (a topic with at least one relevant subtopic)."""
    subtopics = matrix.shape[1]
    name = spec.name
    if name in ("nrbp", "nnrbp"):
        beta = float(spec.param("beta"))
        run = _nrbp(gains, subtopics, alpha, beta)
        if name == "nrbp":
            return run
        best = _nrbp(ideal, subtopics, alpha, beta)
        return run / best if best != 0 else 0.0  # ndeval: 0/0 = NaN
    if name == "ap_ia":
        return _ap_ia(matrix, topic.per_subtopic)
    assert spec.k is not None  # the others need a cutoff
    k = spec.k
    top = matrix[:k]
    if name == "p_ia":
        return float(int(top.sum()) / (k * subtopics))
    if name == "s_recall":
        return float(int(top.any(axis=0).sum()) / subtopics)
    dcg, err = _normalised(gains, k, subtopics, alpha)
    if name == "alpha_dcg":
        return float(dcg[k - 1])
    if name == "err_ia":
        return float(err[k - 1])
    if dcg[k - 1] == 0:  # renormalize: only ranks whose alpha-DCG is not 0 are divided
        return 0.0
    ideal_dcg, ideal_err = _normalised(ideal, k, subtopics, alpha)
    if name == "alpha_ndcg":
        return float(dcg[k - 1] / ideal_dcg[k - 1])
    return float(err[k - 1] / ideal_err[k - 1])  # nerr_ia


def _ap_ia(matrix: np.ndarray, per_subtopic: FloatArray) -> float:
    """ndeval's computeMAP: each subtopic's AP summed in order, over the subtopics."""
    total = 0.0
    ranks = np.arange(1, matrix.shape[0] + 1, dtype=np.float64)
    for j in range(matrix.shape[1]):
        hits = matrix[:, j]
        if hits.any():
            found = np.arange(1, int(hits.sum()) + 1, dtype=np.float64)
            total += float(np.cumsum(found / ranks[hits])[-1]) / float(per_subtopic[j])
    return total / float(matrix.shape[1])
