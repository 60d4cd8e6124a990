"""`check` when the corpus changed under the labels: the queries of a changed judged document
are not comparable, left out of every check and named in every report."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_gate.gate.baseline.corpus_changes import NO_HASHES
from retrieval_gate.report import annotations_of, render, summary_of, validate_result
from tests.helpers.builders import EXAMPLE_BASELINE, copy_example, labelled_set
from tests.helpers.cli import CliResult, run_cli

Rows = list[dict[str, Any]]


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """The example and its committed baseline (which holds its judged documents' hashes)."""
    return copy_example(tmp_path / "configs")


def edit_corpus(configs: Path, change: Callable[[Rows], Rows]) -> None:
    path = configs / "example" / "corpus.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps(row) + "\n" for row in change(rows)), encoding="utf-8")


def rewritten(doc_id: str, text: str) -> Callable[[Rows], Rows]:
    return lambda rows: [{**row, "text": text} if row["_id"] == doc_id else row for row in rows]


def judging(configs: Path, *docs: str) -> list[str]:
    """The query ids of the qrels rows judging any of `docs`, sorted, as the file says."""
    with (configs / "example" / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return sorted({row["query-id"] for row in rows if row["corpus-id"] in docs})


def check(configs: Path, config: str = "example.yaml") -> tuple[CliResult, dict[str, Any]]:
    """`check` writing the JSON, Markdown, HTML and JUnit reports beside the configs."""
    out = configs / "out"
    done = run_cli(
        "check", "-c", configs / config, "--no-cache", "--quiet",
        "--json", out / "r.json", "--markdown", out / "r.md",
        "--html", out / "r.html", "--junit", out / "r.xml",
    )  # fmt: skip
    document = json.loads((out / "r.json").read_text(encoding="utf-8"))
    return done, document


def report(configs: Path, suffix: str) -> str:
    return (configs / "out" / f"r.{suffix}").read_text(encoding="utf-8")


def overall_n(document: dict[str, Any]) -> int:
    return next(c["n"] for c in document["comparisons"] if c["slice"] == "all")


def test_a_removed_and_a_rewritten_judged_document_leave_their_queries_out(
    configs: Path,
) -> None:
    edit_corpus(configs, lambda rows: [row for row in rows if row["_id"] != "kb-1101"])
    edit_corpus(configs, rewritten("kb-1102", "Completely different text now."))
    removed, changed = judging(configs, "kb-1101"), judging(configs, "kb-1102")
    left_out = sorted({*removed, *changed})
    done, document = check(configs)
    assert done.ret == 0, done.err
    listed = document["corpus"]["not_comparable"]
    assert [q["query_id"] for q in listed] == left_out
    both = next(q for q in listed if q["query_id"] in removed and q["query_id"] in changed)
    assert both["reasons"] == ["doc kb-1101 removed", "doc kb-1102 text changed"]
    assert overall_n(document) == 131 - len(left_out)
    # Both records stay whole (history and `compare` read them); the checks left them out.
    assert len(document["current"]["query_ids"]) == 131
    for text in (done.out, report(configs, "md"), report(configs, "html"), report(configs, "xml")):
        assert f"{len(left_out)} queries not comparable, left out of every check" in text
        for query in left_out:
            assert query in text
    assert f"{both['query_id']}: doc kb-1101 removed; doc kb-1102 text changed" in done.out
    assert "- " + left_out[0] + ": doc kb-1102 text changed" in report(configs, "md")
    warnings = [m for level, m in annotations_of(validate_result(document)) if level == "warning"]
    assert any("not comparable" in message for message in warnings)
    # `compare` re-decides the saved result the same way: its record carries the hashes too.
    again = configs / "out" / "again.json"
    done = run_cli(
        "compare", configs / EXAMPLE_BASELINE, configs / "out" / "r.json",
        "-c", configs / "example.yaml", "--quiet", "--json", again,
    )  # fmt: skip
    assert done.ret == 0, done.err
    redecided = json.loads(again.read_text(encoding="utf-8"))
    assert redecided["corpus"] == document["corpus"]
    assert redecided["comparisons"] == document["comparisons"]


def test_unjudged_added_and_rewrapped_documents_change_nothing(configs: Path) -> None:
    judged = set(json.loads((configs / EXAMPLE_BASELINE).read_text())["judged_documents"])

    def change(rows: Rows) -> Rows:
        unjudged = next(row for row in rows if row["_id"] not in judged)
        first = next(row for row in rows if row["_id"] in judged)
        unjudged["text"] = "rewritten, but nobody judged it"
        first["text"] = "  " + "\n   ".join(first["text"].split(" ")) + "\t"  # re-wrapped
        return [*rows, {"_id": "kb-new", "title": "New article", "text": "added since"}]

    edit_corpus(configs, change)
    done, document = check(configs)
    assert done.ret == 0, done.err
    assert "corpus" not in document
    assert overall_n(document) == 131
    for text in (done.out, report(configs, "md"), report(configs, "html"), report(configs, "xml")):
        assert "not comparable" not in text
        assert "not checked for changes" not in text


def test_every_query_affected_is_exit_2_naming_the_documents(configs: Path) -> None:
    edit_corpus(configs, lambda rows: [{**row, "text": row["text"] + " v2"} for row in rows])
    done = run_cli(
        "check", "-c", configs / "example.yaml", "--no-cache", "--quiet",
        "--markdown", configs / "error.md",
    )  # fmt: skip
    assert done.ret == 2
    assert "the corpus changed under the labels of 131 queries of 131" in done.err
    assert "text changed: 'kb-1101'" in done.err
    assert "retrieval-gate baseline --force" in done.err
    assert "the corpus changed under the labels" in (configs / "error.md").read_text()


def test_fewer_queries_left_than_min_coverage_is_exit_2(configs: Path) -> None:
    path = configs / "example.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config.setdefault("gate", {})["min_coverage"] = 0.99
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    edit_corpus(configs, rewritten("kb-1102", "Completely different text now."))
    affected = len(judging(configs, "kb-1102"))
    done = run_cli("check", "-c", path, "--no-cache", "--quiet")
    assert done.ret == 2
    assert f"leaving {131 - affected}, fewer than gate.min_coverage 99%" in done.err


def test_changed_judgments_are_rescored_without_the_queries_left_out(configs: Path) -> None:
    qrels = configs / "example" / "qrels" / "test.tsv"
    lines = qrels.read_text(encoding="utf-8").splitlines()
    regraded = [f"{line.rpartition(chr(9))[0]}\t{3 - int(line[-1])}" for line in lines[-5:]]
    qrels.write_text("\n".join([*lines[:-5], *regraded]) + "\n", encoding="utf-8")
    edit_corpus(configs, rewritten("kb-1102", "Completely different text now."))
    done, document = check(configs)
    assert done.ret == 0, done.err
    assert any("the judgments changed since the baseline" in w for w in document["warnings"])
    left_out = [q["query_id"] for q in document["corpus"]["not_comparable"]]
    assert left_out == judging(configs, "kb-1102")
    assert overall_n(document) == 131 - len(left_out)


def test_a_baseline_without_hashes_still_reads_and_says_so(configs: Path) -> None:
    path = configs / EXAMPLE_BASELINE
    baseline = json.loads(path.read_text(encoding="utf-8"))
    del baseline["judged_documents"]
    path.write_text(json.dumps(baseline), encoding="utf-8")
    edit_corpus(configs, rewritten("kb-1102", "Completely different text now."))
    done, document = check(configs)
    assert done.ret == 0, done.err
    assert document["corpus"] == {"checked": False, "reason": NO_HASHES}
    assert f"judged documents not checked for changes: {NO_HASHES}" in report(configs, "md")
    assert overall_n(document) == 131


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ('"abc"', "judged_documents: Input should be a valid dictionary"),
        (
            '{"kb-1101": "XYZ"}',
            "judged_documents.kb-1101: Value error, a judged document's hash is 16 lowercase "
            "hex digits (got 'XYZ')",
        ),
        ('{"kb-1101": 7}', "judged_documents.kb-1101: Input should be a valid string"),
        ('{"kb-1101": {"nested": [[[]]]}}', "judged_documents.kb-1101: Input should be a valid"),
    ],
)
def test_a_malformed_hash_field_is_exit_2_naming_file_and_field(
    configs: Path, value: str, named: str
) -> None:
    path = configs / EXAMPLE_BASELINE
    baseline = json.loads(path.read_text(encoding="utf-8"))
    baseline["judged_documents"] = json.loads(value)
    path.write_text(json.dumps(baseline), encoding="utf-8")
    done = run_cli("check", "-c", configs / "example.yaml", "--no-cache", "--quiet")
    assert done.ret == 2
    assert "baseline.json" in done.err
    assert named in done.err
    assert "retrieval-gate baseline --force" in done.err


HOSTILE_DOC = "::error::forged\x1b[31m<script>alert(1)</script>|`x`"
HOSTILE_QUERY = "::warning::q\x07<b>"


def test_hostile_document_and_query_ids_are_inert_in_every_sink(tmp_path: Path) -> None:
    queries = [{"_id": HOSTILE_QUERY, "text": "query number 1", "intent": "a"}] + [
        {"_id": f"q{i}", "text": f"query number {i}", "intent": "a" if i % 2 else "b"}
        for i in range(2, 7)
    ]
    corpus = [{"_id": HOSTILE_DOC, "title": "doc 1", "text": "text 1"}] + [
        {"_id": f"d{i}", "title": f"doc {i}", "text": f"text {i}"} for i in range(2, 10)
    ]
    qrels = [(HOSTILE_QUERY, HOSTILE_DOC, 2)] + [(f"q{i}", f"d{i}", 2) for i in range(2, 7)]
    config = labelled_set(
        tmp_path,
        queries=queries,
        corpus=corpus,
        qrels=qrels,
        gate={"min_coverage": 0.5, "require_significance": False},
        baseline="baseline.json",
    )
    done = run_cli("baseline", "-c", config, "--no-cache", "--quiet")
    assert done.ret == 0, done.err
    corpus[0]["text"] = "text one, rewritten"
    (tmp_path / "set" / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    result = tmp_path / "r.json"
    done = run_cli("check", "-c", config, "--no-cache", "--quiet", "--json", result)
    assert done.ret == 0, done.err
    document = json.loads(result.read_text(encoding="utf-8"))
    assert document["corpus"]["not_comparable"] == [
        {"query_id": HOSTILE_QUERY, "reasons": [f"doc {HOSTILE_DOC} text changed"]}
    ]
    record = validate_result(document)
    texts = {fmt: render(record, fmt) for fmt in ("markdown", "html", "junit")}
    texts["summary"] = summary_of(record)
    texts["terminal"] = done.out
    texts["annotations"] = "\n".join(message for _, message in annotations_of(record))
    for fmt, text in texts.items():
        assert "forged" in text, fmt  # said, made harmless
        assert not any(line.lstrip().startswith("::") for line in text.splitlines()), fmt
        assert not {"\x1b", "\x07"} & set(text), fmt
        if fmt in ("markdown", "html", "junit"):
            assert "<script>" not in text, fmt
            assert "<b>" not in text, fmt
