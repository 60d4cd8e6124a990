"""configs/noisy_bm25.py (the nondeterministic example retriever), configs/example-noisy.yaml
and benchmarks/tools/synthetic_set.py."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from retrieval_gate.adapters import BM25Config, Query
from retrieval_gate.adapters.bm25 import BM25Retriever
from retrieval_gate.datasets.files import read_corpus
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS, REPO

CORPUS = CONFIGS / "example" / "corpus.jsonl"
QUERIES = [
    "refund",
    "cancel subscription",
    "can I get my money back after cancelling an annual plan",
    "reset password",
    "export timesheets to csv",
    "invite a teammate to my workspace",
    "single sign-on",
    "invoice",
    "change the currency of an invoice",
    "two-factor authentication",
    "delete my account",
    "zeppelin",
]


def load_module(path: Path, name: str) -> ModuleType:
    """The module at `path`, imported from its file under `name` (not put in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def noisy() -> ModuleType:
    return load_module(CONFIGS / "noisy_bm25.py", "noisy_bm25_under_test")


@pytest.fixture(scope="module")
def synthetic() -> ModuleType:
    return load_module(
        REPO / "benchmarks" / "tools" / "synthetic_set.py", "synthetic_set_under_test"
    )


@pytest.fixture(scope="module")
def index(noisy: ModuleType) -> Any:
    """One BM25 index of the example corpus, shared by every run in these tests."""
    return noisy.BM25Index.from_jsonl(CORPUS)


def run_all(retriever: Any, k: int = 10) -> list[list[tuple[str, float]]]:
    return [retriever.search(query, k) for query in QUERIES]


def test_hits_are_doc_ids_and_float_scores_best_first(noisy: ModuleType, index: Any) -> None:
    hits = noisy.NoisyBM25(seed=7, index=index).search("reset password", 10)
    assert len(hits) == 10
    assert all(isinstance(doc, str) and type(score) is float for doc, score in hits)
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert len({doc for doc, _ in hits}) == 10
    assert noisy.NoisyBM25(seed=7, index=index).search("zeppelin", 10) == []
    assert noisy.NoisyBM25(seed=7, index=index).search("reset password", 0) == []


def test_the_same_seed_gives_identical_results(noisy: ModuleType, index: Any) -> None:
    first = noisy.NoisyBM25(seed=123, index=index)
    second = noisy.NoisyBM25(seed=123, index=index)
    assert first.seed == second.seed == 123
    assert first.lost == second.lost
    assert run_all(first) == run_all(second)


def test_the_default_corpus_is_the_example_beside_the_module(noisy: ModuleType) -> None:
    built = noisy.NoisyBM25(seed=5)  # corpus="example/corpus.jsonl", relative to configs/
    shared = noisy.NoisyBM25(seed=5, index=noisy.BM25Index.from_jsonl(CORPUS))
    assert run_all(built) == run_all(shared)


def test_different_seeds_differ_on_some_queries(noisy: ModuleType, index: Any) -> None:
    runs = [run_all(noisy.NoisyBM25(seed=seed, index=index)) for seed in range(5)]
    for a in range(len(runs)):
        for b in range(a + 1, len(runs)):
            differing = [i for i in range(len(QUERIES)) if runs[a][i] != runs[b][i]]
            assert differing, f"seeds {a} and {b} gave identical results"
            assert runs[a][-1] == runs[b][-1] == []  # "zeppelin" matches nothing


def test_without_a_seed_every_instance_is_a_new_run(
    noisy: ModuleType, index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOISY_BM25_SEED", raising=False)
    seeds = {noisy.NoisyBM25(index=index).seed for _ in range(5)}
    assert len(seeds) == 5
    assert all(isinstance(seed, int) and seed >= 0 for seed in seeds)


def test_the_environment_variable_sets_the_seed(
    noisy: ModuleType, index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOISY_BM25_SEED", "42")
    from_environment = noisy.NoisyBM25(index=index)
    assert from_environment.seed == 42
    assert run_all(from_environment) == run_all(noisy.NoisyBM25(seed=42, index=index))
    assert noisy.NoisyBM25(seed=3, index=index).seed == 3  # the argument wins
    monkeypatch.setenv("NOISY_BM25_SEED", "not a number")
    with pytest.raises(ValueError, match="NOISY_BM25_SEED"):
        noisy.NoisyBM25(index=index)


def test_without_noise_it_is_the_builtin_bm25_up_to_the_order_of_exact_ties(
    noisy: ModuleType, index: Any
) -> None:
    bm25 = BM25Retriever(BM25Config(), corpus=read_corpus(CORPUS))
    ties_seen = 0
    for seed in range(3):
        quiet = noisy.NoisyBM25(seed=seed, jitter=0, lost=0, index=index)
        assert quiet.lost == frozenset()
        for k in (1, 5, 10, 30):
            for text in QUERIES:
                expected = [(hit.doc_id, hit.score) for hit in bm25.search(Query("q", text), k)]
                got = quiet.search(text, k)
                assert [score for _, score in got] == [score for _, score in expected]
                # Docs scored above the last score are the same docs; the last score's ties
                # may be any of the equally scored docs (the cut falls inside a tie).
                if got:
                    cut = got[-1][1]
                    assert {d for d, s in got if s > cut} == {d for d, s in expected if s > cut}
                    assert {d for d, s in got if s == cut} <= {
                        hit.doc_id
                        for hit in bm25.search(Query("q", text), 1000)
                        if hit.score == cut
                    }
                ties_seen += len(got) - len({score for _, score in got})
    assert ties_seen > 0  # the example corpus has tied scores, so the ties were exercised


def test_ties_are_broken_at_random_per_run(noisy: ModuleType, index: Any) -> None:
    """The query `invoice` matches docs with exactly equal BM25 scores; different seeds order
    them differently, one seed always the same way."""
    text = "invoice"
    scores = [score for _, score in index.candidates(text, 100)]
    tied = [score for score, count in Counter(scores).items() if count > 1]
    assert tied, "expected exact ties for 'invoice' in the example corpus"
    runs = [noisy.NoisyBM25(seed=seed, jitter=0, lost=0, index=index) for seed in range(20)]
    orders = {tuple(doc for doc, _ in run.search(text, 100)) for run in runs}
    assert len(orders) > 1
    again = noisy.NoisyBM25(seed=0, jitter=0, lost=0, index=index)
    assert again.search(text, 100) == again.search(text, 100)


def test_lost_docs_never_come_back_and_are_the_same_for_every_query(
    noisy: ModuleType, index: Any
) -> None:
    run = noisy.NoisyBM25(seed=11, lost=0.2, index=index)
    assert len(run.lost) == round(0.2 * len(index.ids))
    assert run.lost <= set(index.ids)
    seen: set[str] = set()
    for text in QUERIES:
        hits = run.search(text, 50)
        seen |= {doc for doc, _ in hits}
        # Lost docs are skipped, not left as holes: k hits while enough docs match.
        visible = [doc for doc, _ in index.candidates(text, 1000) if doc not in run.lost]
        assert len(hits) == min(50, len(visible))
    assert seen
    assert not seen & run.lost
    # Among the docs the query matches, the run misses exactly its lost ones, whatever the
    # query: the lost set is drawn once per run.
    for text in QUERIES:
        matched = {doc for doc, _ in index.candidates(text, 1000)}
        returned = {doc for doc, _ in run.search(text, 1000)}
        assert returned == matched - run.lost
    assert noisy.NoisyBM25(seed=11, lost=0.2, index=index).lost == run.lost
    assert noisy.NoisyBM25(seed=12, lost=0.2, index=index).lost != run.lost


def test_results_do_not_depend_on_call_order_or_batching(noisy: ModuleType, index: Any) -> None:
    run = noisy.NoisyBM25(seed=99, index=index)
    forward = {text: run.search(text, 10) for text in QUERIES}
    backward = {text: run.search(text, 10) for text in reversed(QUERIES)}
    assert forward == backward
    assert run.search_batch(QUERIES, 10) == [forward[text] for text in QUERIES]
    assert run.search_batch(list(reversed(QUERIES)), 10) == [
        forward[text] for text in reversed(QUERIES)
    ]
    assert run.search_batch([QUERIES[2], QUERIES[2]], 10) == [forward[QUERIES[2]]] * 2
    fresh = noisy.NoisyBM25(seed=99, index=index)
    assert [fresh.search(text, 10) for text in reversed(QUERIES)] == [
        forward[text] for text in reversed(QUERIES)
    ]


def test_bad_knobs_are_rejected(noisy: ModuleType, index: Any) -> None:
    for knobs in ({"jitter": -0.1}, {"lost": 1.5}, {"candidates": 0}, {"seed": -1}):
        with pytest.raises(ValueError):  # noqa: PT011
            noisy.NoisyBM25(index=index, **knobs)


def test_the_example_noisy_config_runs_through_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the config's folder is put on it
    monkeypatch.delitem(sys.modules, "noisy_bm25", raising=False)
    config = str(CONFIGS / "example-noisy.yaml")
    code, out, err = run_cli("run", "-c", config, "--no-cache", "--quiet")
    assert code == 0, err
    rows = dict(line.split() for line in out.splitlines()[1:5])
    assert set(rows) == {"ndcg@10", "recall@10", "rr@10", "ap@10"}
    assert 0.5 < float(rows["ndcg@10"]) < 1
    assert "131 labelled queries" in out
    sys.modules.pop("noisy_bm25", None)


def test_the_synthetic_set_is_deterministic(synthetic: ModuleType, tmp_path: Path) -> None:
    first = synthetic.write_synthetic_set(tmp_path / "a", seed=3)
    second = synthetic.write_synthetic_set(tmp_path / "b", seed=3)
    other = synthetic.write_synthetic_set(tmp_path / "c", seed=4)
    assert first == tmp_path / "a"
    names = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert (first / "queries.jsonl").read_bytes() != (other / "queries.jsonl").read_bytes()


def test_the_synthetic_set_loads_with_distinct_queries_each_with_a_target(
    synthetic: ModuleType, tmp_path: Path
) -> None:
    from retrieval_gate.config.schema import DatasetConfig
    from retrieval_gate.datasets import load

    folder = synthetic.write_synthetic_set(tmp_path / "set")
    lines = (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    dataset = load(DatasetConfig(path=str(folder)), tmp_path)
    assert not dataset.warnings
    assert len(dataset.queries) == 500
    assert len({query.text for query in dataset.queries}) == 500
    assert dataset.corpus is not None
    assert len(dataset.corpus) == 5000
    assert {query.metadata["intent"] for query in dataset.queries} <= set(synthetic.INTENTS)
    assert len({query.metadata["segment"] for query in dataset.queries}) == 3
    rows = [line.split("\t") for line in lines[1:]]
    grades: dict[str, list[int]] = {}
    for query, _, grade in rows:
        grades.setdefault(query, []).append(int(grade))
    assert set(grades) == {query.id for query in dataset.queries}
    assert all(found.count(3) == 1 for found in grades.values())
    assert all(2 <= len(found) <= 5 for found in grades.values())
    assert all(set(found) <= {1, 2, 3} for found in grades.values())


def test_a_lost_range_draws_each_run_s_share_from_its_seed(noisy: ModuleType, index: Any) -> None:
    runs = [noisy.NoisyBM25(seed=seed, lost=[0.0, 0.3], index=index) for seed in range(12)]
    shares = [run.lost_share for run in runs]
    assert all(0.0 <= share <= 0.3 for share in shares)
    assert len(set(shares)) == len(shares)  # a share per run
    for run in runs:
        assert len(run.lost) == round(run.lost_share * len(index.ids))
    again = noisy.NoisyBM25(seed=3, lost=[0.0, 0.3], index=index)
    assert again.lost == runs[3].lost
    fixed = noisy.NoisyBM25(seed=3, lost=0.1, index=index)
    assert fixed.lost_share == 0.1
    with pytest.raises(ValueError, match="pair"):
        noisy.NoisyBM25(seed=3, lost=[0.3, 0.1], index=index)
