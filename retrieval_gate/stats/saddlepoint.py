"""Saddlepoint tails of the paired sign-flip test: its p-values at large n without sampling."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval_gate.core.ids import FloatArray

BoolArray = np.ndarray[Any, np.dtype[np.bool_]]

SADDLEPOINT_FROM = 1_000
"""Columns with this many non-zero differences or more take the saddlepoint p-value instead of
random sign vectors. From there its relative error is below what 10,000 draws resolve
(`benchmarks/accuracy/bench_saddlepoint.py` measures both against 10^6 draws), and sampling
would cost n x 10,000 products per check."""
_NEWTON_STEPS = 60
_MOST_STEPS = 12
_HOEFFDING_BELOW = 1e-300
_SERIES_REACH = 0.5
"""The largest |t d| at which K is taken from its series (`_series_saddle`)."""
_TINIEST = float(np.nextafter(0.0, 1.0))
_CELLS_AT_ONCE = 1 << 20
"""Values whose powers `_Columns.of` takes at a time (a few columns of them)."""
_SMALL_W = 1e-4
"""Below this signed root the Lugannani-Rice terms cancel: the normal approximation is exact
to far better than any p-value near 0.5 needs."""


def sign_flip_tails(values: FloatArray) -> tuple[FloatArray, FloatArray, BoolArray]:
    """P(sum* <= S) and P(sum* >= S) for each column of `values` (queries x checks), S the
    column's sum and sum* the sum of its values under independent random signs; and whether
    the first is only Hoeffding's bound exp(-S^2 / (2 sum d^2)), taken where that is below
    1e-300 (no gate tests at such a level: solving for it would only cost time).

    Lugannani and Rice's saddlepoint approximation to the tails of sum* (as Robinson 1982 gives
    it for randomization tests): the cumulant generating function of sum* is exactly
    K(t) = sum log cosh(t d), so the only approximation is the tail formula, whose relative
    error shrinks as 1/n. A sum as extreme as every sign agreeing has its exact tail 2^-m.
    """
    d = np.asarray(values, dtype=np.float64)
    if d.ndim == 1:
        d = d[:, None]
    total = d.sum(axis=0)
    # On a lattice (recall@10's tenths, ties of a few values) sum* moves in steps of twice
    # its span, and a tail holds the atom at S: the continuous formula is taken half a step
    # inside it (Daniels 1987's continuity correction).
    half = np.asarray([_span(d[:, j]) for j in range(d.shape[1])])
    columns = _Columns.of(d)
    upper, _ = _upper_tail(columns, total, half)  # P(sum* >= S)
    lower, bound = _upper_tail(columns, -total, half)  # P(sum* >= -S) = P(sum* <= S)
    return lower, upper, bound


def _span(column: FloatArray) -> float:
    """The lattice span of a column's values (every |d| a whole multiple of it, to 1e-9),
    or 0 when they lie on none with at most 12 steps to the smallest value."""
    values = np.abs(column[column != 0])
    if not values.size:
        return 0.0
    smallest = float(values.min())
    for steps in range(1, _MOST_STEPS + 1):
        span = smallest / steps
        # A few values rule out most spans of a column on no lattice: the rest only then.
        if _whole_multiples(values[:64], span) and _whole_multiples(values, span):
            return span
    return 0.0


def _whole_multiples(values: FloatArray, span: float) -> bool:
    ratio = values / span
    return bool(np.all(np.abs(ratio - np.round(ratio)) <= 1e-9 * np.maximum(ratio, 1.0)))


@dataclass(frozen=True, kw_only=True)
class _Columns:
    """What the tails of each column's sum* need, read from its values once."""

    d: FloatArray
    absolute: FloatArray
    nonzero: FloatArray
    largest: FloatArray
    powers: FloatArray
    """Rows: sum d^2, d^4, d^6, d^8 (the cumulants of sum* are their multiples)."""

    @classmethod
    def of(cls, d: FloatArray) -> _Columns:
        # Columns laid out one after another (compare's matrix) a few at a time: each
        # temporary (d^2, d^4, ...) then stays small enough for the allocator to reuse, where
        # whole-matrix ones (200 MB at 200,000 queries x 131 checks) were fresh pages every
        # time, 0.9 s of system time of 1.0 s. Such a column's sums are the same numbers
        # either way (tested); other layouts sum in another order, so they are taken whole.
        count = d.shape[1]
        absolute, largest = np.zeros(count), np.zeros(count)
        powers = np.zeros((4, count))
        whole = count if not d.flags.f_contiguous else 1
        step = max(whole, _CELLS_AT_ONCE // max(d.shape[0], 1))
        for start in range(0, count, step):
            part = d[:, start : start + step]
            where = slice(start, start + step)
            magnitude = np.abs(part)
            absolute[where] = magnitude.sum(axis=0)
            largest[where] = magnitude.max(axis=0, initial=0.0)
            square = part * part
            fourth = square * square
            powers[0, where] = square.sum(axis=0)
            powers[1, where] = fourth.sum(axis=0)
            powers[2, where] = (fourth * square).sum(axis=0)
            powers[3, where] = (fourth * fourth).sum(axis=0)
        nonzero = np.count_nonzero(d, axis=0).astype(np.float64)
        return cls(d=d, absolute=absolute, nonzero=nonzero, largest=largest, powers=powers)

    def take(self, index: np.ndarray) -> _Columns:
        return _Columns(
            d=self.d[:, index],
            absolute=self.absolute[index],
            nonzero=self.nonzero[index],
            largest=self.largest[index],
            powers=self.powers[:, index],
        )


def _upper_tail(columns: _Columns, s: FloatArray, half: FloatArray) -> tuple[FloatArray, BoolArray]:
    """P(sum* >= s) per column, taken at s - `half` where sum* lies on a lattice (a tail past
    the middle is one minus the other side's), and whether it is Hoeffding's bound."""
    p = np.empty(s.size)
    bound = np.zeros(s.size, dtype=bool)
    positive = np.flatnonzero(s > 0)
    if positive.size:
        p[positive], bound[positive] = _far_tail(
            columns.take(positive), s[positive], half[positive]
        )
    # A sum of 0 too: on a lattice its tail holds half the atom at 0 past a half.
    negative = np.flatnonzero(s <= 0)
    if negative.size:
        # P(sum* >= s) = 1 - P(sum* <= s - step) = 1 - P(sum* >= -s + step), step = 2 half.
        step = 2.0 * half[negative]
        p[negative] = (
            1.0 - _far_tail(columns.take(negative), -s[negative] + step, half[negative])[0]
        )
    return p, bound


def _far_tail(columns: _Columns, s: FloatArray, half: FloatArray) -> tuple[FloatArray, BoolArray]:
    """P(sum* >= s) for s > 0, by Lugannani-Rice at the root t of K'(t) = s - half, and
    whether it is Hoeffding's bound instead."""
    p = np.empty(s.size)
    # At or past the largest sum, only the sign vector that agrees everywhere reaches s.
    edge = s >= columns.absolute * (1.0 - 1e-12)
    # Past 1,074 values 2^-m underflows: the smallest float above 0 is above it, so still valid.
    p[edge] = np.maximum(np.exp2(-columns.nonzero[edge]), _TINIEST)
    with np.errstate(under="ignore"):
        hoeffding = np.exp(-(s**2) / (2.0 * columns.powers[0]))
    bound = ~edge & (hoeffding < _HOEFFDING_BELOW)
    p[bound] = np.maximum(hoeffding[bound], _TINIEST)
    inner = np.flatnonzero(~edge & ~bound)
    if not inner.size:
        return p, bound
    shifted = np.maximum(s[inner] - half[inner], 0.0)
    found = columns.take(inner)
    # Near the centre t d stays small, and K is its Taylor series in the power sums: no pass
    # over the values. Columns whose root makes some |t d| larger take the exact K.
    t, k, k2 = _series_saddle(found.powers, shifted)
    exact = np.flatnonzero(~(t * found.largest <= _SERIES_REACH))
    if exact.size:
        t[exact], k[exact], k2[exact] = _exact_saddle(found.take(exact), shifted[exact])
    p[inner] = _lugannani_rice(shifted, t, k, k2, found.powers[0], found.nonzero)
    return p, bound


def _series_saddle(powers: FloatArray, s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The root t of K'(t) = s and K(t), K''(t) there, from log cosh x = x^2/2 - x^4/12 +
    x^6/45 - 17 x^8/2520 (its next term is 31 x^10/14175: below 1e-5 of the first at
    |x| <= 0.5)."""
    with np.errstate(all="ignore"):  # far from the centre it diverges: those take exact K
        return _series_newton(powers, s)


def _series_newton(powers: FloatArray, s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    p2, p4, p6, p8 = powers
    t = s / p2
    for _ in range(_NEWTON_STEPS):
        t2 = t * t
        slope = t * (p2 - t2 * (p4 / 3.0 - t2 * (2.0 * p6 / 15.0 - t2 * 17.0 * p8 / 315.0)))
        curve = p2 - t2 * (p4 - t2 * (2.0 * p6 / 3.0 - t2 * 17.0 * p8 / 45.0))
        step = (slope - s) / np.maximum(curve, 1e-300)
        t = t - step
        if not bool(np.any(np.abs(step) > 1e-12 * np.abs(t))):  # NaN counts as settled
            break
    t2 = t * t
    k = t2 * (p2 / 2.0 - t2 * (p4 / 12.0 - t2 * (p6 / 45.0 - t2 * 17.0 * p8 / 2520.0)))
    k2 = p2 - t2 * (p4 - t2 * (2.0 * p6 / 3.0 - t2 * 17.0 * p8 / 45.0))
    return t, k, k2


def _exact_saddle(columns: _Columns, s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The root t of K'(t) = s and K(t), K''(t) there, from K(t) = sum log cosh(t d).

    Column by column on its non-zero values: a slice's column is mostly the zeros of the
    queries outside it, which add nothing to K."""
    t, k, k2 = np.empty(s.size), np.empty(s.size), np.empty(s.size)
    for j in range(s.size):
        column = columns.d[:, j]
        d = column[column != 0][:, None]
        t[j : j + 1] = _root(d, s[j : j + 1], columns.powers[0, j : j + 1])
        x = t[j] * d[:, 0]
        k[j] = float(_log_cosh(x).sum())
        k2[j] = float(np.dot(d[:, 0] * d[:, 0], 1.0 - np.tanh(x) ** 2))
    return t, k, k2


def _lugannani_rice(
    s: FloatArray,
    t: FloatArray,
    k: FloatArray,
    k2: FloatArray,
    square: FloatArray,
    nonzero: FloatArray,
) -> FloatArray:
    w = np.sqrt(np.maximum(2.0 * (t * s - k), 0.0))
    u = t * np.sqrt(np.maximum(k2, 0.0))
    p = np.empty(s.size)
    for j in range(s.size):
        if w[j] < _SMALL_W or u[j] <= 0:
            p[j] = 0.5 * math.erfc(s[j] / math.sqrt(2.0 * square[j]))
            continue
        density = math.exp(-0.5 * w[j] ** 2) / math.sqrt(2.0 * math.pi)
        p[j] = 0.5 * math.erfc(w[j] / math.sqrt(2.0)) + density * (1.0 / u[j] - 1.0 / w[j])
    # Far out the terms are tiny and the formula stays positive; clip float residue only
    # (and, as at the edge, a tail past 1,074 values' 2^-m to the smallest float, not 0).
    return np.clip(p, np.maximum(np.exp2(-nonzero), _TINIEST), 1.0)


def _root(d: FloatArray, s: FloatArray, square: FloatArray) -> FloatArray:
    """The t > 0 with K'(t) = sum d tanh(t d) = s, by Newton's method kept inside a bracket.

    K' rises from 0 to sum |d| and is concave for t > 0, so Newton from below never passes
    the root; the bracket guards the float edge."""
    t = s / square  # the normal approximation's root: K'(t) ~ t sum d^2 near 0
    low = np.zeros(s.size)
    high = np.full(s.size, np.inf)
    open_ = np.arange(s.size)  # the columns still moving
    for _ in range(_NEWTON_STEPS):
        cols = d[:, open_]
        tanh = np.tanh(t[open_] * cols)
        slope = np.einsum("ij,ij->j", cols, tanh)
        curve = np.einsum("ij,ij->j", cols * cols, 1.0 - tanh * tanh)
        target = s[open_]
        above = slope > target
        high[open_] = np.where(above, np.minimum(high[open_], t[open_]), high[open_])
        low[open_] = np.where(above, low[open_], np.maximum(low[open_], t[open_]))
        proposal = t[open_] - (slope - target) / np.maximum(curve, 1e-300)
        inside = (proposal > low[open_]) & (proposal < high[open_])
        bisect = np.where(
            np.isfinite(high[open_]),
            (low[open_] + high[open_]) / 2.0,
            2.0 * np.maximum(t[open_], low[open_]),
        )
        proposal = np.where(inside, proposal, bisect)
        moved = np.abs(proposal - t[open_]) > 1e-10 * np.abs(proposal)
        t[open_] = proposal
        open_ = open_[moved]
        if not open_.size:
            break
    return t


def _log_cosh(x: FloatArray) -> FloatArray:
    """log cosh x without overflow: |x| + log1p(exp(-2|x|)) - log 2."""
    a = np.abs(x)
    return a + np.log1p(np.exp(-2.0 * a)) - math.log(2.0)
