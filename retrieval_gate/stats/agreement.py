"""Inter-annotator agreement on graded judgments: pairwise Cohen's kappa, Krippendorff's alpha."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray, ObjectArray, factorize, run_starts

Weights = Literal["none", "linear", "quadratic"]
Level = Literal["nominal", "ordinal", "interval"]


def cohen_kappa(
    a: Sequence[float] | FloatArray,
    b: Sequence[float] | FloatArray,
    *,
    weights: Weights = "none",
    categories: Sequence[float] | None = None,
) -> float:
    """Cohen's kappa of two raters over the same items (weighted: Cohen 1968 with linear or
    quadratic disagreement weights over the ordered categories).

    `a[i]` and `b[i]` are the two ratings of item i. The categories default to the sorted
    union of the ratings seen; given ones are sorted too, and every rating must be one of them.
    Weights depend on category positions i, j in that order, not on the values (as in Cohen
    1968 and scikit-learn): none `i != j`, linear `|i - j|`, quadratic `(i - j)^2`.

    Kappa is undefined, and NaN is returned, when chance disagreement is 0: both raters
    used one and the same category for every item. Empty input, or inputs of different
    lengths or with NaN ratings, raise ValueError.
    """
    first = np.asarray(a, dtype=np.float64)
    second = np.asarray(b, dtype=np.float64)
    if first.ndim != 1 or second.ndim != 1:
        raise ValueError("kappa needs two 1-d sequences of ratings")
    if len(first) != len(second):
        raise ValueError(
            f"kappa needs both raters on the same items: {len(first)} ratings vs {len(second)}"
        )
    if len(first) == 0:
        raise ValueError("kappa needs at least one item rated by both raters")
    if np.isnan(first).any() or np.isnan(second).any():
        raise ValueError("kappa needs a rating from both raters on every item, got NaN")
    scale = np.unique(
        np.concatenate([first, second])
        if categories is None
        else np.asarray(categories, dtype=np.float64)
    )
    k = len(scale)
    rows = _positions(first, scale)
    cols = _positions(second, scale)
    confusion = np.bincount(rows * k + cols, minlength=k * k).reshape(k, k).astype(np.float64)
    disagreement = _kappa_weights(k, weights)
    # Chance counts are row total x column total / n; multiplying the observed side by n
    # instead keeps integer-valued products, so "no chance disagreement" is an exact 0.
    chance = float((disagreement * np.outer(confusion.sum(axis=1), confusion.sum(axis=0))).sum())
    if chance == 0.0:
        return math.nan
    return 1.0 - len(first) * float((disagreement * confusion).sum()) / chance


def krippendorff_alpha(ratings: FloatArray, *, level: Level = "ordinal") -> float:
    """Krippendorff's alpha of a raters x units matrix (NaN = not rated), via the coincidence
    matrix.

    Units rated fewer than twice are not pairable and are dropped (Krippendorff 2011).
    Distances between values c and k: nominal `c != k`; interval `(c - k)^2`; ordinal
    `(sum of n_g for g from c to k - (n_c + n_k) / 2)^2`, with n_g how often value g occurs
    among the pairable values. NaN when no value is pairable or the pairable values show no
    expected disagreement (all equal).
    """
    matrix = np.asarray(ratings, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"alpha needs a raters x units matrix, got {matrix.ndim} dimensions")
    rated = ~np.isnan(matrix)
    unit = np.nonzero(rated)[1].astype(np.int64)
    return _alpha(unit, matrix[rated], level)


@dataclass(frozen=True, kw_only=True)
class PairAgreement:
    """Cohen's kappa of two annotators over the items both judged."""

    first: str
    second: str
    shared: int
    kappa: float  # NaN when undefined, including when the two share no item


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """Agreement among annotators: kappa for every pair, alpha over all shared items."""

    annotators: tuple[str, ...]
    pairs: tuple[PairAgreement, ...]
    items: int  # (query, doc) items judged by at least two annotators
    alpha: float
    weights: Weights
    level: Level


def annotator_agreement(
    query: IntArray,
    docs: ObjectArray,
    grades: FloatArray,
    annotators: ObjectArray,
    *,
    graded: bool | None = None,
) -> Agreement:
    """Agreement of the annotators over the (query, doc) items they share.

    Rows are judgments in parallel arrays: query code, doc id, grade, annotator id. Rows with
    a negative grade (TREC's "pooled but not judged") or a NaN grade are not judgments and
    are dropped first; an annotator left with no row is not listed. If an annotator judged
    the same (query, doc) more than once, the last row counts (the caller reports the
    duplicate). Graded data (by default: more than two distinct grades) uses quadratic kappa
    weights and ordinal alpha; binary data unweighted kappa and nominal alpha. Kappa's
    categories are all the grades in the data, so every pair is weighted on the same scale.
    """
    query = np.asarray(query, dtype=np.int64)
    docs = np.asarray(docs, dtype=object)
    grades = np.asarray(grades, dtype=np.float64)
    annotators = np.asarray(annotators, dtype=object)
    if not len(query) == len(docs) == len(grades) == len(annotators):
        raise ValueError(
            "judgment columns differ in length: "
            f"{len(query)} queries, {len(docs)} docs, {len(grades)} grades, "
            f"{len(annotators)} annotators"
        )
    judged = grades >= 0
    grade = grades[judged]
    annotator, annotator_ids = factorize(annotators[judged], sort=True)
    doc, doc_ids = factorize(docs[judged])
    _, query_code = np.unique(query[judged], return_inverse=True)
    _, item = np.unique(query_code * max(len(doc_ids), 1) + doc, return_inverse=True)

    # Keeping each (item, annotator)'s first occurrence in reversed rows keeps its last row;
    # np.unique also leaves the kept rows sorted by item, then annotator.
    key = item * max(len(annotator_ids), 1) + annotator
    _, from_end = np.unique(key[::-1], return_index=True)
    kept = len(key) - 1 - from_end
    item, annotator, grade = item[kept], annotator[kept], grade[kept]

    scale = np.unique(grade)
    if graded is None:
        graded = len(scale) > 2
    weights: Weights = "quadratic" if graded else "none"
    level: Level = "ordinal" if graded else "nominal"

    judges = np.bincount(item)
    shared = judges[item] >= 2
    item, annotator, grade = item[shared], annotator[shared], grade[shared]

    # Stable, so each annotator's items stay ascending and unique, as intersect1d needs.
    by_annotator = np.argsort(annotator, kind="stable")
    bounds = np.searchsorted(annotator[by_annotator], np.arange(len(annotator_ids) + 1))
    own = [by_annotator[start:stop] for start, stop in itertools.pairwise(bounds)]
    categories = scale.tolist()
    pairs: list[PairAgreement] = []
    for i in range(len(annotator_ids)):
        for j in range(i + 1, len(annotator_ids)):
            _, at_i, at_j = np.intersect1d(
                item[own[i]], item[own[j]], assume_unique=True, return_indices=True
            )
            kappa = (
                cohen_kappa(
                    grade[own[i][at_i]],
                    grade[own[j][at_j]],
                    weights=weights,
                    categories=categories,
                )
                if len(at_i)
                else math.nan
            )
            pairs.append(
                PairAgreement(
                    first=str(annotator_ids[i]),
                    second=str(annotator_ids[j]),
                    shared=len(at_i),
                    kappa=kappa,
                )
            )
    return Agreement(
        annotators=tuple(str(name) for name in annotator_ids),
        pairs=tuple(pairs),
        items=int(np.count_nonzero(judges >= 2)),
        alpha=_alpha(item, grade, level),
        weights=weights,
        level=level,
    )


def _positions(values: FloatArray, scale: FloatArray) -> IntArray:
    """Index of each value in the sorted `scale`; a value outside it is an error."""
    at = np.searchsorted(scale, values)
    inside = at < len(scale)
    inside[inside] = scale[at[inside]] == values[inside]
    if not inside.all():
        stray = values[~inside][0]
        raise ValueError(f"rating {stray:g} is not among the categories {scale.tolist()}")
    return at.astype(np.int64)


def _kappa_weights(k: int, weights: Weights) -> FloatArray:
    """Disagreement weight of each (row, column) category pair; 0 on the diagonal."""
    steps: FloatArray = np.subtract.outer(np.arange(k), np.arange(k)).astype(np.float64)
    if weights == "none":
        return 1.0 - np.eye(k)
    if weights == "linear":
        return np.abs(steps)
    if weights == "quadratic":
        return np.square(steps)
    raise ValueError(f"kappa weights must be none, linear or quadratic, not {weights!r}")


def _alpha(unit: IntArray, value: FloatArray, level: Level) -> float:
    """Krippendorff's alpha of values given as (unit code, value) rows."""
    if len(unit) == 0:
        return math.nan
    raters = np.bincount(unit)
    pairable = raters[unit] >= 2
    unit, value = unit[pairable], value[pairable]
    if len(unit) == 0:
        return math.nan
    scale, code = np.unique(value, return_inverse=True)
    v = len(scale)
    # Count each (unit, value) cell once: a unit's coincidences are products of its cell
    # counts, so the work grows with distinct values per unit, not with ratings per unit.
    cells, count = np.unique(unit * v + code, return_counts=True)
    cell_unit = cells // v
    cell_code = cells % v
    share = count / (raters[cell_unit] - 1)
    left, right = _pairs_within(cell_unit)
    coincidence = np.bincount(
        cell_code[left] * v + cell_code[right],
        weights=share[left] * count[right],
        minlength=v * v,
    ).reshape(v, v)
    # The diagonal still pairs each rating with itself; every delta is 0 there, so it
    # never counts, and the marginals are taken from the values instead.
    frequency = np.bincount(code, minlength=v).astype(np.float64)
    distance = _alpha_distances(scale, frequency, level)
    expected = float((np.outer(frequency, frequency) * distance).sum())
    if expected == 0.0:
        return math.nan
    return 1.0 - (len(code) - 1) * float((coincidence * distance).sum()) / expected


def _pairs_within(group: IntArray) -> tuple[IntArray, IntArray]:
    """Indices (left, right) of every ordered pair, self-pairs included, within each run of
    equal values of the sorted `group`."""
    starts = run_starts(group)
    sizes = np.diff(np.append(starts, len(group)))
    size_of = np.repeat(sizes, sizes)
    start_of = np.repeat(starts, sizes)
    left = np.repeat(np.arange(len(group), dtype=np.int64), size_of)
    first_of_left = np.repeat(np.cumsum(size_of) - size_of, size_of)
    right = np.repeat(start_of, size_of) + (np.arange(len(left)) - first_of_left)
    return left, right.astype(np.int64)


def _alpha_distances(scale: FloatArray, frequency: FloatArray, level: Level) -> FloatArray:
    """Squared distance delta^2 between each pair of the sorted values in `scale`."""
    if level == "nominal":
        return 1.0 - np.eye(len(scale))
    if level == "interval":
        return np.square(np.subtract.outer(scale, scale))
    if level == "ordinal":
        # Ordinal distance counts how many pairable values lie between c and k (inclusive,
        # the ends counted half), so it depends on the frequencies, not on the values.
        index = np.arange(len(scale))
        low = np.minimum.outer(index, index)
        high = np.maximum.outer(index, index)
        through = np.concatenate([[0.0], np.cumsum(frequency)])
        between: FloatArray = through[high + 1] - through[low]
        ends: FloatArray = np.add.outer(frequency, frequency)
        return np.square(between - ends / 2)
    raise ValueError(f"alpha level must be nominal, ordinal or interval, not {level!r}")
