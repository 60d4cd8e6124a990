"""Whether a baseline can be compared with a run, and re-scoring it when only judgments changed."""

from __future__ import annotations

import dataclasses

from retrieval_gate.config.check_keys import ranking_keys
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.record import Baseline, comparability_problems
from retrieval_gate.metrics.parse import reads_scores


def comparable_baseline(
    baseline: Baseline, current: Baseline, dataset: Dataset
) -> tuple[Baseline, str | None]:
    """`baseline` ready to compare with `current`, and a warning when it had to be re-scored.

    When only the judgments changed since the baseline (same queries, k, metrics and slices),
    its stored rankings are re-scored under `dataset`'s (`rescored_baseline`). Anything else
    that differs is a NotComparableError listing what.
    """
    problems = comparability_problems(baseline.fingerprints, current.fingerprints)
    if not problems:
        return baseline, None
    if _judgments_changed_only(baseline, current, dataset):
        scored = [m for m in baseline.fingerprints.metrics if reads_scores(m)]
        if scored:
            raise NotComparableError(
                f"the judgments changed since the baseline, and {', '.join(scored)} "
                f"{'reads' if len(scored) == 1 else 'read'} the retriever's scores, which the "
                "baseline does not store (ties count half): its stored rankings cannot be "
                "re-scored exactly. Recreate it on the main branch with "
                "`retrieval-gate baseline --force`"
            )
        before = baseline.fingerprints.dataset
        first = " (its first run's: the other runs keep scores, not rankings)"
        return rescored_baseline(baseline, dataset), (
            f"the judgments changed since the baseline (dataset {before[:12]} -> "
            f"{dataset.fingerprint[:12]}); the baseline's stored top-{baseline.fingerprints.k} "
            f"rankings{first if baseline.repeats else ''} were re-scored with the current "
            "judgments"
        )
    raise NotComparableError(
        "the baseline cannot be compared with this run:\n  - "
        + "\n  - ".join(problems)
        + "\nrecreate it on the main branch with `retrieval-gate baseline --force`"
    )


def rescored_baseline(baseline: Baseline, dataset: Dataset) -> Baseline:
    """`baseline` with every relevance metric recomputed from its stored top-k rankings under
    `dataset`'s judgments, carrying the dataset's fingerprint; the other check columns (an
    evaluator's scores) are carried over unchanged.

    Exact: a run is scored on the at most k documents the runner keeps per query, which are
    the stored top k, in the order the metrics rank them (see `record_current`). A query with
    no stored top k retrieved nothing (or failed) and scores 0, as it did. The `candidates:`
    columns are re-scored alike from the stored candidates (all the runner kept: exact too),
    never from the final top k; without stored candidates they, like any other column this
    function cannot recompute, are carried over unchanged. Raises ValueError when the
    baseline's queries are not `dataset`'s.
    """
    from retrieval_gate.config.stages import candidates_checks
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.metrics.top_k import listed_run

    metrics = baseline.fingerprints.metrics
    staged = candidates_checks(metrics) if baseline.candidates is not None else {}
    # Evaluator scores, latency and cost stay as measured: no ranking recomputes them.
    relevance = ranking_keys(metrics)
    values = dict(baseline.scores)
    sources = [(baseline.top_k, {metric: metric for metric in relevance})]
    if baseline.candidates is not None:
        sources.append((baseline.candidates, {name: str(spec) for name, spec in staged.items()}))
    for top, columns in sources:
        if not columns:
            continue
        run = listed_run(top, baseline.query_ids)
        scores = evaluate(run, dataset.qrels, list(columns.values()), dataset.subtopics)
        if scores.query_ids != baseline.query_ids:
            raise ValueError("the baseline's query ids are not the labelled set's")
        for name, metric in columns.items():
            column = scores.values[metric].copy()
            column.flags.writeable = False
            values[name] = column
    fingerprints = dataclasses.replace(baseline.fingerprints, dataset=dataset.fingerprint)
    return dataclasses.replace(baseline, fingerprints=fingerprints, scores=values, repeats=None)


def _judgments_changed_only(baseline: Baseline, current: Baseline, dataset: Dataset) -> bool:
    """Whether the records differ in judgments alone: the queries (recorded on both sides) and
    everything else the comparison needs are the same, and `dataset` is the current one."""
    old, new = baseline.fingerprints, current.fingerprints
    return (
        old.queries is not None
        and old.queries == new.queries
        and new.dataset == dataset.fingerprint
        and baseline.query_ids == current.query_ids
        and not comparability_problems(dataclasses.replace(old, dataset=new.dataset), new)
    )
