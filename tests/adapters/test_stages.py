"""First-stage candidates from python, http and the stages kind, through the runner and cache."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.adapters import build_retriever
from retrieval_gate.adapters.http import HttpConfig, HttpRetriever
from retrieval_gate.adapters.python import PythonConfig, PythonRetriever
from retrieval_gate.adapters.stages import StagesConfig
from retrieval_gate.core.model import MAX_CANDIDATES, Document, Hit, Query, StagedHits
from retrieval_gate.errors import GateError, RetrieverError
from retrieval_gate.execution.cache import ResultCache
from retrieval_gate.execution.runner import RunSettings, run_queries
from tests.helpers.local_server import serving

QUERY = Query("q1", "reset my password", {"n": "1"})
CORPUS = {f"d{i}": Document(f"d{i}", f"title {i}", f"text {i}") for i in range(1, 6)}

MODULE = """\
def two_lists(query, k):
    return {"hits": ["d2", "d1"], "candidates": [("d1", 2.0), ("d2", 1.0), ("d3", 0.5)]}


def not_a_list(query, k):
    return {"hits": ["d1"], "candidates": 5}


def huge(query, k):
    return {"hits": ["c0"], "candidates": [f"c{i}" for i in range(100_000)]}


def first(query, k):
    return [(f"d{i}", 10.0 - i) for i in range(1, 6)][:k]


SEEN = []


def reverse(query, candidates, k, *, keep=None):
    SEEN.append((query, candidates, k))
    return [c["id"] for c in reversed(candidates)][: keep or k]


def stray(query, candidates, k):
    return ["d1", "elsewhere"]


def hostile(query, candidates, k):
    return ["\\n::error::pwned\\x1b[31m"]
"""


@pytest.fixture
def module(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "staged_module.py").write_text(MODULE, encoding="utf-8")
    path = list(sys.path)
    yield tmp_path
    sys.path[:] = path
    sys.modules.pop("staged_module", None)


def python(folder: Path, name: str) -> PythonRetriever:
    return PythonRetriever(PythonConfig(target=f"staged_module:{name}"), base_dir=folder)


def test_a_python_target_returns_hits_and_candidates(module: Path) -> None:
    hits = python(module, "two_lists").search(QUERY, 1)
    assert isinstance(hits, StagedHits)
    assert list(hits) == [Hit("d2")]
    assert hits.candidates == (Hit("d1", 2.0), Hit("d2", 1.0), Hit("d3", 0.5))


def test_candidates_that_are_not_a_list_are_named(module: Path) -> None:
    with pytest.raises(RetrieverError, match=r"\(its 'candidates'\) returned a int 5"):
        python(module, "not_a_list").search(QUERY, 10)


def test_a_huge_candidate_list_is_cut_in_the_adapter_runner_and_cache(
    module: Path, tmp_path: Path
) -> None:
    retriever = python(module, "huge")
    hits = retriever.search(QUERY, 10)
    assert len(hits.candidates) == MAX_CANDIDATES  # type: ignore[attr-defined]
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        result = run_queries(retriever, [QUERY], 10, RunSettings(), cache=cache)
        assert len(result.candidates["q1"]) == MAX_CANDIDATES
        again = run_queries(retriever, [QUERY], 10, RunSettings(), cache=cache)
    assert again.cached == 1
    assert again.candidates == result.candidates
    assert again.hits == result.hits


def test_the_cache_keeps_single_stage_answers_as_they_were(tmp_path: Path) -> None:
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        cache.put("fp", "text", 10, [Hit("a", 1.0)])
        cache.put("fp", "staged", 10, StagedHits([Hit("a", 1.0)], [Hit("b", None, "t")]))
        plain, staged = cache.get("fp", "text", 10), cache.get("fp", "staged", 10)
    assert type(plain) is list
    assert plain == [Hit("a", 1.0)]
    assert isinstance(staged, StagedHits)
    assert staged.candidates == (Hit("b", None, "t"),)


def stages(folder: Path, rerank: Mapping[str, Any], **extra: Any) -> Any:
    config = StagesConfig.model_validate(
        {
            "candidates": {"type": "python", "target": "staged_module:first"},
            "rerank": rerank,
            **extra,
        }
    )
    return build_retriever(config, base_dir=folder, corpus=CORPUS)  # type: ignore[arg-type]


def test_the_stages_retriever_reranks_the_candidates_it_asked_for(module: Path) -> None:
    retriever = stages(
        module, {"target": "staged_module:reverse", "kwargs": {"keep": 2}}, candidates_k=4
    )
    hits = retriever.search(QUERY, 3)
    assert [hit.doc_id for hit in hits] == ["d4", "d3"]
    assert [hit.doc_id for hit in hits.candidates] == ["d1", "d2", "d3", "d4"]
    seen = sys.modules["staged_module"].SEEN
    assert seen[-1][0] == "reset my password"
    assert seen[-1][1][0] == {"id": "d1", "score": 9.0, "text": "title 1 text 1"}
    assert seen[-1][2] == 3
    description = retriever.describe()
    assert description["candidates"]["target"] == "staged_module:first"
    assert description["candidates_k"] == 4
    assert description["rerank"] == {
        "type": "python",
        "target": "staged_module:reverse",
        "kwargs": {"keep": 2},
    }


def test_a_reranker_returning_a_document_it_was_not_given_fails_the_query(
    module: Path,
) -> None:
    retriever = stages(module, {"target": "staged_module:stray"})
    with pytest.raises(RetrieverError, match="'elsewhere', which is not among the 5 candidates"):
        retriever.search(QUERY, 10)
    result = run_queries(retriever, [QUERY], 10, RunSettings(retries=0, error_budget=1.0))
    assert result.failures[0].attempts == 1  # not retried: the answer would not change


def test_a_hostile_stray_id_reaches_the_message_inert(module: Path) -> None:
    retriever = stages(module, {"target": "staged_module:hostile"})
    with pytest.raises(RetrieverError, match="not among the 5 candidates") as raised:
        retriever.search(QUERY, 10)
    message = str(raised.value)
    assert "\n" not in message
    assert "\x1b" not in message
    assert not any(line.startswith("::") for line in message.splitlines())


def answer(path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    request = json.loads(body or b"{}")
    if path == "/search":
        payload = {
            "hits": [{"id": "d2", "score": 2.0}, {"id": "d1", "score": 1.0}],
            "candidates": [{"id": f"d{i}", "score": 1.0 / i} for i in range(1, 2000)],
        }
    else:  # /rerank: the candidates it was sent, last first
        payload = {"hits": [c["id"] for c in reversed(request["candidates"])], "echo": request}
    return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


@pytest.fixture
def server() -> Iterator[str]:
    with serving(lambda method, path, headers, body: answer(path, body)) as url:
        yield url


def test_an_http_service_names_its_candidates_with_a_path(server: str) -> None:
    retriever = HttpRetriever(HttpConfig(url=f"{server}/search", candidates="candidates[*]"))
    hits = retriever.search(QUERY, 1)
    assert list(hits) == [Hit("d2", 2.0)]
    assert len(hits.candidates) == MAX_CANDIDATES  # type: ignore[attr-defined]
    assert retriever.describe()["candidates"] == "candidates[*]"
    plain = HttpRetriever(HttpConfig(url=f"{server}/search"))
    assert "candidates" not in plain.describe()  # single-stage fingerprints do not move
    assert not isinstance(plain.search(QUERY, 1), StagedHits)


def test_an_http_reranker_is_sent_the_candidates(module: Path, server: str) -> None:
    retriever = stages(
        module,
        {
            "type": "http",
            "url": f"{server}/rerank",
            "body": {"q": "{query}", "candidates": "{candidates}", "k": "{k}"},
        },
        candidates_k=3,
    )
    hits = retriever.search(QUERY, 2)
    assert [hit.doc_id for hit in hits] == ["d3", "d2"]
    assert [hit.doc_id for hit in hits.candidates] == ["d1", "d2", "d3"]


def test_http_candidates_and_rerank_blocks_that_cannot_work_fail_at_build(
    module: Path, server: str
) -> None:
    with pytest.raises(GateError, match="set batch_size 1"):
        HttpRetriever(HttpConfig(url=server, candidates="c", batch_size=4, body="{queries}"))
    with pytest.raises(GateError, match="must send the candidates"):
        stages(module, {"type": "http", "url": f"{server}/rerank"})
    sends = {"body": {"queries": "{queries}", "candidates": "{candidates}"}}
    for extra in ({"batch_size": 4}, {"candidates": "candidates[*]"}):
        with pytest.raises(GateError, match="drop its batch_size and candidates settings"):
            stages(module, {"type": "http", "url": f"{server}/rerank", **sends, **extra})


COMMAND = """\
import json, sys

for line in sys.stdin:
    ask = json.loads(line)
    answer = {"id": ask["id"], "results": ["d2"], "candidates": ["d1", "d2", "d3"]}
    if ask["text"] == "broken":
        answer["candidates"] = {"not": "a list"}
    print(json.dumps(answer), flush=True)
"""


def test_a_command_answers_with_candidates_beside_its_results(tmp_path: Path) -> None:
    from retrieval_gate.adapters.command import CommandConfig, CommandRetriever

    (tmp_path / "staged_command.py").write_text(COMMAND, encoding="utf-8")
    config = CommandConfig(argv=[sys.executable, "staged_command.py"])
    with CommandRetriever(config, base_dir=tmp_path) as retriever:
        hits = retriever.search(QUERY, 10)
        assert list(hits) == [Hit("d2")]
        assert [hit.doc_id for hit in hits.candidates] == ["d1", "d2", "d3"]  # type: ignore[attr-defined]
        with pytest.raises(RetrieverError, match=r"\(its candidates\) returned a dict"):
            retriever.search(Query("q2", "broken"), 10)
