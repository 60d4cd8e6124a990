"""Queries files a careless hand wrote: an id given twice, no query at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

CONFIG = """\
version: 1
name: careless
dataset: {dataset}
retriever: {{type: bm25}}
k: 10
metrics:
  ndcg@10: {{}}
"""


@pytest.mark.parametrize(
    ("name", "text", "dataset", "where"),
    [
        (
            "queries.jsonl",
            '{"id": "q1", "text": "alpha", "qrels": {"d1": 1}}\n'
            '{"id": "q2", "text": "beta", "qrels": {"d2": 1}}\n'
            '{"id": "q1", "text": "gamma", "qrels": {"d2": 1}}\n',
            "{queries: queries.jsonl, corpus: corpus.jsonl}",
            "queries.jsonl:3: query id 'q1' is given twice (first on line 1)",
        ),
        (
            "queries.tsv",
            "q1\talpha\nq2\tbeta\nq1\tgamma\n",
            "{queries: queries.tsv, qrels: qrels.txt, corpus: corpus.jsonl, format: trec}",
            "queries.tsv:3: query id 'q1' is given twice (first on line 1)",
        ),
    ],
)
@pytest.mark.parametrize("command", ["lint", "baseline", "check"])
def test_a_query_id_given_twice_is_refused_naming_both_lines(
    tmp_path: Path, name: str, text: str, dataset: str, where: str, command: str
) -> None:
    (tmp_path / name).write_text(text)
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "corpus.jsonl").write_text(
        '{"id": "d1", "text": "alpha"}\n{"id": "d2", "text": "beta gamma"}\n'
    )
    config = tmp_path / "gate.yaml"
    config.write_text(CONFIG.format(dataset=dataset))
    code, _, err = run_cli(
        command, "-c", str(config), *(["--force"] if command == "baseline" else [])
    )
    assert code == 2
    assert where in err


def test_an_empty_queries_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "topics.tsv").write_text("")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    config = tmp_path / "gate.yaml"
    config.write_text(
        CONFIG.format(dataset="{queries: topics.tsv, qrels: qrels.txt, format: trec}")
    )
    code, _, err = run_cli("baseline", "-c", str(config))
    assert code == 2
    assert "the queries file holds no query (1 judged query in the judgments)" in err
    assert "topics.tsv]" in err  # where the finding is, as lint shows it
