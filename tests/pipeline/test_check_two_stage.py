"""Two-stage retrievers through the command line: first-stage checks and the stage that lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.report import annotations_of, read_result, summary_of
from tests.helpers.builders import copy_example, labelled_set
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

TWO_STAGE = Path(".retrieval-gate") / "example-two-stage" / "baseline.json"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example, its two-stage configs, reranker and committed baseline, copied."""
    target = copy_example(tmp_path_factory.mktemp("two-stage") / "configs")
    for name in (
        "example-two-stage",
        "example-two-stage-first-stage",
        "example-two-stage-reranker",
    ):
        shutil.copy(CONFIGS / f"{name}.yaml", target / f"{name}.yaml")
    shutil.copy(CONFIGS / "two_stage_rerank.py", target / "two_stage_rerank.py")
    (target / TWO_STAGE).parent.mkdir(parents=True)
    shutil.copy(CONFIGS / TWO_STAGE, target / TWO_STAGE)
    return target


def check(config: Path, *args: str | Path) -> tuple[int, str, str, dict[str, Any]]:
    """Exit code, stdout, stderr and the JSON result of `check -c config`."""
    result = config.parent / f"{config.stem}.result.json"
    code, out, err = run_cli("check", "-c", config, "--quiet", "--json", result, *args)
    document = json.loads(result.read_text(encoding="utf-8")) if result.exists() else {}
    return code, out, err, document


def variant(config: Path, name: str, old: str, new: str) -> Path:
    """`config` copied beside it as `name.yaml`, with `old` (which it must hold) made `new`."""
    text = config.read_text(encoding="utf-8")
    assert old in text, old
    copy = config.with_name(f"{name}.yaml")
    copy.write_text(text.replace(old, new), encoding="utf-8")
    return copy


def overall(document: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {
        c["metric"]: (c["first_stage"], c["reranker"])
        for c in document["stage_losses"]["checks"]
        if c["slice"] == "all"
    }


def overall_check(document: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(c for c in document["comparisons"] if c["metric"] == metric and c["slice"] == "all")


def verdict(document: dict[str, Any], metric: str) -> str:
    return str(overall_check(document, metric)["verdict"])


def test_the_two_stage_example_passes_and_lost_nothing(example: Path) -> None:
    code, out, err, document = check(example / "example-two-stage.yaml")
    assert code == 0, err
    assert verdict(document, "candidates:recall@100") == "pass"
    assert set(overall(document).values()) == {(0, 0)}
    assert "lost by the first stage" not in out


def test_a_first_stage_that_loses_documents_is_named(example: Path) -> None:
    markdown = example / "first.md"
    code, out, err, document = check(
        example / "example-two-stage-first-stage.yaml", "--markdown", markdown
    )
    assert code == 1, err
    assert verdict(document, "candidates:recall@100") == "regressed"
    first, demoted = overall(document)["ndcg@10"]
    assert first > 4 * demoted > 0, (first, demoted)
    line = f"ndcg@10: {first} lost by the first stage, {demoted} demoted by the reranker"
    assert line in out
    assert line in markdown.read_text(encoding="utf-8")


def test_a_reranker_that_demotes_documents_is_named(example: Path) -> None:
    code, out, err, document = check(example / "example-two-stage-reranker.yaml")
    assert code == 1, err
    # The same candidates as the baseline's: the first stage lost nothing, its check holds.
    assert verdict(document, "candidates:recall@100") == "pass"
    assert overall_check(document, "candidates:recall@100")["delta"] == 0.0
    first, demoted = overall(document)["recall@10"]
    assert (first, demoted > 100) == (0, True)
    assert verdict(document, "recall@10") == "regressed"
    top = document["stage_losses"]["queries"][0]
    assert top["first_stage"] == 0
    assert top["reranker_docs"]
    assert f"recall@10: 0 lost by the first stage, {demoted} demoted by the reranker" in out


def test_a_first_stage_check_of_a_retriever_without_candidates_is_an_error(
    example: Path,
) -> None:
    config = variant(
        example / "example.yaml", "one-stage", "  ap(rel=1)@10: {}", "  candidates:recall@100: {}"
    )
    code, _, err, _ = check(config)
    assert code == 2
    assert "candidates:recall@100 read the first stage's candidates, but retriever bm25" in err
    assert "use the stages retriever" in err


def test_a_reranker_returning_a_document_it_was_not_given_fails_the_query(
    example: Path,
) -> None:
    (example / "stray_rerank.py").write_text(
        "def rerank(query, candidates, k):\n    return ['not-a-candidate']\n", encoding="utf-8"
    )
    config = variant(
        example / "example-two-stage.yaml",
        "stray",
        "two_stage_rerank:rerank",
        "stray_rerank:rerank",
    )
    code, _, err, _ = check(config)
    assert code == 2
    assert "retriever.rerank returned doc 'not-a-candidate', which is not among the" in err


HOSTILE = [
    "::error::pwned",
    "<script>alert(1)</script>",
    "\x1b[31mred",
    "|x|",
    "[link](javascript:x)",
]

TWO_STAGE_SEARCH = """\
import json

RELEVANT = json.loads({relevant!r})


def search(query, k, metadata, *, mode):
    i = int(metadata["n"])
    relevant = RELEVANT[i]
    filler = [f"filler{{i}}-{{j}}" for j in range(20)]
    candidates = relevant + filler
    if mode == "first":  # the first stage loses two relevant documents of every query
        candidates = relevant[2:] + filler
    hits = filler if mode == "rerank" else candidates
    return {{"hits": hits[:k], "candidates": candidates}}
"""


def test_hostile_lost_doc_ids_reach_no_report_sink(tmp_path: Path) -> None:
    queries = [
        {"_id": f"q{i}", "text": f"query {i}", "intent": "a" if i % 2 else "b", "n": str(i)}
        for i in range(24)
    ]
    relevant = [[f"{name}{i}" for name in HOSTILE] for i in range(24)]
    qrels = [(f"q{i}", doc, 2) for i, docs in enumerate(relevant) for doc in docs]
    (tmp_path / "two_stage_search.py").write_text(
        TWO_STAGE_SEARCH.format(relevant=json.dumps(relevant)), encoding="utf-8"
    )

    def gate(mode: str) -> Path:
        return labelled_set(
            tmp_path,
            queries=queries,
            qrels=qrels,
            corpus=None,
            name=f"hostile-{mode}",
            retriever={"type": "python", "target": "two_stage_search:search",
                       "kwargs": {"mode": mode}},
            metrics={"recall@10": {"max_drop": "5pt"}, "candidates:recall@30": {}},
        )  # fmt: skip

    assert run_cli("baseline", "-c", gate("good"), "--quiet")[0] == 0
    for mode, lost in (("first", (2 * 24, 0)), ("rerank", (0, 5 * 24))):
        paths = {suffix: tmp_path / f"{mode}.{suffix}" for suffix in ("json", "md", "html", "xml")}
        code, out, err = run_cli(
            "check", "-c", gate(mode), "--json", paths["json"], "--markdown", paths["md"],
            "--html", paths["html"], "--junit", paths["xml"], "--quiet",
        )  # fmt: skip
        assert code == 1, err
        record = read_result(paths["json"])
        assert record.stage_losses is not None
        found = {
            (c.first_stage, c.reranker) for c in record.stage_losses.checks if c.slice == "all"
        }
        assert found == {lost}
        sinks = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
        sinks["stdout"] = out
        sinks["summary"] = summary_of(record)
        sinks["annotations"] = "\n".join(message for _, message in annotations_of(record))
        assert "demoted by the reranker" in sinks["md"]
        assert "demoted by the reranker" in sinks["html"]
        assert "demoted by the reranker" in sinks["summary"]
        for name, text in sinks.items():
            if name != "json":  # the result keeps the ids as they were
                assert "\x1b" not in text, name
            if name in ("md", "html", "xml"):  # markup: the tag must stay text
                assert "<script>" not in text, name
            assert not any(line.lstrip().startswith("::") for line in text.splitlines()), name
        assert "[link](javascript" not in sinks["md"]  # Markdown escapes the brackets


def test_new_judgments_re_score_the_candidates_from_the_stored_candidates(
    tmp_path: Path,
) -> None:
    """Only the judgments changed: the baseline's candidates column is re-scored from the
    candidates it stored, as a baseline made now would score it, not from its top 10."""
    configs = copy_example(tmp_path / "configs")
    shutil.copy(CONFIGS / "example-two-stage.yaml", configs / "example-two-stage.yaml")
    shutil.copy(CONFIGS / "two_stage_rerank.py", configs / "two_stage_rerank.py")
    (configs / TWO_STAGE).parent.mkdir(parents=True)
    shutil.copy(CONFIGS / TWO_STAGE, configs / TWO_STAGE)
    stored = json.loads((configs / TWO_STAGE).read_text(encoding="utf-8"))
    # Judge relevant the last candidate of twenty queries: within the candidates, past the top 10.
    lists = [(q, docs) for q, docs in sorted(stored["candidates"].items()) if len(docs) > 20]
    added = [(q, docs[-1]) for q, docs in lists[:20]]
    qrels = configs / "example" / "qrels" / "test.tsv"
    with qrels.open("a", encoding="utf-8") as file:
        file.writelines(f"{q}\t{doc}\t2\n" for q, doc in added)
    code, _, err, document = check(configs / "example-two-stage.yaml")
    assert code == 0, err
    assert any("re-scored with the current judgments" in w for w in document["warnings"])
    fresh = configs / "fresh.json"
    assert (
        run_cli("baseline", "-c", configs / "example-two-stage.yaml", "-o", fresh, "--quiet")[0]
        == 0
    )
    now = json.loads(fresh.read_text(encoding="utf-8"))["scores"]
    for metric in ("candidates:recall@100", "recall@10"):
        assert document["baseline"]["scores"][metric] == now[metric], metric
    assert (
        document["baseline"]["scores"]["candidates:recall@100"]
        != stored["scores"]["candidates:recall@100"]
    )


def test_a_sequential_check_looks_at_the_first_stage_too(example: Path) -> None:
    code, _, err, document = check(example / "example-two-stage-first-stage.yaml", "--sequential")
    assert code == 1, err
    assert document["sequential"]["stopped"] is True
    assert document["sequential"]["queries_run"] < 131
    assert any(c["metric"] == "candidates:recall@100" for c in document["failures"])
    first, demoted = overall(document)["ndcg@10"]
    assert first > demoted


def test_a_drastic_drop_stops_at_the_first_planned_look(example: Path) -> None:
    # The reranker puts the candidates worst first: the first planned look (the first batch
    # at or past 35% of the 131 queries) stops it. The looks decided, so FAIL (exit 1) with the
    # stopped checks failed and any check blind on the queries run not gated, not a refusal.
    code, _, err, document = check(example / "example-two-stage-reranker.yaml", "--sequential")
    assert code == 1, err
    assert "could never fail" not in err
    assert document["sequential"]["queries_run"] == 48
    failed = {(c["metric"], c["slice"]) for c in document["failures"]}
    stopped = {(s["metric"], s["slice"]) for s in document["sequential"]["stopped_by"]}
    assert stopped
    assert stopped <= failed
    blind = [c for c in document["comparisons"] if c["slice"] == "all" and not c["gated"]]
    assert all(c["reason"] for c in blind)
