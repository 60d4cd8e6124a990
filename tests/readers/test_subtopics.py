"""Subtopic qrels read from a file: a repeated judgment is refused at the line that repeats."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.helpers.cli import run_cli


def test_a_repeated_judgment_is_refused_at_its_line_not_after_the_whole_file(
    tmp_path: Path,
) -> None:
    subtopics = tmp_path / "diversity.txt.gz"
    with gzip.open(subtopics, "wt", encoding="utf-8", compresslevel=1) as handle:
        for _ in range(40):  # 4,000,000 copies of one judgment, written in blocks
            handle.write("51 1 doc-17 1\n" * 100_000)
        handle.write("a line a reader reaches only by reading on\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("51 0 doc-17 1\n", encoding="utf-8")
    run = tmp_path / "run.txt"
    run.write_text("51 Q0 doc-17 1 1.0 t\n", encoding="utf-8")
    code, _, err = run_cli("evaluate", qrels, run, "--subtopics", subtopics, "-m", "alpha_ndcg@10")
    assert code == 2, err
    assert (
        f"{subtopics}:2: duplicate judgment for topic '51', subtopic '1', doc 'doc-17': "
        "already given on line 1; keep one line per (topic, subtopic, doc)"
    ) in err
