"""What compare refuses: scores that are not one finite value per query within MAX_MEASURE,
slices that are not index sets of them, overrides of metrics without a threshold."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.reported import MAX_MEASURE
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.slicing import ALL
from retrieval_gate.metrics.parse import may_be_undefined


def scores_of(name: str, scores: Mapping[str, FloatArray], metric: str) -> FloatArray:
    """`scores`' values of `metric` as floats, refused unless one finite value per query (or
    NaN, for a metric that may be undefined for a query: `metrics.parse.may_be_undefined`);
    `name` says whose they are in the error."""
    if metric not in scores:
        known = ", ".join(sorted(scores)) or "none"
        raise GateError(f"{name} has no scores for metric {metric} (it has: {known})")
    values = np.asarray(scores[metric], dtype=np.float64)
    if values.ndim != 1:
        raise GateError(f"{name} scores of {metric} must be one value per query")
    if not bool(np.all(np.isfinite(values))):
        finite_or_nan = np.isfinite(values) | np.isnan(values)
        if not (may_be_undefined(metric) and bool(finite_or_nan.all())):
            raise GateError(f"{name} scores of {metric} contain NaN or infinite values")
    huge = np.flatnonzero(np.abs(values) > MAX_MEASURE)
    if huge.size:
        # Readers refuse such latencies, costs and evaluator scores; a metric computed this
        # large (a dcg of huge gains, or of grades under exp gain) is refused here, before its
        # squares overflow the tests.
        raise GateError(
            f"{name} scores of {metric}: the query at index {int(huge[0])} scores "
            f"{float(values[huge[0]])!r}, past {MAX_MEASURE:g} either way, where the gate's "
            "statistics would overflow; give the metric smaller gains or grades"
        )
    return values


def checked_slices(
    arrays: Mapping[str, tuple[FloatArray, FloatArray]],
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, object],
    overrides: Mapping[str, Mapping[str, object]],
) -> dict[str, IntArray]:
    """The slices as index arrays, once every side scores the same queries, every slice's
    indices are valid and unique, and every override names a metric with a threshold."""
    sizes = {m: (b.size, c.size) for m, (b, c) in arrays.items()}
    lengths = {size for pair in sizes.values() for size in pair}
    if len(lengths) > 1:
        listed = "; ".join(f"{m}: baseline {b}, current {c}" for m, (b, c) in sizes.items())
        raise GateError(
            f"baseline and current must score the same queries in the same order ({listed})"
        )
    total = lengths.pop() if lengths else None
    if ALL not in slices:
        raise GateError(f'slices must include "{ALL}"')
    checked: dict[str, IntArray] = {}
    for name, raw in slices.items():
        index = np.asarray(raw, dtype=np.int64)
        if index.ndim != 1:
            raise GateError(f"slice {name}: expected a 1-d array of query indices")
        if total is not None and index.size and (index.min() < 0 or index.max() >= total):
            raise GateError(f"slice {name}: query indices must be within [0, {total})")
        if np.unique(index).size != index.size:
            raise GateError(f"slice {name}: a query is listed more than once")
        checked[name] = index
    # An override for a slice absent from this query set is not an error here: the caller
    # warns about it, and the override simply applies nowhere.
    for name, per_metric in overrides.items():
        for metric in per_metric:
            if metric not in thresholds:
                known = ", ".join(thresholds) or "none"
                raise GateError(
                    f"threshold override for slice {name} names metric {metric}, "
                    f"which has no threshold (metrics: {known})"
                )
    return checked
