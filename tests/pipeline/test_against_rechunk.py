"""`check --against REF` across a re-chunk: a retriever with its own index (a saved run), or
the built-in bm25 over the corpus at REF, searched REF's chunks, so the reference side's labels
are anchored in REF's chunking."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.helpers.chunkings import (
    billing_only,
    copy_chunked_example,
    corpus_rows,
    failing_slices,
    judged_relevant,
    write_rows,
)
from tests.helpers.cli import run_cli
from tests.helpers.git import git

RUN_FILE = """retriever:
  type: run_file
  path: run.trec
"""


def _repo(tmp_path: Path, *, run: Path | None = None) -> tuple[Path, Path]:
    """A repository whose main commit gates the chunked example over chunks of 300
    characters (the built-in bm25, or the saved `run` of a retriever with its own index),
    and its gate config (the pull request's to change)."""
    chunked = copy_chunked_example(tmp_path / "chunked")
    root = tmp_path / "repo"
    (root / "search").mkdir(parents=True)
    for folder in ("example", "example-chunked"):
        shutil.copytree(chunked / folder, root / "search" / folder)
    text = (chunked / "example-chunked.yaml").read_text()
    text = text[: text.index("\nbaseline:")] + "\n"
    if run is not None:
        text = text.replace("retriever:\n  type: bm25\n", RUN_FILE)
        shutil.copy(run, root / "search" / "run.trec")
    gate = root / "search" / "gate.yaml"
    gate.write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "chunks of 300 characters")
    return root, gate


def _anchored_every_label(document: dict[str, Any]) -> bool:
    return any(
        w.startswith("the corpus was re-chunked since the baseline: the baseline's chunking "
                     "anchors all 806 labels, the current one 19")
        for w in document["warnings"]
    )  # fmt: skip


def _pr_against_main(root: Path, gate: Path) -> tuple[int, str, dict[str, Any]]:
    """The pull request that cuts chunks of 200 characters, checked against main: the exit
    code, stderr and the result document."""
    gate.write_text(gate.read_text().replace("corpus-300.jsonl", "corpus-200.jsonl"))
    result = root / "result.json"
    code, _, err = run_cli("check", "-c", gate, "--against", "main", "--quiet", "--json", result)
    return code, err, json.loads(result.read_text()) if result.is_file() else {}


def test_a_chunk_size_change_against_main_passes_and_says_what_it_anchored(
    tmp_path: Path,
) -> None:
    chunked = copy_chunked_example(tmp_path / "runs")
    runs = {}
    for name, config in (("300", "example-chunked.yaml"), ("200", "example-chunked-pr.yaml")):
        runs[name] = tmp_path / f"run-{name}.trec"
        code, _, err = run_cli(
            "run", "-c", chunked / config, "-o", runs[name], "--no-cache", "--quiet"
        )
        assert code == 0, err
    root, gate = _repo(tmp_path, run=runs["300"])
    # The pull request: chunks of 200 characters, and the retriever's run over them.
    shutil.copy(runs["200"], root / "search" / "run.trec")
    code, err, document = _pr_against_main(root, gate)
    assert code == 0, err
    assert document["status"] == "pass"
    assert _anchored_every_label(document)


def test_bm25_at_ref_searches_ref_s_chunks_and_a_chunk_size_change_passes(
    tmp_path: Path,
) -> None:
    root, gate = _repo(tmp_path)
    code, err, document = _pr_against_main(root, gate)
    assert code == 0, err
    assert document["status"] == "pass"
    # Before, bm25 indexed the working tree's chunks on both sides: no re-chunk was seen.
    assert _anchored_every_label(document)


def test_bm25_across_a_re_chunk_that_loses_judged_text_fails_those_queries_slices(
    tmp_path: Path,
) -> None:
    root, gate = _repo(tmp_path)
    search = root / "search"
    judged = judged_relevant(search)
    queries, lost = billing_only(search, judged)
    hit = {q for doc in lost for q in judged[doc]}
    corpus = search / "example-chunked" / "corpus-200.jsonl"
    write_rows(corpus, [r for r in corpus_rows(corpus) if r["metadata"]["source"] not in lost])
    code, err, document = _pr_against_main(root, gate)
    assert code == 1, err
    failing = {c["slice"] for c in document["comparisons"] if c["failed"]}
    # Before, both sides searched the pull request's chunks and it passed.
    assert failing_slices(queries, hit, failing)
