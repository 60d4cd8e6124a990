"""gate.labels human+llm: prediction-powered checks from a judge's labels rectified by people's."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.config.check_keys import ranking_keys
from retrieval_gate.config.schema import GateConfig, Labels
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.gate.baseline.rechunk import JudgedText
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.checks.compare import (
    Comparison,
    ComparisonSettings,
    Threshold,
)
from retrieval_gate.gate.checks.family import family_levels
from retrieval_gate.gate.checks.slicing import check_list
from retrieval_gate.gate.checks.verdicts import Evidence, fails, verdict_of
from retrieval_gate.gate.explain.label_holes import LabelHole
from retrieval_gate.gate.modes.assisted_draws import VALID_QUEUES, rectifier_of
from retrieval_gate.gate.modes.assisted_units import MIN_HUMAN, units_of
from retrieval_gate.gate.modes.judges import mixed_judges, pool_judges, same_family
from retrieval_gate.stats.calibration import (
    CalibrationCard,
    calibration_card,
    system_agreement,
)
from retrieval_gate.stats.detectability import detectable_drop
from retrieval_gate.stats.judge_units import UnitAgreement
from retrieval_gate.stats.ppi import PpiEstimate, ppi_mean, weighted_ppi_mean
from retrieval_gate.stats.significance import adjust_p_values


@dataclass(frozen=True, kw_only=True)
class JudgeLabels:
    """One judge's grades over the labelled set's queries, and which judge it is: read from
    its layer before the gate runs (`pipeline.judge_labels`)."""

    model: str
    prompt_sha256: str
    qrels: Qrels
    graded_by: Mapping[tuple[str, str], JudgeIdentity] = dataclasses.field(default_factory=dict)
    """Per (query, doc) of `qrels`: the whole judge that graded it (answering model,
    fingerprint, settings); empty when not known."""
    probed: str = ""
    """Why `calibrate --probes` made this judge's labels provisional ("" when it did not or
    never ran)."""
    texts: tuple[JudgedText, ...] = ()
    """Every grade of this judge with the text it read, of any chunking: what `qrels` is
    re-anchored from across a re-chunk (`assisted_rechunk`)."""


@dataclass(frozen=True, kw_only=True)
class JudgeCalls:
    """What `check` asked of the judge before it decided: the pool pairs the layer lacked for
    this judge, how many were graded, what that spent, and why the rest were not."""

    needed: int
    """Pairs of the pool (both records' top judge.depth) the layer did not hold."""
    graded: int
    """Of them, graded now (by a call, or from the answer cache)."""
    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    skipped: str
    """Why some were not graded (no key, the endpoint failing, the budget spent, --no-judge),
    or "" when none was left."""


@dataclass(frozen=True, kw_only=True)
class Assisted:
    """What the judge's labels say, and whether they decided the gate."""

    model: str
    prompt_sha256: str
    judges: tuple[tuple[JudgeIdentity, int], ...] = ()
    """The judges that graded the pairs the assisted checks scored, and how many each: more
    than one and every assisted check is inconclusive (`mixed_judges`)."""
    card: CalibrationCard
    trusted: bool
    why_not: str
    """Why the judge's labels did not decide (provisional), or "" when they did."""
    assisted: tuple[Comparison, ...]
    """The prediction-powered checks: the verdict when trusted, else what it would be."""
    human: tuple[Comparison, ...]
    """The checks on the human-judged queries alone (today's gate on them)."""
    human_judged: tuple[int, ...]
    """Per assisted check: the human-judged queries in its estimate."""
    weights: tuple[float | None, ...]
    """Per assisted check: the PPI++ weight of the judge's labels (0 = people's alone)."""
    queries: int
    """Queries in the estimate: the judge graded every pair both records ranked in them."""
    human_queries: int
    """Queries with a human judgment (of any grade)."""
    human_ids: tuple[str, ...] = ()
    """Those queries' ids, sorted: the ones whose per-query scores (people's labels) say
    anything."""
    uncovered: tuple[str, ...]
    """Queries with pairs of their pool the judge did not grade (scored non-relevant, and
    bounded: `assisted_holes`)."""
    same_family: tuple[str, ...] = ()
    """The system's models (judge.system_models) of the judge's family, each as "role model
    (family)": a judge favours its own family's output."""
    units: tuple[UnitAgreement, ...] = ()
    """Per gated check with at least MIN_HUMAN human-judged queries: the judge against
    people in the metric's own units (`judge_units`)."""
    holes: tuple[LabelHole, ...] = ()
    """The prediction-powered checks whose queries hold pairs the judge did not grade, each
    bounded over their grades (`assisted_holes`), in check order."""
    calls: JudgeCalls | None = None
    """What `check` graded before deciding; None when it was not asked to."""

    @property
    def mixed(self) -> bool:
        """Whether the pairs the assisted checks scored were graded by several judges."""
        return len(self.judges) > 1

    @property
    def decided_by(self) -> Labels:
        """ "human+llm" when the prediction-powered checks decided, else "human"."""
        return "human+llm" if self.trusted else "human"


def labels_of(judge: JudgeLabels | None, dataset: Dataset) -> JudgeLabels:
    """`judge`'s labels of `dataset`'s queries alone: the gate may have left some out of the
    set they were read over (their documents changed in the corpus)."""
    assert judge is not None, (
        "gate.labels human+llm: read the judge's labels (pipeline.judge_labels) and pass them"
    )
    wanted = {query.id for query in dataset.queries}
    ids = judge.qrels.query_ids.tolist()
    keep = np.fromiter((q in wanted for q in ids), dtype=bool, count=len(ids))
    assert int(keep.sum()) == len(wanted), "the judge's labels were read over other queries"
    if keep.all():
        return judge
    return dataclasses.replace(judge, qrels=judge.qrels.restricted(keep))


def card_of(human: Qrels, judge: Qrels) -> CalibrationCard:
    """The calibration card over the pairs people (grade >= 0) and the judge both graded."""
    people = _grades(human)
    shared = [(people[key], grade) for key, grade in _grades(judge).items() if key in people]
    if any(g not in (0, 1, 2, 3) for g, _ in shared):
        raise InputError(
            "calibrating a judge needs people's grades 0-3 on the shared pairs; "
            "this labelled set uses others",
            source=human.source,
        )
    return calibration_card([h for h, _ in shared], [j for _, j in shared])


def _grades(qrels: Qrels) -> dict[tuple[str, str], float]:
    ids = qrels.query_ids.tolist()
    return {
        (ids[q], d): float(g)
        for q, d, g in zip(
            qrels.query.tolist(), qrels.docs.tolist(), qrels.grade.tolist(), strict=True
        )
        if g >= 0
    }


def human_judged(dataset: Dataset) -> np.ndarray:
    """Per query of `dataset`: whether people judged it (a grade of 0 or more)."""
    judged = np.zeros(len(dataset.queries), dtype=bool)
    rows = dataset.qrels.grade >= 0
    judged[dataset.qrels.query[rows]] = True
    return judged


def pools_of(
    records: Sequence[Baseline], query_ids: Sequence[str], depth: int
) -> dict[str, set[str]]:
    """Per query: the documents the records rank in its top `depth` (the judge's pool)."""
    return {
        query: {d for record in records for d in record.top_k.get(query, ())[:depth]}
        for query in query_ids
    }


def covered(judge: Qrels, pools: Mapping[str, set[str]], query_ids: Sequence[str]) -> np.ndarray:
    """Per query: whether the judge graded every doc of its pool (`pools_of`)."""
    graded: dict[str, set[str]] = {}
    ids = judge.query_ids.tolist()
    for q, d in zip(judge.query.tolist(), judge.docs.tolist(), strict=True):
        graded.setdefault(ids[q], set()).add(d)
    return np.fromiter(
        (pools.get(query, set()) <= graded.get(query, set()) for query in query_ids),
        dtype=bool,
        count=len(query_ids),
    )


def pooled(judge: Qrels, pools: Mapping[str, set[str]]) -> Qrels:
    """The judge's labels of the pairs of each query's pool (`pools_of`), nothing else.

    The judge also grades people's pairs beyond the pool of its calibration queries, for the
    card; scoring with them would make the judge's values of human-judged queries see more
    relevant documents (a larger ideal DCG, more to recall) than those of the other queries,
    and the rectifier would correct a difference the other queries do not have."""
    ids = judge.query_ids.tolist()
    keep = np.fromiter(
        (
            d in pools.get(ids[q], ())
            for q, d in zip(judge.query.tolist(), judge.docs.tolist(), strict=True)
        ),
        dtype=bool,
        count=len(judge),
    )
    return Qrels(
        judge.query_ids, judge.query[keep], judge.docs[keep], judge.grade[keep], judge.source
    )


def judge_scores(record: Baseline, judge: Qrels) -> Mapping[str, FloatArray]:
    """`record`'s metrics re-scored from its stored top k under the judge's labels."""
    from retrieval_gate.metrics import evaluate, parse_metric
    from retrieval_gate.metrics.diversity import DIVERSITY
    from retrieval_gate.metrics.top_k import listed_run

    diverse = [
        m for m in ranking_keys(record.fingerprints.metrics) if parse_metric(m).name in DIVERSITY
    ]
    if diverse:
        raise GateError(
            f"gate.labels human+llm cannot score {', '.join(diverse)} with the judge's labels "
            "(it grades documents, not intents): remove the metric or set gate.labels: human"
        )
    run = listed_run(record.top_k, record.query_ids)
    scores = evaluate(run, judge, record.fingerprints.metrics)
    if scores.query_ids != record.query_ids:
        raise InputError("the judge's labels do not cover the record's queries")
    return scores.values


def assisted_comparisons(
    human: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    judged: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    labelled: np.ndarray,
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
    settings: ComparisonSettings,
    inclusion: FloatArray | None = None,
) -> tuple[tuple[Comparison, ...], tuple[int, ...], tuple[float | None, ...]]:
    """Every check as `compare` makes them, its means and delta prediction-powered.

    `human` and `judged` are (baseline, current) per-query scores under people's and the
    judge's labels over the same queries (the estimate's: those the judge covered);
    `labelled` marks the human-judged ones. Per check, the delta is PPI++ (`ppi_mean`) of the
    human-judged queries' deltas with the judge-only queries' judge-scored deltas; both means
    use the delta's weight, so current - baseline = delta. The family (levels, weighted Holm
    or BH) is `compare`'s, with a t reference. Returns the comparisons, each one's count of
    human-judged queries and its weight of the judge's labels. `inclusion` (per query: its
    probability of being human-judged) makes each estimate the weighted one of active
    inference (`weighted_ppi_mean`); None is the uniform case.
    """
    cells = []
    for metric, name, rows, threshold, reason in check_list(
        slices, thresholds, overrides, settings.min_size
    ):
        rows = np.asarray(rows, dtype=np.int64)
        ours = rows[labelled[rows]]
        # Before a small slice's reason, as it names the estimate's own limit.
        if rows.size and not threshold.report_only and ours.size < MIN_HUMAN:
            reason = (
                f"too few human-judged queries ({ours.size} < {MIN_HUMAN}) to correct the "
                "judge's labels"
            )
        cells.append((metric, name, rows, ours, rows[~labelled[rows]], threshold, reason))
    estimates = [
        _estimates(human, judged, metric, ours, theirs, inclusion)
        for metric, _, _, ours, theirs, _, _ in cells
    ]
    candidates = [c for c, cell in enumerate(cells) if not cell[6] and cell[5].max_drop is not None]
    tested = dataclasses.replace(settings, test="t")
    levels, _ = family_levels([(cells[c][1], int(cells[c][3].size)) for c in candidates], tested)
    level_of = {candidates[i]: level for i, level in levels.items()}
    family = sorted(level_of)
    adjusted = adjust_p_values(
        [estimates[c][2].p_drop for c in family], settings.correction, [level_of[c] for c in family]
    )
    adjusted_of = dict(zip(family, adjusted, strict=True))
    made = []
    for c, (metric, name, rows, ours, _, threshold, reason) in enumerate(cells):
        diffs = human[1][metric][ours] - human[0][metric][ours]
        made.append(
            _comparison(
                metric,
                name,
                int(rows.size),
                estimates[c],
                diffs,
                threshold,
                reason,
                level_of.get(c),
                adjusted_of.get(c),
                settings,
            )
        )
    counts = tuple(int(cell[3].size) for cell in cells)
    weights = tuple(e[2].lam if e[2] is not None else None for e in estimates)
    return tuple(made), counts, weights


Estimates = tuple[float, float, PpiEstimate]


def _estimates(
    human: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    judged: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    metric: str,
    ours: IntArray,
    theirs: IntArray,
    inclusion: FloatArray | None = None,
) -> Estimates:
    """(baseline mean, current mean, delta) of one check, PPI++ with the delta's weight;
    weighted by `inclusion` (`weighted_ppi_mean`) when given."""
    if not ours.size:
        nothing = PpiEstimate(
            estimate=0.0, se=0.0, lam=0.0, n=0, unlabelled=int(theirs.size), df=1.0
        )
        return 0.0, 0.0, nothing
    (hb, hc), (jb, jc) = (
        (human[0][metric], human[1][metric]),
        (judged[0][metric], judged[1][metric]),
    )
    if inclusion is not None:
        pi = inclusion[ours]
        delta = weighted_ppi_mean(
            hc[ours] - hb[ours], jc[ours] - jb[ours], pi, jc[theirs] - jb[theirs]
        )
        base = weighted_ppi_mean(hb[ours], jb[ours], pi, jb[theirs], lam=delta.lam)
        current = weighted_ppi_mean(hc[ours], jc[ours], pi, jc[theirs], lam=delta.lam)
        return base.estimate, current.estimate, delta
    delta = ppi_mean(hc[ours] - hb[ours], jc[ours] - jb[ours], jc[theirs] - jb[theirs])
    base = ppi_mean(hb[ours], jb[ours], jb[theirs], lam=delta.lam)
    current = ppi_mean(hc[ours], jc[ours], jc[theirs], lam=delta.lam)
    return base.estimate, current.estimate, delta


def _comparison(
    metric: str,
    name: str,
    size: int,
    estimates: Estimates,
    diffs: FloatArray,
    threshold: Threshold,
    reason: str,
    level: float | None,
    p_adjusted: float | None,
    settings: ComparisonSettings,
) -> Comparison:
    baseline_mean, current_mean, delta = estimates
    n = delta.n
    max_drop = threshold.resolve(baseline_mean)
    gated = not reason
    in_family = gated and level is not None
    verdict = verdict_of(
        delta=delta.estimate,
        current_mean=current_mean,
        max_drop=max_drop,
        floor=threshold.floor,
        n=n,
        evidence=Evidence(
            failing=p_adjusted if in_family else delta.p_drop,
            rise=delta.p_rise,
            rise_level=level if in_family and level is not None else settings.alpha,
        ),
        alpha=settings.alpha,
        require_significance=settings.require_significance,
    )
    detectable = None
    # Gated, it has at least MIN_HUMAN human-judged queries (`assisted_comparisons`): n >= 2.
    if gated and max_drop is not None and delta.se > 0:
        detectable = detectable_drop(
            sd=delta.se * np.sqrt(n),
            n=n,
            level=level if settings.require_significance else None,
            max_drop=max_drop,
            resamples=settings.resamples,
            t_test=True,
            power=settings.power,
        )
    ci = delta.interval() if n else None
    return Comparison(
        metric=metric,
        slice=name,
        n=size,
        baseline_mean=baseline_mean,
        current_mean=current_mean,
        delta=delta.estimate,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        wins=int(np.count_nonzero(diffs > 0)),
        ties=int(np.count_nonzero(diffs == 0)),
        losses=int(np.count_nonzero(diffs < 0)),
        p_value=delta.p_drop if n else None,
        p_bound=False,
        p_adjusted=p_adjusted,
        level=level,
        max_drop=max_drop,
        floor=threshold.floor,
        detectable_drop=detectable,
        queries_needed=None,
        gated=gated,
        reason=reason,
        verdict=verdict,
        failed=gated and fails(verdict, settings.on_inconclusive),
    )


def restricted(slices: Mapping[str, IntArray], keep: np.ndarray) -> dict[str, IntArray]:
    """`slices` over the queries `keep` marks, re-indexed into them (in order)."""
    position = np.cumsum(keep) - 1
    return {name: position[rows[keep[rows]]].astype(np.int64) for name, rows in slices.items()}


def uncovered_note(uncovered: Sequence[str], total: int) -> str:
    """The warning for queries with pool pairs the judge did not grade."""
    shown = ", ".join(one_line(q) for q in uncovered[:5])
    more = f" and {len(uncovered) - 5} more" if len(uncovered) > 5 else ""
    return (
        f"{plural(len(uncovered), 'query', 'queries')} of {total} hold documents of the two "
        f"runs' top k the judge has not graded ({shown}{more}): they count as non-relevant, "
        "and a check they could turn is inconclusive and fails (its label holes say which); "
        "grade them: `retrieval-gate check` with the judge's key set, or `retrieval-gate judge`"
    )


def assisted_checks(
    records: tuple[Baseline, Baseline],
    config: GateConfig,
    dataset: Dataset,
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
    settings: ComparisonSettings,
    *,
    judge: JudgeLabels | None,
) -> tuple[Assisted, tuple[str, ...]]:
    """gate.labels human+llm: the prediction-powered checks over the queries the judge
    covered, the human-only ones over the human-judged queries, the calibration card and
    whether the judge is trusted; and warnings to show. `judge`: its labels of (at least)
    `dataset`'s queries."""
    from retrieval_gate.gate.baseline.repeats import runs_of
    from retrieval_gate.gate.checks.compare import compare

    assert config.judge is not None
    labels = labels_of(judge, dataset)
    baseline, current = records
    labelled = human_judged(dataset)
    ids = list(current.query_ids)
    depth = config.judge.depth or config.k
    pools = pools_of(records, ids, depth)
    # Every query is in the estimate: a pair of the pool the judge did not grade scores 0,
    # and the checks it could move are bounded (`assisted_holes`), never left out silently.
    whole = covered(labels.qrels, pools, ids)
    pool = pooled(labels.qrels, pools)
    judges = pool_judges(labels.graded_by, pool, np.ones(len(ids), dtype=bool))
    judged = (judge_scores(baseline, pool), judge_scores(current, pool))
    human_scores = (baseline.scores, current.scores)
    fix = rectifier_of(dataset, labelled, ids)
    made, counts, weights = assisted_comparisons(
        human_scores, judged, fix.labelled, slices, thresholds, overrides, settings, fix.inclusion
    )
    holes: tuple[LabelHole, ...] = ()
    if not whole.all():
        from retrieval_gate.gate.modes.assisted_holes import (
            Scores,
            bounded_checks,
            judge_extremes,
        )

        # The bounds hold for the unweighted estimate: under active draws, no weight, so a
        # check with pairs the judge has not graded is inconclusive.
        made, holes = bounded_checks(
            made,
            weights if fix.inclusion is None else [None] * len(weights),
            [cell[3] for cell in check_list(slices, thresholds, overrides, settings.min_size)],
            Scores(human=human_scores, judged=judged, labelled=fix.labelled),
            slices,
            judge_extremes(made, records, pool, pools, ids, config.k),
            settings,
        )
    units = units_of(made, weights, (human_scores, judged), labelled, slices)
    kin = same_family(config, [labels.model, *(who.answered_by for who, _ in judges)])
    made, mixed = mixed_judges(made, judges, settings)
    repeated = baseline.repeats is not None or current.repeats is not None
    runs = None
    if repeated:
        runs = (
            tuple(scores_at(run, labelled) for run in runs_of(baseline)),
            tuple(scores_at(run, labelled) for run in runs_of(current)),
        )
    first = next(iter(thresholds))
    # Two runs (base and head) rank nothing: their means only fill the card's line.
    systems = system_agreement(
        [_mean(s[first][labelled]) for s in human_scores],
        [_mean(s[first]) for s in judged],
    )
    card = dataclasses.replace(card_of(dataset.qrels, labels.qrels), systems=systems)
    trust = config.judge.trust
    why_not = card.distrust(trust.min_pairs, trust.min_kappa)
    if judge is not None and judge.probed:  # the robustness probes' verdict, when recorded
        why_not = "; ".join(reason for reason in (why_not, judge.probed) if reason)
    few = int(fix.labelled.sum())
    if not why_not and few < MIN_HUMAN:
        why_not = (
            f"only {few} human-judged queries in the estimate (at least {MIN_HUMAN} are needed "
            "to correct the judge's labels)"
        )
    if why_not and not labelled.any():
        # The human-only view decides and has no query: every check would pass unjudged.
        raise GateError(
            "gate.labels human+llm: no query has people's judgments yet, and the judge's "
            f"labels alone decide nothing ({why_not}); label a random sample of queries: "
            f"`retrieval-gate {VALID_QUEUES[1:]} lists their pairs, `retrieval-gate qrels merge` "
            "adds them"
        )
    # Too few human-judged queries to ever fail is a refusal only when they decide.
    human = compare(
        scores_at(human_scores[0], labelled),
        scores_at(human_scores[1], labelled),
        restricted(slices, labelled),
        thresholds,
        overrides,
        settings,
        strict=bool(why_not),
        runs=runs,
    )
    uncovered = tuple(q for q, k in zip(ids, whole.tolist(), strict=True) if not k)
    warnings = [uncovered_note(uncovered, len(ids))] if uncovered else []
    warnings += [mixed] if mixed else []
    warnings += fix.notes
    if kin:
        warnings.append(
            f"the judge is of the same family as the system's {', '.join(kin)}: LLM judges "
            "favour their own family's output, so its labels may flatter this system; "
            "compare with a judge of another family before trusting a close verdict"
        )
    if repeated:
        warnings.append(
            "the LLM-assisted checks use the repeats' mean scores and the first run's rankings, "
            "without the run-to-run noise the human-only checks allow for"
        )
    if why_not:
        warnings.append(
            f"LLM labels are provisional: {why_not}; the verdict is the human-judged queries' "
            "alone (the report shows what the LLM-assisted one would be)"
        )
    assisted = Assisted(
        model=labels.model,
        prompt_sha256=labels.prompt_sha256,
        judges=judges,
        card=card,
        trusted=not why_not,
        why_not=why_not,
        assisted=made,
        human=human,
        human_judged=counts,
        weights=weights,
        queries=len(ids),
        human_queries=int(labelled.sum()),
        human_ids=tuple(q for q, mine in zip(ids, labelled.tolist(), strict=True) if mine),
        uncovered=uncovered,
        holes=holes,
        units=units,
        same_family=kin,
    )
    return assisted, tuple(warnings)


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if values.size else 0.0


def scores_at(scores: Mapping[str, FloatArray], keep: np.ndarray) -> dict[str, FloatArray]:
    """`scores` of the queries `keep` marks."""
    return {metric: np.asarray(values)[keep] for metric, values in scores.items()}
