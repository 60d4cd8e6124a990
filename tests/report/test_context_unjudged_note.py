"""The unjudged-documents note appears only where the current top k is less judged."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_cli

QUERIES = 40


def run_file(path: Path, unjudged: int, relevant_first: bool, tag: str) -> None:
    """Ten results per query: its relevant doc (first, or judged non-relevant in its place),
    then judged non-relevant docs, with `unjudged` docs nobody judged at the bottom."""
    rows = []
    for q in range(QUERIES):
        docs = [f"r{q}" if relevant_first else f"n{q}_0"]
        docs += [f"n{q}_{i}" for i in range(1, 10 - unjudged)]
        docs += [f"{tag}{q}_{i}" for i in range(unjudged)]
        rows += [f"q{q} Q0 {doc} {rank} {10 - rank} {tag}" for rank, doc in enumerate(docs, 1)]
    path.write_text("\n".join(rows) + "\n")


def write_gate(root: Path) -> Path:
    lines = [json.dumps({"id": f"q{q}", "text": f"query {q}"}) for q in range(QUERIES)]
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n")
    qrels = [f"q{q} 0 r{q} 1" for q in range(QUERIES)]
    qrels += [f"q{q} 0 n{q}_{i} 0" for q in range(QUERIES) for i in range(10)]
    (root / "qrels.txt").write_text("\n".join(qrels) + "\n")
    config = root / "gate.yaml"
    config.write_text(
        "version: 1\nname: unjudged\n"
        "dataset: {queries: queries.jsonl, qrels: qrels.txt}\n"
        "retriever: {type: run_file, path: before.txt}\n"
        "k: 10\nmetrics:\n  ndcg@10: {max_drop: 2pt}\n"
    )
    return config


def note_of(root: Path, config: Path, after: Path) -> tuple[int, str]:
    report = root / "report.md"
    code, _, err = run_cli(
        "check", "-c", str(config), "--run", str(after), "--markdown", str(report)
    )
    assert code == 1, err  # every relevant document fell out of the top 10
    return code, report.read_text()


def test_new_unjudged_documents_in_a_better_judged_top_k_get_no_note(
    tmp_path: Path,
) -> None:
    # The baseline's top 10 held 8 unjudged documents a query (judged@10 0.2); the current
    # one holds 5 others (0.5). New unjudged ids entered, but the share of unjudged fell:
    # "N unjudged documents entered the top 10 (judged@10 0.20 -> 0.50)" read as a
    # contradiction, and they cannot explain the drop.
    config = write_gate(tmp_path)
    run_file(tmp_path / "before.txt", unjudged=8, relevant_first=True, tag="old")
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    run_file(tmp_path / "after.txt", unjudged=5, relevant_first=False, tag="new")
    _, report = note_of(tmp_path, config, tmp_path / "after.txt")
    assert "entered the top 10" not in report
    assert "may be theirs" not in report


def test_a_less_judged_top_k_still_gets_the_note(tmp_path: Path) -> None:
    config = write_gate(tmp_path)
    run_file(tmp_path / "before.txt", unjudged=2, relevant_first=True, tag="old")
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    run_file(tmp_path / "after.txt", unjudged=6, relevant_first=False, tag="new")
    _, report = note_of(tmp_path, config, tmp_path / "after.txt")
    assert "240 unjudged documents entered the top 10" in report
    assert "judged@10 0.80 → 0.40" in report
