"""Ranking: row order never matters; ties go to the higher doc id; grades join per query."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.core.ids import ByteIds, first_duplicate_bytes
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.errors import InputError
from retrieval_gate.metrics import evaluate
from retrieval_gate.metrics.ranking import rank_judgments
from retrieval_gate.readers import qrels_from_dict, run_from_dict

METRICS = ["ndcg@5", "ap", "rr", "precision@3", "bpref", "r_precision", "err(g_max=3)@4"]


def shuffled(run: Run, seed: int) -> Run:
    order = np.random.default_rng(seed).permutation(len(run))
    return Run(run.query_ids, run.query[order], run.docs[order], run.score[order])


def random_case(seed: int) -> tuple[Run, Qrels]:
    rng = np.random.default_rng(seed)
    queries, docs, scores = [], [], []
    judgments: dict[str, dict[str, float]] = {}
    for q in range(6):
        ids = rng.choice(30, size=int(rng.integers(0, 15)), replace=False)
        for doc in ids:
            queries.append(f"q{q}")
            docs.append(f"d{doc}")
            scores.append(float(rng.integers(0, 4)))  # few distinct scores: many ties
        judgments[f"q{q}"] = {f"d{d}": float(rng.integers(-1, 4)) for d in rng.choice(30, 8)}
    return Run.from_rows(queries, docs, scores), qrels_from_dict(judgments)


@pytest.mark.parametrize("seed", range(40))
def test_row_order_does_not_change_any_value(seed: int) -> None:
    run, qrels = random_case(seed)
    expected = evaluate(run, qrels, METRICS).values
    for shuffle_seed in range(3):
        got = evaluate(shuffled(run, shuffle_seed), qrels, METRICS).values
        for name, values in expected.items():
            np.testing.assert_array_equal(got[name], values, err_msg=name)


def test_ties_rank_the_higher_doc_id_first_as_strings() -> None:
    run = Run.from_rows(["q"] * 3, ["d9", "d10", "d2"], [1.0, 1.0, 1.0])
    qrels = qrels_from_dict({"q": {"d9": 1, "d10": 2, "d2": 3}})
    ranked = rank_judgments(run, qrels, None)
    np.testing.assert_array_equal(ranked.grades, [[1.0, 3.0, 2.0]])  # d9 > d2 > d10


def test_a_doc_judged_for_another_query_is_unjudged_here() -> None:
    run = Run.from_rows(["a", "a", "b"], ["d1", "d3", "d1"], [2.0, 1.0, 1.0])
    qrels = qrels_from_dict({"a": {"d1": 2}, "b": {"d2": 1}})
    ranked = rank_judgments(run, qrels, 5)
    assert ranked.grades[0, 0] == 2.0
    assert np.isnan(ranked.grades[1, 0])
    assert np.isneginf(ranked.grades[1, 1])  # past the end of b's results


@pytest.mark.parametrize("seed", range(20))
def test_mappings_are_scored_exactly_like_runs(seed: int) -> None:
    run, qrels = random_case(seed)
    results = run.to_dict()
    results["unlabelled"] = {"d1": 1.0}
    from_mapping = evaluate(results, qrels, METRICS)
    from_run = evaluate(run_from_dict(results), qrels, METRICS)
    assert from_mapping.ignored_queries == from_run.ignored_queries == ("unlabelled",)
    assert from_mapping.missing_queries == from_run.missing_queries
    for name, values in from_run.values.items():
        np.testing.assert_array_equal(from_mapping.values[name], values, err_msg=name)


def test_bad_scores_in_a_mapping_are_reported_like_a_file_error() -> None:
    with pytest.raises(InputError, match="'q', doc 'b': score 'x' is not a finite number"):
        evaluate({"q": {"a": 1.0, "b": "x"}}, {"q": {"a": 1}}, ["rr"])


def as_bytes(run: Run) -> Run:
    """The same run holding its doc ids as one UTF-8 buffer, as the TREC reader builds it."""
    return Run(run.query_ids, run.query, ByteIds.from_strings(run.docs), run.score)


@pytest.mark.parametrize("seed", range(20))
def test_doc_ids_held_as_bytes_score_exactly_like_strings(seed: int) -> None:
    run, qrels = random_case(seed)
    expected = evaluate(run, qrels, METRICS).values
    got = evaluate(as_bytes(shuffled(run, seed)), qrels, METRICS).values
    for name, values in expected.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)


def test_ties_compare_utf8_bytes_as_trec_eval_compares_them() -> None:
    docs = ["é", "z", "ÿ", "a", "☃", "Z"]
    run = Run.from_rows(["q"] * len(docs), docs, [1.0] * len(docs))
    qrels = qrels_from_dict({"q": {d: float(i) for i, d in enumerate(docs)}})
    ranked = rank_judgments(as_bytes(run), qrels, None)
    by_bytes = sorted(docs, key=str.encode, reverse=True)  # strcmp on UTF-8, descending
    np.testing.assert_array_equal(ranked.grades[0], [float(docs.index(d)) for d in by_bytes])
    np.testing.assert_array_equal(rank_judgments(run, qrels, None).grades, ranked.grades)


def test_the_join_and_the_duplicate_check_confirm_every_hash_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hashes are only candidates: with every doc id hashing alike, grades and duplicates
    still come from comparing the ids themselves."""
    run, qrels = random_case(7)
    expected = evaluate(run, qrels, METRICS).values
    monkeypatch.setattr(
        ByteIds, "hashes", lambda self, keep=True: np.zeros(len(self), dtype=np.uint64)
    )
    got = evaluate(as_bytes(run), qrels, METRICS).values
    for name, values in expected.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)
    doubled = Run.from_rows(["q", "q", "q"], ["a", "b", "c"], [1.0, 2.0, 3.0])
    assert first_duplicate_bytes(doubled.query, doubled.doc_bytes, doubled.keys) is None
    again = as_bytes(Run.from_rows(["q", "r", "q"], ["a", "a", "b"], [1.0, 2.0, 3.0]))
    again.query[2] = 0
    again.doc_bytes.data[2] = ord("a")  # row 2 now repeats row 0's (q, a)
    assert first_duplicate_bytes(again.query, again.doc_bytes, again.keys) == (0, 2)


@pytest.mark.parametrize("depth", [None, 3, 50])
def test_unlabelled_queries_change_nothing_however_many_results_they_have(
    depth: int | None,
) -> None:
    run, qrels = random_case(3)
    results = run.to_dict()
    alone = rank_judgments(run, qrels, depth)
    for extra in ({"zz": {f"x{i}": float(i) for i in range(40)}}, {"00": {"a": 1.0}}):
        mixed = rank_judgments(as_bytes(run_from_dict({**extra, **results})), qrels, depth)
        np.testing.assert_array_equal(mixed.grades, alone.grades)
        np.testing.assert_array_equal(mixed.num_ret, alone.num_ret)
        assert mixed.ignored_queries == tuple(extra)


def test_docs_at_reads_only_the_rows_asked_for() -> None:
    run = Run.from_rows(["q", "q", "r"], ["é", "b", "c"], [1.0, 2.0, 3.0])
    held = as_bytes(run)
    rows = np.array([2, 0])
    assert held.docs_at(rows).tolist() == ["c", "é"]
    assert not held._ids.has_strings  # no string was built for the other rows
    assert run.docs_at(rows).tolist() == ["c", "é"]


@pytest.mark.parametrize("seed", range(8))
def test_tied_rows_are_put_in_doc_id_descending_order_whatever_order_they_came_in(
    seed: int,
) -> None:
    from retrieval_gate.metrics.ranking import _names_descending

    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 6, size=int(rng.integers(1, 40)))
    group = np.repeat(np.arange(len(sizes)), sizes)
    names = np.array([f"d{int(x)}" for x in rng.choice(1000, len(group), replace=False)], "S")
    # Each group's rows by name descending, groups ascending: the order the metrics rank.
    wanted = sorted(range(len(names)), key=lambda i: names[i], reverse=True)
    wanted = sorted(wanted, key=lambda i: int(group[i]))
    for given in (names, names[np.asarray(wanted)]):
        order = _names_descending(given, group)
        got = given[order]
        for g in range(len(sizes)):
            inside = got[group == g].tolist()
            assert inside == sorted(inside, reverse=True)
    in_order = names[np.asarray(wanted)]
    assert _names_descending(in_order, group).tolist() == list(range(len(names)))
