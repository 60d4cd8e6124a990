"""The standard normal's upper tail, elementwise over arrays, to the last digit or so."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from retrieval_gate.core.ids import FloatArray

# W. J. Cody's near-minimax rational approximations (Math. Comp. 23, 1969, 631-637, as
# given in ACM TOMS Algorithm 715, 1993): the central part, |x| <= 0.66291 ...
_A = (
    2.2352520354606839287,
    161.02823106855587881,
    1067.6894854603709582,
    18154.981253343561249,
    0.065682337918207449113,
)
_B = (47.20258190468824187, 976.09855173777669322, 10260.932208618978205, 45507.789335026729956)
# ... the tail up to sqrt(32) ...
_C = (
    0.39894151208813466764,
    8.8831497943883759412,
    93.506656132177855979,
    597.27027639480026226,
    2494.5375852903726711,
    6848.1904505362823326,
    11602.651437647350124,
    9842.7148383839780218,
    1.0765576773720192317e-8,
)
_D = (
    22.266688044328115691,
    235.38790178262499861,
    1519.377599407554805,
    6485.558298266760755,
    18615.571640885098091,
    34900.952721145977266,
    38912.003286093271411,
    19685.429676859990727,
)
# ... and the far tail, in 1 / x^2.
_P = (
    0.21589853405795699,
    0.1274011611602473639,
    0.022235277870649807,
    0.001421619193227893466,
    2.9112874951168792e-5,
    0.02307344176494017303,
)
_Q = (
    1.28426009614491121,
    0.468238212480865118,
    0.0659881378689285515,
    0.00378239633202758244,
    7.29751555083966205e-5,
)
_CENTRAL = 0.66291
_FAR = math.sqrt(32.0)
_NONE_BEYOND = 50.0
"""P(Z >= 50) is about 1e-545: nothing a double holds."""


def _density_times(y: FloatArray, ratio: FloatArray) -> FloatArray:
    """ratio * exp(-y^2 / 2), the square split at a multiple of 1/16 (exact in binary) so the
    far tail keeps its relative precision."""
    head = np.floor(y * 16.0) / 16.0
    rest = (y - head) * (y + head)
    return np.exp(-head * head * 0.5) * np.exp(-rest * 0.5) * ratio


def normal_tails(x: ArrayLike) -> FloatArray:
    """P(Z >= x) elementwise, Z standard normal: within a few units in the last place of
    0.5 * math.erfc(x / sqrt(2)) (tests/stats/test_normal_tail.py), at numpy's speed rather
    than a Python call per element. NaN stays NaN."""
    x = np.asarray(x, dtype=np.float64)
    y = np.abs(x)
    tail = np.full(x.shape, np.nan)
    central = y <= _CENTRAL
    if central.any():
        xc = x[central]
        square = xc * xc
        top, bottom = _A[4] * square, square
        for a, b in zip(_A[:3], _B[:3], strict=True):
            top, bottom = (top + a) * square, (bottom + b) * square
        tail[central] = 0.5 - xc * (top + _A[3]) / (bottom + _B[3])
    # Beyond the centre: the smaller tail P(Z >= |x|), then 1 minus it where x is negative.
    small = np.full(x.shape, np.nan)
    middle = (y > _CENTRAL) & (y <= _FAR)
    if middle.any():
        ym = y[middle]
        top, bottom = _C[8] * ym, ym
        for c, d in zip(_C[:7], _D[:7], strict=True):
            top, bottom = (top + c) * ym, (bottom + d) * ym
        small[middle] = _density_times(ym, (top + _C[7]) / (bottom + _D[7]))
    far = (y > _FAR) & (y < _NONE_BEYOND)
    if far.any():
        yf = y[far]
        inverse = 1.0 / (yf * yf)
        top, bottom = _P[5] * inverse, inverse
        for p, q in zip(_P[:4], _Q[:4], strict=True):
            top, bottom = (top + p) * inverse, (bottom + q) * inverse
        ratio = (1.0 / math.sqrt(2.0 * math.pi) - inverse * (top + _P[4]) / (bottom + _Q[4])) / yf
        small[far] = _density_times(yf, ratio)
    small[y >= _NONE_BEYOND] = 0.0
    outer = ~central & ~np.isnan(x)
    tail[outer] = np.where(x[outer] > 0, small[outer], 1.0 - small[outer])
    return tail
