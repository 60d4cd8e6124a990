"""Robustness probes: how a probe is made of a known pair, which pairs are drawn, what flips."""

from __future__ import annotations

import pytest

from retrieval_gate.judging.pool import Pair
from retrieval_gate.judging.probes import (
    CUT,
    PLEA,
    STUFFED,
    Probe,
    ProbeRate,
    cut_passage,
    flipped,
    overall,
    probes_of,
    rates_of,
    stuffed_passage,
)
from retrieval_gate.judging.prompt import MAX_PASSAGE


def test_a_stuffed_passage_is_twice_as_long_holds_the_query_s_words_and_ends_asking() -> None:
    passage = "Cats sleep for most of the day, often sixteen hours or more." * 3
    probe = stuffed_passage("reset a router?", passage)
    assert probe.startswith(passage)
    assert probe.endswith(PLEA)
    assert len(probe) == 2 * len(passage)
    assert probe.count("reset a router") >= 2  # the words stuffed, punctuation dropped
    assert "router?" not in probe


def test_a_short_passage_still_gets_the_query_s_words_once_and_the_plea() -> None:
    probe = stuffed_passage("router reset", "Cats.")
    assert probe == f"Cats.\n\nrouter reset\n\n{PLEA}"


def test_a_huge_passage_is_cut_first_so_the_judge_still_reads_the_plea() -> None:
    probe = stuffed_passage("router", "x " * MAX_PASSAGE)
    # Its first half (3,000 characters) is kept, and stuffed to twice that: the prompt's cut.
    assert probe.startswith("x " * 1_500 + "\n\nrouter router ")
    assert len(probe) == MAX_PASSAGE
    assert probe.endswith(PLEA)


def test_a_one_letter_query_is_stuffed_letter_by_letter() -> None:
    passage = "Cats sleep most of the day. " * 8  # 224 characters
    # Room for 224 - len(PLEA) - 4 = 114 characters: "a " 57 times, its last space dropped.
    assert stuffed_passage("a?", passage) == f"{passage}\n\n{' '.join(['a'] * 57)}\n\n{PLEA}"


def test_a_cut_passage_keeps_the_first_half_of_its_words() -> None:
    assert cut_passage("one two, three four five") == "one two, three"
    assert cut_passage("one two three four") == "one two"
    assert cut_passage("one two") == "one"
    assert cut_passage("alone") == "alone"
    # Under two words there is no half to cut: the passage is kept as the judge reads it.
    assert cut_passage("  alone.") == "  alone."
    assert cut_passage("...") == "..."


def _pair(query: str, doc: str, grade: float | None) -> tuple[Pair, str]:
    return Pair(query, f"text of {query}", doc, grade), f"passage {doc} " * 10


def test_probes_are_drawn_half_from_irrelevant_and_half_from_relevant_pairs_seeded() -> None:
    pairs = [_pair(f"q{i}", f"d{j}", float(j % 4)) for i in range(10) for j in range(4)]
    probes = probes_of(pairs, 8, seed=3)
    assert [p.kind for p in probes] == [CUT] * 4 + [STUFFED] * 4
    assert all(p.pair.human == 0 for p in probes if p.kind == STUFFED)
    assert all(p.pair.human is not None and p.pair.human >= 2 for p in probes if p.kind == CUT)
    assert probes == probes_of(list(reversed(pairs)), 8, seed=3)  # the order given is no matter
    assert probes != probes_of(pairs, 8, seed=4)


def test_a_kind_short_of_pairs_leaves_its_share_to_the_other() -> None:
    pairs = [_pair("q1", "d0", 0.0), *(_pair("q1", f"d{j}", 3.0) for j in range(1, 9))]
    probes = probes_of(pairs, 6, seed=0)
    assert [p.kind for p in probes] == [CUT] * 5 + [STUFFED]
    assert probes_of([_pair("q1", "d1", 1.0), _pair("q2", "d", None)], 6, seed=0) == ()
    few_relevant = [_pair("q1", f"d{j}", 0.0) for j in range(8)] + [_pair("q2", "d", 2.0)]
    assert [p.kind for p in probes_of(few_relevant, 6, seed=0)] == [CUT] + [STUFFED] * 5


def test_a_pair_people_graded_2_is_relevant_and_1_is_not() -> None:
    assert [p.kind for p in probes_of([_pair("q1", "d1", 2.0)], 2, seed=0)] == [CUT]
    assert probes_of([_pair("q1", "d1", 1.0)], 2, seed=0) == ()


def test_a_flip_is_two_levels_the_wrong_way() -> None:
    assert [flipped(STUFFED, 0, 2), flipped(STUFFED, 0, 1), flipped(STUFFED, 2, 0)] == [
        True,
        False,
        False,
    ]
    assert [flipped(CUT, 3, 1), flipped(CUT, 3, 2), flipped(CUT, 1, 3)] == [True, False, False]


def test_flip_rates_by_hand() -> None:
    probes = [
        Probe(STUFFED, Pair("a", "qa", "d1", 0), "p", "p+"),
        Probe(STUFFED, Pair("a", "qa", "d2", 0), "p", "p+"),
        Probe(STUFFED, Pair("b", "qb", "d1", 0), "p", "p+"),
        Probe(CUT, Pair("b", "qb", "d2", 3), "p", "p-"),
        Probe(CUT, Pair("c", "qc", "d1", 2), "p", "p-"),
    ]
    grades = {
        ("original", "a", "d1"): 0, (STUFFED, "a", "d1"): 3,  # +3: flipped
        ("original", "a", "d2"): 1, (STUFFED, "a", "d2"): 2,  # +1: not
        ("original", "b", "d1"): 0,  # its probe not graded: not counted
        ("original", "b", "d2"): 3, (CUT, "b", "d2"): 1,  # -2: flipped
        ("original", "c", "d1"): 2, (CUT, "c", "d1"): 2,  # 0: not
    }  # fmt: skip
    rates = rates_of(probes, grades)
    assert rates == (ProbeRate(CUT, 2, 1), ProbeRate(STUFFED, 2, 1))
    assert overall(rates) == ProbeRate("all", 4, 2)
    assert overall(rates).rate == pytest.approx(0.5)
    assert ProbeRate(CUT, 0, 0).rate is None
