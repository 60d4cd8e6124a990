"""Each query's top k cut from a run's arrays equals ranking its rows one by one in Python."""

from __future__ import annotations

import random

import numpy as np
import pytest

from retrieval_gate.core.model import Hit
from retrieval_gate.core.run import Run
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.metrics.top_k import (
    RankedHits,
    listed_run,
    listed_runs,
    top_k_ids,
    top_k_run,
)


def random_run(seed: int) -> Run:
    """Rows in a shuffled order, many tied scores, ids of varied length and a non-ASCII one."""
    rng = random.Random(seed)
    queries, docs, scores = [], [], []
    for q in range(rng.randint(0, 12)):
        names = rng.sample(
            ["a", "b", "ab", "d10", "d9", "é", "zz", "d1", "x" * 30], rng.randint(0, 9)
        )
        for name in names:
            queries.append(f"q{q}")
            docs.append(name)
            scores.append(float(rng.choice([1, 2, 2, 3, 0.5, -1])))
    rows = list(zip(queries, docs, scores, strict=True))
    rng.shuffle(rows)
    return Run.from_rows(
        [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], empty_queries=["q99"]
    )


def expected(run: Run, k: int) -> dict[str, list[tuple[str, float]]]:
    """trec_eval's order (DESIGN): score descending, doc id descending on ties."""
    out: dict[str, list[tuple[str, float]]] = {}
    for query, results in run.to_dict().items():
        ranked = sorted(results.items(), key=lambda item: (item[1], item[0]), reverse=True)
        if ranked:
            out[query] = ranked[:k]
    return out


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("k", [1, 3, 100])
def test_top_k_ids_rank_as_trec_eval(seed: int, k: int) -> None:
    run = random_run(seed)
    want = {q: tuple(doc for doc, _ in ranked) for q, ranked in expected(run, k).items()}
    assert top_k_ids(run, k) == want


@pytest.mark.parametrize("seed", range(40))
def test_top_k_run_keeps_the_asked_queries_ranked_and_cut(seed: int) -> None:
    run = random_run(seed)
    asked = ["q1", "q3", "q5", "missing"]
    cut = top_k_run(run, asked, 2)
    assert cut.query_ids.tolist() == sorted(asked)
    want = {q: ranked for q, ranked in expected(run, 2).items() if q in asked}
    got = {
        q: sorted(r.items(), key=lambda i: (i[1], i[0]), reverse=True)
        for q, r in cut.to_dict().items()
    }
    assert {q: r for q, r in got.items() if r} == want
    # Rows come out grouped by query and ranked: the order the hits are read in.
    hits = RankedHits(cut)
    assert {q: [(h.doc_id, h.score) for h in hits[q]] for q in asked if hits[q]} == want
    assert hits["missing"] == ()


@pytest.mark.parametrize("seed", range(40))
def test_a_top_k_run_says_it_is_ranked_and_is(seed: int) -> None:
    """The cut is trusted as ranked (not ranked again): the ranking must find nothing to move,
    and the metrics of the cut are those of the same rows not said to be ranked."""
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.metrics.ranking import ranking_order
    from retrieval_gate.readers import qrels_from_dict

    run = random_run(seed)
    assert not run.ranked
    cut = top_k_run(run, [*run.query_ids.tolist(), "missing"], 5)
    assert cut.ranked
    assert ranking_order(cut.query, cut.score, cut.doc_bytes.fixed) == (None, None)
    assert bool(np.all(cut.query[1:] >= cut.query[:-1]))
    plain = Run(cut.query_ids, cut.query, cut.doc_bytes, cut.score)
    rng = random.Random(seed)
    judged = {
        q: {d: float(rng.randint(0, 3)) for d in ["a", "b", "ab", "d10", "é", "zz"]}
        for q in [*run.query_ids.tolist(), "missing"][::2]
    }
    qrels = qrels_from_dict(judged)
    metrics = ["ndcg@3", "ap@5", "rr@5", "recall@2"]
    trusted, checked = evaluate(cut, qrels, metrics), evaluate(plain, qrels, metrics)
    assert trusted.query_ids == checked.query_ids
    assert trusted.missing_queries == checked.missing_queries
    for name, values in checked.values.items():
        assert trusted.values[name].tolist() == values.tolist(), name


def test_ranked_hits_map_every_query_of_the_run() -> None:
    run = Run.from_rows(["q2", "q1", "q2"], ["a", "b", "c"], [1.0, 5.0, 1.0], empty_queries=["q0"])
    hits = RankedHits(run)
    assert list(hits) == ["q0", "q1", "q2"]
    assert hits["q2"] == (Hit("c", 1.0), Hit("a", 1.0))
    assert hits["q0"] == ()
    with pytest.raises(KeyError):
        hits["q9"]


def test_ranked_hits_keep_every_byte_of_ids_held_as_bytes() -> None:
    import numpy as np

    from retrieval_gate.core.ids import ByteIds, object_array

    # NULs at the ends, which numpy's fixed-width bytes drop
    docs = ByteIds.from_strings(["a\x00", "b\x00\x00", "\x00c"])
    run = Run(object_array(["q"]), np.zeros(3, dtype=np.int64), docs, np.asarray([3.0, 2.0, 1.0]))
    assert [hit.doc_id for hit in RankedHits(run)["q"]] == ["a\x00", "b\x00\x00", "\x00c"]


def test_an_empty_run_has_no_top_k() -> None:
    run = Run.from_rows([], [], [], empty_queries=["q1"])
    assert top_k_ids(run, 10) == {}
    assert len(top_k_run(run, ["q1"], 10)) == 0


def test_stored_lists_become_a_run_ranked_as_listed() -> None:
    top_k = {"q2": ("b", "a", "c"), "q1": ("z",), "q9": ()}
    run = listed_run(top_k, ["q1", "q2", "q3"])
    assert run.query_ids.tolist() == ["q1", "q2", "q3"]
    assert run.query.tolist() == [0, 1, 1, 1]
    assert run.docs.tolist() == ["z", "b", "a", "c"]
    assert run.score.tolist() == [-1.0, -1.0, -2.0, -3.0]
    # The run ranks them back as listed: the lists survive the metrics' ranking.
    assert top_k_ids(run, 10) == {"q1": ("z",), "q2": ("b", "a", "c")}


@pytest.mark.parametrize("seed", range(5))
def test_a_listed_run_is_grouped_by_query_and_ranked_within_each(seed: int) -> None:

    rng = random.Random(seed)
    query_ids = sorted(f"q{i}" for i in range(rng.randint(1, 30)))
    top_k = {
        q: tuple(f"d{j}" for j in rng.sample(range(50), rng.randint(0, 8)))
        for q in rng.sample([*query_ids, "unlabelled"], len(query_ids) // 2 + 1)
    }
    run = listed_run(top_k, query_ids)
    query, rank = run.query.tolist(), (-run.score).tolist()
    rows = list(zip(query, rank, strict=True))
    assert rows == sorted(rows)
    for code, q in enumerate(query_ids):
        listed = [
            run.docs_at(np.asarray([i])).tolist()[0] for i, c in enumerate(query) if c == code
        ]
        assert listed == list(top_k.get(q, ()))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_listed_runs_in_blocks_are_the_listed_run_cut_by_query(seed: int, size: int) -> None:
    rng = random.Random(seed)
    query_ids = sorted(f"q{i:02d}" for i in range(rng.randint(0, 20)))
    top_k = TopKIds.of(
        {
            q: tuple(f"d{j}" for j in rng.sample(range(50), rng.randint(0, 6)))
            for q in rng.sample([*query_ids, "unlabelled"], len(query_ids) // 2 + 1)
        }
    )
    whole = listed_run(top_k, query_ids)
    blocks = list(listed_runs(top_k, query_ids, size))
    assert len(blocks) == max(1, -(-len(query_ids) // size))
    assert [q for b in blocks for q in b.query_ids.tolist()] == query_ids
    offsets = np.cumsum([0] + [len(b.query_ids) for b in blocks[:-1]])
    assert np.concatenate([b.query + o for b, o in zip(blocks, offsets, strict=True)]).tolist() == (
        whole.query.tolist()
    )
    assert [d for b in blocks for d in b.docs.tolist()] == whole.docs.tolist()
    assert np.concatenate([b.score for b in blocks]).tolist() == whole.score.tolist()
