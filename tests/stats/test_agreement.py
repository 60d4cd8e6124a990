"""Agreement statistics against published worked examples, plain definitions, and krippendorff."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence

import krippendorff
import numpy as np
import pytest

from retrieval_gate.core.ids import FloatArray, object_array
from retrieval_gate.stats.agreement import (
    Agreement,
    Level,
    PairAgreement,
    Weights,
    annotator_agreement,
    cohen_kappa,
    krippendorff_alpha,
)

NAN = math.nan

# Krippendorff, K. (2011). "Computing Krippendorff's Alpha-Reliability". Annenberg School for
# Communication, Departmental Papers 43, section C ("nominal data, any number of observers,
# missing data"): 4 observers x 12 units, NaN where an observer left a unit out.
KRIPPENDORFF_C = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)

# Gamer, Lemon, Fellows & Singh, R package irr: data(anxiety), 20 subjects rated 1-6 by 3
# raters (only raters 2 and 3 are used; together they never use grade 5).
ANXIETY_RATER_2 = [3, 6, 4, 6, 2, 4, 2, 4, 3, 3, 2, 3, 3, 3, 2, 2, 1, 3, 3, 4]
ANXIETY_RATER_3 = [2, 1, 4, 4, 3, 2, 1, 6, 1, 1, 1, 2, 3, 3, 1, 1, 3, 3, 2, 2]


def table_ratings(table: list[list[int]]) -> tuple[list[float], list[float]]:
    """Rating pairs (row category, column category) that fill a contingency table."""
    a: list[float] = []
    b: list[float] = []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [float(i)] * count
            b += [float(j)] * count
    return a, b


def ref_kappa(
    a: list[float], b: list[float], weights: Weights, categories: list[float] | None = None
) -> float:
    """Weighted kappa straight from proportions: 1 - sum w p_ij / sum w p_i. p_.j."""
    cats = sorted(set(a) | set(b)) if categories is None else sorted(categories)
    k, n = len(cats), len(a)
    p = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        p[cats.index(x)][cats.index(y)] += 1 / n
    rows = [sum(p[i][j] for j in range(k)) for i in range(k)]
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]

    def w(i: int, j: int) -> float:
        if weights == "none":
            return float(i != j)
        if weights == "linear":
            return float(abs(i - j))
        return float((i - j) ** 2)

    observed = sum(w(i, j) * p[i][j] for i in range(k) for j in range(k))
    chance = sum(w(i, j) * rows[i] * cols[j] for i in range(k) for j in range(k))
    return 1 - observed / chance if chance > 1e-12 else NAN


def ref_alpha(matrix: FloatArray, level: str) -> float:
    """Alpha from the definition: 1 - D_o / D_e, over ordered pairs of values within units,
    each unit's pairs weighted 1 / (m_u - 1); expected over all pairs of pairable values."""
    units = [[float(v) for v in column if not math.isnan(v)] for column in matrix.T]
    units = [unit for unit in units if len(unit) >= 2]
    n = sum(len(unit) for unit in units)
    if n == 0:
        return NAN
    freq = Counter(v for unit in units for v in unit)
    order = sorted(freq)

    def delta(c: float, k: float) -> float:
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return (c - k) ** 2
        low, high = sorted((order.index(c), order.index(k)))
        between = sum(freq[g] for g in order[low : high + 1])
        return (between - (freq[c] + freq[k]) / 2) ** 2

    observed = (
        sum(
            delta(unit[i], unit[j]) / (len(unit) - 1)
            for unit in units
            for i in range(len(unit))
            for j in range(len(unit))
            if i != j
        )
        / n
    )
    expected = sum(freq[c] * freq[k] * delta(c, k) for c in order for k in order) / (n * (n - 1))
    return 1 - observed / expected if expected > 0 else NAN


def random_matrix(rng: np.random.Generator) -> FloatArray:
    """Raters x units with missing values, some units rated once, >= 2 distinct pairable values."""
    while True:
        raters = int(rng.integers(2, 7))
        units = int(rng.integers(1, 25))
        domain = rng.choice([0.0, 0.5, 1.0, 2.0, 3.5, 4.0, 7.0], size=int(rng.integers(2, 6)))
        matrix = rng.choice(domain, size=(raters, units))
        matrix[rng.random((raters, units)) < rng.uniform(0.0, 0.6)] = NAN
        pairable = matrix[:, (~np.isnan(matrix)).sum(axis=0) >= 2]
        if len(np.unique(pairable[~np.isnan(pairable)])) >= 2:
            return matrix


# --- Krippendorff's alpha -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "published"),
    # Krippendorff (2011), section C and its follow-up for other metrics: the same data give
    # nominal .743, ordinal .815, interval .849 (also the values of R irr's kripp.alpha).
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)],
)
def test_alpha_krippendorff_2011_section_c(level: Level, published: float) -> None:
    assert krippendorff_alpha(KRIPPENDORFF_C, level=level) == pytest.approx(published, abs=5e-4)


def test_alpha_krippendorff_2011_section_a_binary() -> None:
    # Krippendorff (2011), section A: 2 observers, 10 units, binary data, alpha = 0.095.
    # By hand: 5 units (0,0), 1 unit (1,1), 4 mixed -> o00 = 10, o11 = 2, o01 = o10 = 4;
    # n0 = 14, n1 = 6, n = 20; alpha = 1 - (n - 1) * (o01 + o10) / (2 n0 n1) = 1 - 76/84.
    ratings = np.array(
        [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]], dtype=np.float64
    )
    assert krippendorff_alpha(ratings, level="nominal") == pytest.approx(0.095, abs=5e-4)
    assert krippendorff_alpha(ratings, level="nominal") == pytest.approx(1 - 76 / 84, abs=1e-12)
    # With two values every metric is a multiple of nominal's 0/1, and alpha is scale-free.
    assert krippendorff_alpha(ratings, level="interval") == pytest.approx(1 - 76 / 84, abs=1e-12)
    assert krippendorff_alpha(ratings, level="ordinal") == pytest.approx(1 - 76 / 84, abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_krippendorff_package(level: Level) -> None:
    rng = np.random.default_rng(20110125)
    for _ in range(200):
        matrix = random_matrix(rng)
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        got = krippendorff_alpha(matrix, level=level)
        assert got == pytest.approx(expected, abs=1e-9), matrix


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_definition(level: Level) -> None:
    rng = np.random.default_rng(43)
    for _ in range(100):
        matrix = random_matrix(rng)
        got = krippendorff_alpha(matrix, level=level)
        assert got == pytest.approx(ref_alpha(matrix, level), abs=1e-9), matrix


def test_alpha_ordinal_uses_ranks_and_interval_uses_values() -> None:
    spread = KRIPPENDORFF_C.copy()
    spread[spread == 5] = 50  # same order, far larger distance
    assert krippendorff_alpha(spread, level="ordinal") == pytest.approx(
        krippendorff_alpha(KRIPPENDORFF_C, level="ordinal"), abs=1e-12
    )
    assert krippendorff_alpha(spread, level="interval") != pytest.approx(
        krippendorff_alpha(KRIPPENDORFF_C, level="interval"), abs=1e-3
    )


def test_alpha_ignores_units_rated_once() -> None:
    with_singles = np.concatenate(
        [KRIPPENDORFF_C, np.array([[9.0, NAN], [NAN, NAN], [NAN, 0.0], [NAN, NAN]])], axis=1
    )
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(with_singles, level=level) == pytest.approx(
            krippendorff_alpha(KRIPPENDORFF_C, level=level),
            abs=1e-12,
        )


def test_alpha_perfect_agreement_is_one() -> None:
    ratings = np.array([[1, 2, 3, NAN], [1, 2, 3, 4], [NAN, 2, 3, 4]])
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(ratings, level=level) == 1.0


@pytest.mark.parametrize(
    "ratings",
    [
        np.array([[1.0, NAN, 2.0], [NAN, 3.0, NAN]]),  # every unit rated once
        np.array([[2.0, 2.0, 5.0], [2.0, 2.0, NAN]]),  # pairable values all equal
        np.full((3, 4), NAN),
        np.empty((2, 0)),
        np.empty((0, 0)),
    ],
)
def test_alpha_undefined_is_nan(ratings: FloatArray) -> None:
    for level in ("nominal", "ordinal", "interval"):
        assert math.isnan(krippendorff_alpha(ratings, level=level))


def test_alpha_rejects_non_matrix() -> None:
    with pytest.raises(ValueError, match="raters x units"):
        krippendorff_alpha(np.array([1.0, 2.0, 3.0]))


def test_alpha_rejects_unknown_level() -> None:
    with pytest.raises(ValueError, match="nominal, ordinal or interval"):
        krippendorff_alpha(KRIPPENDORFF_C, level="ratio")  # type: ignore[arg-type]


# --- Cohen's kappa --------------------------------------------------------------------------


def test_kappa_wikipedia_two_by_two() -> None:
    # Wikipedia, "Cohen's kappa", simple example: 50 proposals; both yes 20, A yes/B no 5,
    # A no/B yes 10, both no 15. p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa 0.4.
    a, b = table_ratings([[20, 5], [10, 15]])
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=5e-4)
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)


# SAS PROC FREQ printout for a 3 x 3 table (as quoted in statsmodels' inter-rater tests):
# simple kappa 0.4842, weighted kappa 0.4701 with Cicchetti-Allison weights, which are
# linear agreement weights 1 - |i - j| / 2 and give the same kappa as disagreement |i - j|.
SAS_TABLE = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]
# n = 19, row totals r = (5, 8, 6), column totals c = (0, 13, 6).
# Unweighted: p_o = 13/19; p_e = (5*0 + 8*13 + 6*6)/361 = 140/361;
#   kappa = (13/19 - 140/361) / (1 - 140/361) = (247 - 140) / (361 - 140) = 107/221 = 0.48416.
# Linear: observed sum |i-j| n_ij = 4*1 + 1*2 + 1*1 = 7;
#   chance sum |i-j| r_i c_j = 5*(13*1 + 6*2) + 8*(6*1) + 6*(13*1) = 125 + 48 + 78 = 251;
#   kappa = 1 - n * 7 / 251 = 1 - 133/251 = 118/251 = 0.47012.
# Quadratic: observed 4*1 + 1*4 + 1*1 = 9; chance 5*(13*1 + 6*4) + 8*(6*1) + 6*(13*1) = 311;
#   kappa = 1 - 19 * 9 / 311 = 140/311 = 0.45016.


@pytest.mark.parametrize(
    ("weights", "published", "by_hand"),
    [("none", 0.4842, 107 / 221), ("linear", 0.4701, 118 / 251), ("quadratic", None, 140 / 311)],
)
def test_kappa_sas_three_by_three(
    weights: Weights, published: float | None, by_hand: float
) -> None:
    a, b = table_ratings(SAS_TABLE)
    got = cohen_kappa(a, b, weights=weights, categories=[0, 1, 2])
    if published is not None:
        assert got == pytest.approx(published, abs=5e-4)
    assert got == pytest.approx(by_hand, abs=1e-12)


@pytest.mark.parametrize(
    ("weights", "published"),
    # R irr: kappa2(anxiety[, 2:3]) = -0.006289308, kappa2(..., "equal") = 0.1459075,
    # kappa2(..., "squared") = 0.2520325. irr weighs by position among the grades used
    # (1, 2, 3, 4, 6), as this module does by default.
    [("none", -0.006289308), ("linear", 0.1459075), ("quadratic", 0.2520325)],
)
def test_kappa_irr_anxiety(weights: Weights, published: float) -> None:
    got = cohen_kappa(ANXIETY_RATER_2, ANXIETY_RATER_3, weights=weights)
    assert got == pytest.approx(published, abs=5e-4)
    assert got == pytest.approx(published, abs=5e-8)


def test_kappa_given_categories_set_the_positions() -> None:
    # With grade 5 on the scale, 6 sits one position further from the rest.
    scale = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    for weights in ("linear", "quadratic"):
        got = cohen_kappa(ANXIETY_RATER_2, ANXIETY_RATER_3, weights=weights, categories=scale)
        assert got == pytest.approx(
            ref_kappa(
                [float(x) for x in ANXIETY_RATER_2],
                [float(x) for x in ANXIETY_RATER_3],
                weights,
                scale,
            ),
            abs=1e-12,
        )
        assert got != pytest.approx(
            cohen_kappa(ANXIETY_RATER_2, ANXIETY_RATER_3, weights=weights),
            abs=1e-3,
        )


def test_kappa_matches_reference_on_random_inputs() -> None:
    rnd = random.Random(1960)
    for _ in range(300):
        n = rnd.randint(1, 40)
        grades = rnd.sample([0.0, 1.0, 2.0, 3.0, 4.0], rnd.randint(1, 5))
        a = [rnd.choice(grades) for _ in range(n)]
        b = [rnd.choice(grades) if rnd.random() < 0.6 else a[i] for i in range(n)]
        for weights in ("none", "linear", "quadratic"):
            expected = ref_kappa(a, b, weights)
            got = cohen_kappa(a, b, weights=weights)
            if math.isnan(expected):
                assert math.isnan(got), (a, b)
            else:
                assert got == pytest.approx(expected, abs=1e-12), (a, b, weights)
                # Symmetric weights: swapping the raters transposes the table.
                assert cohen_kappa(b, a, weights=weights) == pytest.approx(got, abs=1e-12)


def test_unweighted_kappa_is_cohen_1960() -> None:
    rnd = random.Random(7)
    for _ in range(100):
        n = rnd.randint(2, 30)
        a = [float(rnd.randint(0, 3)) for _ in range(n)]
        b = [float(rnd.randint(0, 3)) for _ in range(n)]
        p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
        p_e = sum(a.count(c) * b.count(c) for c in set(a) | set(b)) / n**2
        if p_e < 1:
            assert cohen_kappa(a, b) == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-12)


def test_weighted_kappa_equals_unweighted_for_two_categories() -> None:
    rnd = random.Random(1968)
    for _ in range(100):
        n = rnd.randint(2, 30)
        a = [rnd.choice([0.0, 3.0]) for _ in range(n)]
        b = [rnd.choice([0.0, 3.0]) for _ in range(n)]
        plain = cohen_kappa(a, b)
        if math.isnan(plain):
            continue
        assert cohen_kappa(a, b, weights="linear") == pytest.approx(plain, abs=1e-12)
        assert cohen_kappa(a, b, weights="quadratic") == pytest.approx(plain, abs=1e-12)


def test_quadratic_kappa_is_a_concordance_correlation_of_positions() -> None:
    # Fleiss & Cohen (1973): with positions x, y, quadratic kappa is
    # 2 s_xy / (s_x^2 + s_y^2 + (mean x - mean y)^2) (moments over n, not n - 1).
    rnd = random.Random(1973)
    for _ in range(100):
        n = rnd.randint(2, 30)
        a = [float(rnd.randint(0, 4)) for _ in range(n)]
        b = [min(4.0, max(0.0, x + rnd.randint(-2, 2))) for x in a]
        scale = [0.0, 1.0, 2.0, 3.0, 4.0]
        x, y = np.array(a), np.array(b)
        denominator = x.var() + y.var() + (x.mean() - y.mean()) ** 2
        if denominator == 0:
            continue
        concordance = 2 * np.mean((x - x.mean()) * (y - y.mean())) / denominator
        got = cohen_kappa(a, b, weights="quadratic", categories=scale)
        assert got == pytest.approx(concordance, abs=1e-12)


def test_kappa_perfect_agreement_is_one() -> None:
    for weights in ("none", "linear", "quadratic"):
        assert cohen_kappa([0, 1, 2, 2], [0, 1, 2, 2], weights=weights) == 1.0


def test_kappa_single_category_is_nan() -> None:
    for weights in ("none", "linear", "quadratic"):
        assert math.isnan(cohen_kappa([2, 2, 2], [2, 2, 2], weights=weights))
        # Unused categories on the scale do not make it defined.
        assert math.isnan(cohen_kappa([2, 2], [2, 2], weights=weights, categories=[0, 1, 2]))


def test_kappa_one_rater_constant_is_zero_not_nan() -> None:
    # Chance disagreement exists (the other rater varies), so kappa is defined: 1 - 2/2 = 0.
    assert cohen_kappa([1, 1, 1, 1], [0, 1, 0, 1]) == 0.0


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [([], [], "at least one item"), ([1, 2], [1], "same items"), ([1, NAN], [1, 2], "every item")],
)
def test_kappa_rejects_bad_input(a: list[float], b: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cohen_kappa(a, b)


def test_kappa_rejects_rating_outside_categories() -> None:
    with pytest.raises(ValueError, match=r"rating 3 is not among the categories \[0.0, 1.0\]"):
        cohen_kappa([0, 1, 3], [0, 1, 1], categories=[0, 1])


def test_kappa_names_the_first_rating_outside_categories() -> None:
    # Several strays, the first neither the smallest nor the largest: the message points at
    # the one a reader meets first in the ratings.
    with pytest.raises(ValueError, match=r"rating 5 is not among"):
        cohen_kappa([0, 5, 1, 9, 2], [0, 1, 1, 0, 1], categories=[0, 1, 2])
    with pytest.raises(ValueError, match=r"rating 7 is not among"):
        cohen_kappa([0, 1, 2], [2, 7, -1], categories=[0, 1, 2])


def test_kappa_rejects_unknown_weights() -> None:
    with pytest.raises(ValueError, match="none, linear or quadratic"):
        cohen_kappa([0, 1], [0, 1], weights="cubic")  # type: ignore[arg-type]


# --- annotator_agreement --------------------------------------------------------------------

# (query code, doc, grade, annotator). alice, bob and carol overlap; dave shares items with
# alice only; erin's one row is "pooled but not judged". q0/d1 and q1/d1 are different items.
# alice judged q0/d3 twice: the later 3 stands. Shared items: q0/d1 (alice, bob, carol),
# q0/d2 (alice, bob, carol), q0/d3 (alice, bob), q1/d1 (alice, carol), q1/d4 (bob, carol),
# q1/d5 and q1/d6 (alice, dave); q1/d7 (dave) and q0/d8 (carol; bob's -1 dropped) are not.
JUDGMENTS = [
    (0, "d1", 2, "alice"),
    (0, "d1", 2, "bob"),
    (0, "d1", 1, "carol"),
    (0, "d2", 0, "alice"),
    (0, "d2", 1, "bob"),
    (0, "d2", 0, "carol"),
    (0, "d3", 0, "alice"),
    (0, "d3", 3, "bob"),
    (1, "d1", 1, "alice"),
    (1, "d1", 1, "carol"),
    (1, "d4", 0, "bob"),
    (1, "d4", 2, "carol"),
    (1, "d5", 2, "alice"),
    (1, "d5", 3, "dave"),
    (1, "d6", 0, "alice"),
    (1, "d6", 0, "dave"),
    (1, "d7", 1, "dave"),
    (0, "d8", -1, "bob"),
    (0, "d8", 2, "carol"),
    (0, "d9", -1, "erin"),
    (0, "d3", 3, "alice"),
]


def agreement_of(
    rows: Sequence[tuple[int, str, float, str]], *, graded: bool | None = None
) -> Agreement:
    return annotator_agreement(
        np.array([row[0] for row in rows], dtype=np.int64),
        object_array(row[1] for row in rows),
        np.array([row[2] for row in rows], dtype=np.float64),
        object_array(row[3] for row in rows),
        graded=graded,
    )


def test_agreement_pairs_and_counts() -> None:
    result = agreement_of(JUDGMENTS)
    assert result.annotators == ("alice", "bob", "carol", "dave")
    assert [(p.first, p.second, p.shared) for p in result.pairs] == [
        ("alice", "bob", 3),
        ("alice", "carol", 3),
        ("alice", "dave", 2),
        ("bob", "carol", 3),
        ("bob", "dave", 0),
        ("carol", "dave", 0),
    ]
    assert result.items == 7
    assert (result.weights, result.level) == ("quadratic", "ordinal")


def test_agreement_kappa_per_pair_is_kappa_of_shared_items() -> None:
    result = agreement_of(JUDGMENTS)
    scale = [0, 1, 2, 3]  # every grade in the data, not just the pair's
    kappas = {(p.first, p.second): p.kappa for p in result.pairs}
    shared = {
        ("alice", "bob"): ([2, 0, 3], [2, 1, 3]),  # q0/d1, q0/d2, q0/d3 (alice's later 3)
        ("alice", "carol"): ([2, 0, 1], [1, 0, 1]),  # q0/d1, q0/d2, q1/d1
        ("alice", "dave"): ([2, 0], [3, 0]),  # q1/d5, q1/d6
        ("bob", "carol"): ([2, 1, 0], [1, 0, 2]),  # q0/d1, q0/d2, q1/d4
    }
    for pair, (a, b) in shared.items():
        expected = cohen_kappa(a, b, weights="quadratic", categories=scale)
        assert kappas[pair] == pytest.approx(expected, abs=1e-12), pair
    # On the pair's own grades (0, 2, 3) the positions would differ: 1 - 2/6, not 1 - 2/14.
    assert kappas["alice", "dave"] == pytest.approx(1 - 2 / 14, abs=1e-12)
    assert math.isnan(kappas["bob", "dave"])
    assert math.isnan(kappas["carol", "dave"])


def test_agreement_alpha_is_alpha_of_the_shared_matrix() -> None:
    # Columns: q0/d1, q0/d2, q0/d3, q1/d1, q1/d4, q1/d5, q1/d6; rows alice, bob, carol, dave.
    matrix = np.array(
        [
            [2, 0, 3, 1, NAN, 2, 0],
            [2, 1, 3, NAN, 0, NAN, NAN],
            [1, 0, NAN, 1, 2, NAN, NAN],
            [NAN, NAN, NAN, NAN, NAN, 3, 0],
        ]
    )
    assert agreement_of(JUDGMENTS).alpha == pytest.approx(
        krippendorff_alpha(matrix, level="ordinal"), abs=1e-12
    )
    assert agreement_of(JUDGMENTS, graded=False).alpha == pytest.approx(
        krippendorff_alpha(matrix, level="nominal"), abs=1e-12
    )


def test_agreement_keeps_the_last_of_duplicate_rows() -> None:
    swapped = [row for row in JUDGMENTS if row != (0, "d3", 3, "alice")]
    swapped.insert(0, (0, "d3", 3, "alice"))  # now the 0 comes later and stands
    pair = agreement_of(swapped).pairs[0]
    assert (pair.first, pair.second, pair.shared) == ("alice", "bob", 3)
    assert pair.kappa == pytest.approx(
        cohen_kappa([2, 0, 0], [2, 1, 3], weights="quadratic", categories=[0, 1, 2, 3]),
        abs=1e-12,
    )
    assert pair.kappa != pytest.approx(agreement_of(JUDGMENTS).pairs[0].kappa, abs=1e-3)


def test_agreement_binary_detected_ignoring_unjudged_grades() -> None:
    # Grades 0, 1 and -1: only two are judgments, so the data are binary.
    rows = [
        (0, "a", 1, "x"),
        (0, "a", 1, "y"),
        (0, "b", 0, "x"),
        (0, "b", 1, "y"),
        (0, "c", 0, "x"),
        (0, "c", 0, "y"),
        (0, "d", -1, "x"),
        (0, "d", 1, "y"),
    ]
    result = agreement_of(rows)
    assert (result.weights, result.level) == ("none", "nominal")
    assert result.items == 3
    assert result.pairs == (
        PairAgreement(first="x", second="y", shared=3, kappa=cohen_kappa([1, 0, 0], [1, 1, 0])),
    )
    assert result.alpha == pytest.approx(
        krippendorff_alpha(np.array([[1.0, 0, 0], [1, 1, 0]]), level="nominal"), abs=1e-12
    )
    forced = agreement_of(rows, graded=True)
    assert (forced.weights, forced.level) == ("quadratic", "ordinal")


def test_agreement_graded_can_be_overridden() -> None:
    result = agreement_of(JUDGMENTS, graded=False)
    assert (result.weights, result.level) == ("none", "nominal")
    kappas = {(p.first, p.second): p.kappa for p in result.pairs}
    assert kappas["alice", "bob"] == pytest.approx(cohen_kappa([2, 0, 3], [2, 1, 3]), abs=1e-12)


def test_agreement_matches_reference_on_random_judgments() -> None:
    rnd = random.Random(2011)
    for _ in range(30):
        names = ["a1", "b2", "c3", "d4", "e5"][: rnd.randint(1, 5)]
        rows = [
            (
                rnd.randint(0, 3),
                f"doc{rnd.randint(0, 9)}",
                float(rnd.randint(-1, 3)),
                rnd.choice(names),
            )
            for _ in range(rnd.randint(0, 120))
        ]
        # Reference: last non-negative grade per (item, annotator), in plain dicts.
        judged: dict[tuple[int, str], dict[str, float]] = {}
        for query, doc, grade, name in rows:
            if grade >= 0:
                judged.setdefault((query, doc), {})[name] = grade
        people = sorted({name for by in judged.values() for name in by})
        grades = sorted({grade for by in judged.values() for grade in by.values()})
        graded = len(grades) > 2
        weights: Weights = "quadratic" if graded else "none"
        shared = [by for by in judged.values() if len(by) >= 2]

        result = agreement_of(rows)
        assert result.annotators == tuple(people)
        assert result.items == len(shared)
        assert result.weights == weights
        expected_pairs = []
        for i, first in enumerate(people):
            for second in people[i + 1 :]:
                both = [by for by in shared if first in by and second in by]
                kappa = (
                    cohen_kappa(
                        [by[first] for by in both],
                        [by[second] for by in both],
                        weights=weights,
                        categories=grades,
                    )
                    if both
                    else NAN
                )
                expected_pairs.append((first, second, len(both), kappa))
        got_pairs = [(p.first, p.second, p.shared, p.kappa) for p in result.pairs]
        assert len(got_pairs) == len(expected_pairs)
        for got, expected in zip(got_pairs, expected_pairs, strict=True):
            assert got[:3] == expected[:3]
            assert got[3] == pytest.approx(expected[3], abs=1e-12, nan_ok=True)
        matrix = np.array([[by.get(name, NAN) for by in shared] for name in people])
        level = "ordinal" if graded else "nominal"
        expected_alpha = ref_alpha(matrix.reshape(len(people), len(shared)), level)
        assert result.alpha == pytest.approx(expected_alpha, abs=1e-9, nan_ok=True)


def test_agreement_of_nothing() -> None:
    result = agreement_of([(0, "d1", -1, "x")])
    assert (result.annotators, result.pairs, result.items) == ((), (), 0)
    assert (result.weights, result.level) == ("none", "nominal")
    assert math.isnan(result.alpha)
    assert agreement_of([]).annotators == ()


def test_agreement_one_annotator_has_no_pairs() -> None:
    result = agreement_of([(0, "d1", 1, "solo"), (0, "d2", 0, "solo")])
    assert result.annotators == ("solo",)
    assert result.pairs == ()
    assert result.items == 0
    assert math.isnan(result.alpha)


def test_agreement_rejects_columns_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        annotator_agreement(
            np.array([0, 0], dtype=np.int64),
            object_array(["d1", "d2"]),
            np.array([1.0]),
            object_array(["x", "y"]),
        )
