"""overlap@k, lost@k, recall against an exact search, and RBO_ext against published values."""

from __future__ import annotations

import string

import pytest

from retrieval_gate.metrics.rank_overlap import lost_at_k, overlap_at_k, rbo_ext, recall_against


def _extrapolated_by_definition(a: list[str], b: list[str], p: float) -> float:
    """RBO as its infinite sum, (1 - p) sum p^(d-1) A_d, each depth's agreement A_d counted
    from the sets themselves: to the short list's end as seen; past it with the short list's
    unseen rest assumed to agree at the rate seen at its end; past the long list's end at the
    rate of equation 32's tail (Webber et al. 2010, section 4.3). Summed until it converges."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, depth = len(short), len(long)
    x_s = len(set(short) & set(long[:s]))
    total = 0.0
    for d in range(1, 4000):
        if d <= s:
            agreement = len(set(short[:d]) & set(long[:d])) / d
        elif d <= depth:
            agreement = (len(set(short) & set(long[:d])) + x_s * (d - s) / s) / d
        else:
            agreement = (len(set(short) & set(long)) - x_s) / depth + x_s / s
        total += (1 - p) * p ** (d - 1) * agreement
    return total


def test_overlap_counts_shared_documents_over_k() -> None:
    assert overlap_at_k(["a", "b", "c"], ["c", "a", "z"], 3) == pytest.approx(2 / 3)
    assert overlap_at_k(["a", "b"], ["a", "b"], 10) == pytest.approx(0.2)
    assert overlap_at_k(list("abcdef"), list("fedcba"), 3) == 0.0


def test_lost_counts_reference_documents_missing_from_current() -> None:
    assert lost_at_k(list("abcdefghij"), list("abcdefwxyz"), 10) == 4
    assert lost_at_k(list("abc"), [], 10) == 3
    assert lost_at_k([], list("abc"), 10) == 0


def test_recall_against_exact_search() -> None:
    assert recall_against(list("abcd"), list("abxy"), 4) == 0.5
    assert recall_against([], list("ab"), 4) == 1.0
    with pytest.raises(ValueError, match="depth k"):
        recall_against(["a"], ["a"], 0)


@pytest.mark.parametrize(
    ("first", "second", "p", "expected"),
    [
        # Webber et al.'s identities.
        ("abcdefg", "abcdefg", 0.9, 1.0),
        ("abcde", "fghij", 0.9, 0.0),
        ("", "", 0.9, 1.0),
        ("a", "", 0.9, 0.0),
        # A short list that is the long one's prefix agrees wholly (changyaochen/rbo's case).
        (string.ascii_lowercase, string.ascii_lowercase[:7], 0.95, 1.0),
        # ragrawal/measures' and b4ny4n/rankmeasures' published example: 0.828.
        ("12345", "23415", 0.9, 0.828),
    ],
)
def test_rbo_published_values(first: str, second: str, p: float, expected: float) -> None:
    assert round(rbo_ext(list(first), list(second), p), 3) == expected


@pytest.mark.parametrize(
    ("first", "second"),
    [("abcdefg", "zcavwxy"), ("abcdefghij", "bacdjihgfe"), ("abcdefghij", "abcxyz"), ("ab", "ba")],
)
@pytest.mark.parametrize("p", [0.5, 0.9, 0.98])
def test_rbo_is_its_infinite_sum_under_the_extrapolation(first: str, second: str, p: float) -> None:
    assert rbo_ext(list(first), list(second), p) == pytest.approx(
        _extrapolated_by_definition(list(first), list(second), p), abs=1e-9
    )


def test_rbo_reads_to_depth_k_and_counts_duplicates_once() -> None:
    assert rbo_ext(list("abcxyz"), list("abcuvw"), 0.9, k=3) == pytest.approx(1.0)
    assert rbo_ext(list("aab"), list("ab"), 0.9) == pytest.approx(1.0)
    assert rbo_ext(list("ab"), list("ba"), 0.9) == rbo_ext(list("ba"), list("ab"), 0.9)
    with pytest.raises(ValueError, match="p must be"):
        rbo_ext(["a"], ["a"], 1.0)
