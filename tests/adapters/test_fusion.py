"""The fusion retriever: RRF and weighted fusion by hand and against ranx's numbers, its
config, its inputs through the runner, and hostile ids."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from retrieval_gate.adapters import build_retriever
from retrieval_gate.adapters.fusion import FusionConfig, FusionRetriever, fuse
from retrieval_gate.adapters.interface import fingerprint
from retrieval_gate.core.model import Document, Hit, Query
from retrieval_gate.errors import GateError, RetrieverError
from retrieval_gate.execution.runner import RunSettings, run_queries
from tests.helpers.builders import write
from tests.helpers.cli import run_cli

QUERY = Query("q1", "reset my password", {})
CORPUS = {
    "d1": Document("d1", "Reset your password", "Open settings and choose reset password."),
    "d2": Document("d2", "Invoices", "Send an invoice to a client."),
    "d3": Document("d3", "Password rules", "A password has twelve characters."),
}
HOSTILE = ["::error::pwned", "\n::warning::x", "\x1b[31mred", "a\x00b", "<b>x</b>", "x" * 5000]

MODULE = """\
SEEN = []


def dense(query, k):
    SEEN.append(k)
    return [("d3", 0.9), ("d2", 0.5), ("d1", 0.1)][:k]


def ids_only(query, k):
    return ["d2", "d1"]


def broken(query, k):
    raise ValueError("the index is gone")


class Closing:
    closed = []

    def search(self, query, k):
        return ["d1"]

    def close(self):
        Closing.closed.append(True)
"""


def ranked(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(doc, score) for doc, score in pairs]


def scores(hits: list[Hit]) -> dict[str, float | None]:
    return {hit.doc_id: hit.score for hit in hits}


def test_rrf_matches_a_hand_computation() -> None:
    fused = fuse({"a": ranked(("x", 9), ("y", 8)), "b": ranked(("y", 1), ("z", 0))}, {}, 10)
    # y: 1/(60+2) + 1/(60+1); x: 1/61; z: 1/62.
    assert [hit.doc_id for hit in fused] == ["y", "x", "z"]
    assert scores(fused) == {"y": 1 / 62 + 1 / 61, "x": 1 / 61, "z": 1 / 62}


# ranx's tests/unit/ranx/fusion/rrf_test.py and wsum_test.py: three runs of two queries,
# each run a {doc: score} map that ranx ranks by score, descending.
RANX_RUNS = [
    {"q1": {"d1": 1, "d2": 2, "d3": 3}, "q2": {"d1": 1, "d2": 2}},
    {"q1": {"d1": 3, "d2": 2}, "q2": {"d1": 1, "d3": 3}},
    {"q1": {"d3": 1}, "q2": {"d2": 2, "d3": 3}},
]


def ranx_lists(query: str) -> dict[str, list[Hit]]:
    return {
        f"run_{i}": sorted(
            (Hit(doc, float(score)) for doc, score in run[query].items()),
            key=lambda hit: -(hit.score or 0),
        )
        for i, run in enumerate(RANX_RUNS, 1)
    }


def test_rrf_gives_ranx_numbers() -> None:
    q1, q2 = (scores(fuse(ranx_lists(q), {}, 10)) for q in ("q1", "q2"))
    assert q1 == {
        "d1": (1 / (60 + 3)) + (1 / (60 + 1)),
        "d2": (1 / (60 + 2)) + (1 / (60 + 2)),
        "d3": (1 / (60 + 1)) + (1 / (60 + 1)),
    }
    assert q2 == {
        "d1": (1 / (60 + 2)) + (1 / (60 + 2)),
        "d2": (1 / (60 + 1)) + (1 / (60 + 2)),
        "d3": (1 / (60 + 1)) + (1 / (60 + 1)),
    }


def test_weighted_without_normalisation_gives_ranx_wsum_numbers() -> None:
    weights = {"run_1": 0.3, "run_2": 0.2, "run_3": 0.5}
    q1 = scores(fuse(ranx_lists("q1"), weights, 10, method="weighted", normalize="none"))
    q2 = scores(fuse(ranx_lists("q2"), weights, 10, method="weighted", normalize="none"))
    # A document missing from a run adds nothing from it.
    assert q1 == pytest.approx(
        {"d1": 0.3 * 1 + 0.2 * 3, "d2": 0.3 * 2 + 0.2 * 2, "d3": 0.3 * 3 + 0.5 * 1}
    )
    assert q2 == pytest.approx(
        {"d1": 0.3 * 1 + 0.2 * 1, "d2": 0.3 * 2 + 0.5 * 2, "d3": 0.2 * 3 + 0.5 * 3}
    )


def test_minmax_scales_each_input_to_zero_one_per_query() -> None:
    lists = {"a": ranked(("x", 10), ("y", 5), ("z", 0)), "b": ranked(("z", 7), ("y", 3))}
    fused = fuse(lists, {"a": 1.0, "b": 2.0}, 10, method="weighted", normalize="minmax")
    # a: x 1, y 0.5, z 0; b: z 1, y 0. So z 2, x 1, y 0.5.
    assert [(hit.doc_id, hit.score) for hit in fused] == [("z", 2.0), ("x", 1.0), ("y", 0.5)]


def test_zscore_centres_and_scales_each_input() -> None:
    lists = {"a": ranked(("x", 3), ("y", 2), ("z", 1)), "b": ranked(("y", 4), ("x", 0))}
    fused = scores(fuse(lists, {}, 10, method="weighted", normalize="zscore"))
    spread = math.sqrt(2 / 3)  # the population standard deviation of 3, 2, 1
    assert fused == pytest.approx({"x": 1 / spread - 1, "y": 0 + 1, "z": -1 / spread})


def test_equal_scores_normalise_to_one_or_zero() -> None:
    flat = {"a": ranked(("x", 4), ("y", 4))}
    assert scores(fuse(flat, {}, 10, method="weighted", normalize="minmax")) == {"x": 1, "y": 1}
    assert scores(fuse(flat, {}, 10, method="weighted", normalize="zscore")) == {"x": 0, "y": 0}


def test_scores_near_the_float_limit_normalise_without_overflow() -> None:
    lists = {"a": ranked(("x", 1.7e308), ("y", -1.7e308), ("z", 0.0))}
    for normalize in ("minmax", "zscore"):
        fused = fuse(lists, {}, 10, method="weighted", normalize=normalize)  # type: ignore[arg-type]
        assert all(math.isfinite(hit.score or 0) for hit in fused)
        assert [hit.doc_id for hit in fused] == ["x", "z", "y"]
    with pytest.raises(RetrieverError, match="overflows a float; scale the inputs"):
        fuse({"a": lists["a"], "b": lists["a"]}, {}, 10, method="weighted", normalize="none")


def test_ties_break_by_doc_id_descending_whatever_the_input_order() -> None:
    one, two = ranked(("b", 2), ("a", 1)), ranked(("a", 2), ("b", 1))
    forward = fuse({"one": one, "two": two}, {}, 10)
    backward = fuse({"two": two, "one": one}, {}, 10)
    assert forward == backward
    assert [hit.doc_id for hit in forward] == ["b", "a"]  # trec_eval's order of ties
    assert forward[0].score == forward[1].score  # 1/61 + 1/62 either way round


def test_a_document_listed_twice_counts_at_its_first_place_and_k_cuts() -> None:
    fused = fuse({"a": ranked(("x", 3), ("y", 2), ("x", 1))}, {}, 1)
    assert fused == [Hit("x", 1 / 61)]
    assert fuse({"a": ranked(("x", 3))}, {}, 0) == []


def test_weighted_fusion_needs_scores() -> None:
    with pytest.raises(RetrieverError, match=r"retrievers\.a returned doc 'x' without a score"):
        fuse({"a": [Hit("x")]}, {}, 10, method="weighted")
    assert fuse({"a": [Hit("x")]}, {}, 10) == [Hit("x", 1 / 61)]  # rrf reads ranks only


def test_a_weight_of_zero_keeps_the_documents_but_adds_nothing() -> None:
    fused = fuse({"a": ranked(("x", 1)), "b": ranked(("y", 1))}, {"b": 0.0}, 10)
    assert [(hit.doc_id, hit.score) for hit in fused] == [("x", 1 / 61), ("y", 0.0)]


def test_hostile_ids_pass_through_unchanged_and_in_a_fixed_order() -> None:
    forward = fuse({"a": [Hit(doc) for doc in HOSTILE]}, {}, 100)
    assert sorted(hit.doc_id for hit in forward) == sorted(HOSTILE)
    tied = fuse({"a": [Hit(HOSTILE[0])], "b": [Hit(HOSTILE[1])]}, {}, 10)
    assert [hit.doc_id for hit in tied] == sorted(HOSTILE[:2], reverse=True)
    with pytest.raises(RetrieverError) as caught:
        fuse({"a": [Hit("\n::error::pwned\x1b[31m")]}, {}, 10, method="weighted")
    message = str(caught.value)
    assert "\n" not in message
    assert "\x1b" not in message


def config(**fields: Any) -> FusionConfig:
    blocks = {"lexical": {"type": "bm25"}, "dense": {"type": "python", "target": "fused:dense"}}
    return FusionConfig.model_validate({"retrievers": blocks, **fields})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"retrievers": {"only": {"type": "bm25"}}}, "at least 2 items"),
        ({"retrievers": {"::error::x": {"type": "bm25"}, "b": {"type": "bm25"}}}, "input name"),
        ({"retrievers": {"a" * 65: {"type": "bm25"}, "b": {"type": "bm25"}}}, "input name"),
        ({"weights": {"lexical": -1}}, "a weight is a finite number >= 0"),
        ({"weights": {"lexical": True}}, "a weight is a finite number >= 0"),
        ({"weights": {"lexical": "inf"}}, "a weight is a finite number >= 0"),
        ({"weights": {"vector": 1}}, "weights names 'vector', which is not an input"),
        ({"weights": {"lexical": 0, "dense": 0}}, "every weight is 0"),
        ({"method": "combmnz"}, "'rrf' or 'weighted'"),
        ({"normalize": "max"}, "'minmax', 'zscore' or 'none'"),
        ({"depth": 0}, "greater than or equal to 1"),
        ({"depth": 1001}, "less than or equal to 1000"),
        ({"k_rrf": -1}, "greater than or equal to 0"),
        ({"k_rrf": True}, "bool"),
    ],
)
def test_a_config_that_cannot_work_is_refused(fields: dict[str, Any], message: str) -> None:
    base = {"retrievers": {"lexical": {"type": "bm25"}, "dense": {"type": "bm25"}}}
    with pytest.raises(ValidationError, match=message):
        FusionConfig.model_validate({**base, **fields})


def test_inputs_are_plain_retriever_blocks_not_stages_or_fusion() -> None:
    nested = {"type": "fusion", "retrievers": {"a": {"type": "bm25"}, "b": {"type": "bm25"}}}
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        FusionConfig.model_validate({"retrievers": {"inner": nested, "b": {"type": "bm25"}}})


@pytest.fixture
def module(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "fused.py").write_text(MODULE, encoding="utf-8")
    path = list(sys.path)
    yield tmp_path
    sys.path[:] = path
    sys.modules.pop("fused", None)


def built(folder: Path, **fields: Any) -> Any:
    return build_retriever(config(**fields), base_dir=folder, corpus=CORPUS)  # type: ignore[arg-type]


def test_the_retriever_asks_each_input_for_depth_and_fuses_its_top_k(module: Path) -> None:
    retriever = built(module, depth=2)
    assert isinstance(retriever, FusionRetriever)
    hits = retriever.search(QUERY, 10)
    assert sys.modules["fused"].SEEN == [2]
    # bm25 ranks d1 then d3 (the only documents with "password"); dense gives d3, d2.
    assert [hit.doc_id for hit in hits] == ["d3", "d1", "d2"]
    assert hits[0].score == 1 / 62 + 1 / 61
    assert [hit.doc_id for hit in built(module, k=1).search(QUERY, 10)] == ["d3"]
    assert len(built(module).search(QUERY, 2)) == 2  # the gate's k caps the fusion's k


def test_a_batching_input_is_asked_in_its_batches(module: Path) -> None:
    blocks = {"lexical": {"type": "bm25", "batch_size": 2}, "also": {"type": "bm25"}}
    retriever = build_retriever(
        FusionConfig.model_validate({"retrievers": blocks, "batch_size": 3}),
        base_dir=module,
        corpus=CORPUS,
    )
    queries = [Query(f"q{i}", text, {}) for i, text in enumerate(["password", "invoice", "x"])]
    assert retriever.batch_size() == 3
    batched = retriever.search_batch(queries, 10)
    assert batched == [retriever.search(query, 10) for query in queries]
    assert [hit.doc_id for hit in batched[1]] == ["d2"]
    assert batched[2] == []


def test_the_description_names_every_input_and_what_fuses_them(module: Path) -> None:
    description = built(module).describe()
    assert description["retrievers"]["dense"]["target"] == "fused:dense"
    assert description["retrievers"]["lexical"]["type"] == "bm25"
    assert description["weights"] == {"lexical": 1.0, "dense": 1.0}
    assert (description["method"], description["k_rrf"], description["depth"]) == ("rrf", 60, 100)
    weighted = built(module, method="weighted", weights={"dense": 2}).describe()
    assert weighted["normalize"] == "minmax"
    assert "k_rrf" not in weighted
    assert fingerprint(weighted) != fingerprint(description)
    assert not getattr(built(module), "cacheable", False)


def test_a_failing_input_fails_the_whole_query_naming_the_input(module: Path) -> None:
    blocks = {"lexical": {"type": "bm25"}, "dense": {"type": "python", "target": "fused:broken"}}
    retriever = build_retriever(
        FusionConfig.model_validate({"retrievers": blocks}), base_dir=module, corpus=CORPUS
    )
    result = run_queries(retriever, [QUERY], 10, RunSettings(retries=0, error_budget=1.0))
    assert "q1" not in result.hits
    (failure,) = result.failures
    assert failure.error.startswith("retriever.retrievers.dense: ")
    assert "the index is gone" in failure.error


def test_weighted_fusion_of_an_input_without_scores_fails_the_query(module: Path) -> None:
    blocks = {"lexical": {"type": "bm25"}, "ids": {"type": "python", "target": "fused:ids_only"}}
    retriever = build_retriever(
        FusionConfig.model_validate({"retrievers": blocks, "method": "weighted"}),
        base_dir=module,
        corpus=CORPUS,
    )
    with pytest.raises(RetrieverError, match=r"retrievers\.ids returned doc 'd2' without a score"):
        retriever.search(QUERY, 10)


def test_inputs_are_closed_with_it_and_when_a_later_input_cannot_be_built(module: Path) -> None:
    closing = {"type": "python", "target": "fused:Closing"}
    retriever = build_retriever(
        FusionConfig.model_validate({"retrievers": {"a": closing, "b": {"type": "bm25"}}}),
        base_dir=module,
        corpus=CORPUS,
    )
    retriever.close()
    assert sys.modules["fused"].Closing.closed == [True]
    with pytest.raises(GateError, match=r"dataset\.corpus"):
        build_retriever(
            FusionConfig.model_validate({"retrievers": {"a": closing, "b": {"type": "bm25"}}}),
            base_dir=module,
            corpus={},
        )
    assert sys.modules["fused"].Closing.closed == [True, True]


def test_a_fusion_config_file_runs_and_a_bad_one_exits_2(tmp_path: Path) -> None:
    lines = [json.dumps({"_id": i, "title": d.title, "text": d.text}) for i, d in CORPUS.items()]
    folder = write(tmp_path, "corpus.jsonl", "\n".join(lines) + "\n").parent
    write(folder, "queries.jsonl", '{"_id": "q1", "text": "reset password"}\n')
    write(folder, "qrels.txt", "q1 0 d1 1\n")
    body = (
        "version: 1\nname: f\ndataset: {queries: queries.jsonl, qrels: qrels.txt, "
        "corpus: corpus.jsonl}\nretriever:\n  type: fusion\n  retrievers:\n"
        "    all: {type: bm25}\n    titles: {type: bm25, fields: [title]}\n"
        "k: 10\nmetrics: {ndcg@10: {}}\n"
    )
    good = write(folder, "fusion.yaml", body)
    code, out, err = run_cli("run", "-c", good)
    assert code == 0, err
    assert re.search(r"ndcg@10 +1.0000", out)
    bad = write(folder, "bad.yaml", body.replace("titles:", "'::error::x':"))
    code, out, err = run_cli("run", "-c", bad)
    assert code == 2
    assert "retriever.fusion.retrievers" in err
    assert "input name" in err
    assert "\n::error::" not in err
