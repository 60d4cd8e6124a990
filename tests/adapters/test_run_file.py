"""The run_file adapter over TREC, JSONL and BEIR results files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.adapters import Query, RunFileConfig, fingerprint
from retrieval_gate.adapters.run_file import RunFileRetriever
from retrieval_gate.core.model import Hit
from retrieval_gate.errors import CoverageError, GateError, InputError

TREC = """\
q1 Q0 d1 1 1.5 run
q1 Q0 d2 2 2.5 run
q1 Q0 d3 3 2.5 run
q1 Q0 d0 4 0.5 run
q2 Q0 x 1 1.0 run
"""


def build(tmp_path: Path, name: str, text: str, fmt: str | None = None) -> RunFileRetriever:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return RunFileRetriever(RunFileConfig(path=Path(name), format=fmt), base_dir=tmp_path)


def ids(hits: list[Hit]) -> list[str]:
    return [hit.doc_id for hit in hits]


def test_trec_ranks_by_score_then_doc_id_descending(tmp_path: Path) -> None:
    retriever = build(tmp_path, "run.txt", TREC)
    assert retriever.search(Query("q1", "any"), 10) == [
        Hit("d3", 2.5),
        Hit("d2", 2.5),
        Hit("d1", 1.5),
        Hit("d0", 0.5),
    ]
    assert ids(retriever.search(Query("q1", "any"), 2)) == ["d3", "d2"]
    assert ids(retriever.search(Query("q2", "any"), 2)) == ["x"]


def test_query_absent_from_the_file_gets_nothing(tmp_path: Path) -> None:
    assert build(tmp_path, "run.txt", TREC).search(Query("q9", "any"), 10) == []


def test_jsonl_with_scores_and_ranked_as_listed(tmp_path: Path) -> None:
    scored = {
        "query_id": "q1",
        "results": [{"doc_id": "a", "score": 1}, {"doc_id": "b", "score": 3}],
    }
    retriever = build(tmp_path, "scored.jsonl", json.dumps(scored) + "\n")
    assert retriever.search(Query("q1", ""), 5) == [Hit("b", 3.0), Hit("a", 1.0)]
    listed = {"query_id": "q2", "results": ["z", "y", "x"]}
    retriever = build(tmp_path, "listed.jsonl", json.dumps(listed) + "\n")
    assert ids(retriever.search(Query("q2", ""), 2)) == ["z", "y"]


def test_beir_results_json_named_explicitly(tmp_path: Path) -> None:
    text = json.dumps({"q1": {"a": 0.5, "b": 0.7, "c": 0.7}})
    retriever = build(tmp_path, "results.data", text, fmt="json")
    assert retriever.search(Query("q1", ""), 3) == [Hit("c", 0.7), Hit("b", 0.7), Hit("a", 0.5)]


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    config = RunFileConfig(path=Path("nope.txt"))
    with pytest.raises(GateError, match=r"retriever.path nope\.txt: no such file \(.*nope\.txt"):
        RunFileRetriever(config, base_dir=tmp_path)
    with pytest.raises(InputError, match=r"^--run runs/nope\.trec: no such file \("):
        RunFileRetriever(RunFileConfig.given("runs/nope.trec", "--run"))


def test_description_changes_with_the_file_contents(tmp_path: Path) -> None:
    first = build(tmp_path, "run.txt", TREC).describe()
    assert first["path"] == "run.txt"
    second = build(tmp_path, "run.txt", TREC.replace("1.5", "1.6")).describe()
    assert fingerprint(first) != fingerprint(second)


@pytest.mark.parametrize("change", ["replaced", "appended"])
def test_a_file_changed_while_it_is_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    import retrieval_gate.readers

    path = tmp_path / "run.txt"
    path.write_text(TREC, encoding="utf-8")
    real = retrieval_gate.readers.read_run

    def read_after_a_writer(source: Path, fmt: str | None = None) -> object:
        if change == "replaced":  # a new file renamed over the old one, as tools write
            (tmp_path / "new.txt").write_text(TREC.replace("1.5", "1.6"), encoding="utf-8")
            (tmp_path / "new.txt").replace(path)
        else:
            with path.open("a", encoding="utf-8") as handle:
                handle.write("q2 Q0 y 2 0.5 run\n")
        return real(source, fmt)

    monkeypatch.setattr(retrieval_gate.readers, "read_run", read_after_a_writer)
    with pytest.raises(InputError, match=r"run\.txt: the file changed while it was read"):
        RunFileRetriever(RunFileConfig(path=Path("run.txt")), base_dir=tmp_path)


@pytest.mark.parametrize(
    ("run_ids", "cause"),
    [
        (["Q1", "Q2", "Q3"], r"3 of the ids differ only in letter case \('Q1' in the file, 'q1'"),
        (
            ["run-q1", "run-q2", "run-q3"],
            r"the file's query ids carry a prefix 'run-' that the labelled set's do not",
        ),
        (["q1.0", "q2.0", "q3.0"], r"the file's query ids carry a suffix '\.0'"),
        (["1", "2", "3"], r"numbers \('1'\) where the labelled set's are names \('q1'\)"),
    ],
)
def test_coverage_error_names_the_likely_cause(
    tmp_path: Path, run_ids: list[str], cause: str
) -> None:
    text = "".join(f"{query} Q0 d1 1 1.0 run\n" for query in run_ids)
    retriever = build(tmp_path, "run.txt", text)
    with pytest.raises(CoverageError, match=cause) as caught:
        retriever.check_coverage(["q1", "q2", "q3"], 0.9)
    assert str(caught.value).startswith(
        "retriever.path run.txt: shares no query id with the labelled set (3 queries)"
    )


def test_coverage_counts_queries_with_rows_against_min_coverage(tmp_path: Path) -> None:
    retriever = build(tmp_path, "run.txt", TREC)  # answers q1 and q2
    retriever.check_coverage(["q1", "q2"], 1.0)
    retriever.check_coverage(["q1", "q2", "q3"], 0.6)
    with pytest.raises(CoverageError, match=r"answers 2 of 3 labelled queries \(67%\), below "):
        retriever.check_coverage(["q1", "q2", "q3"], 0.9)
    with pytest.raises(CoverageError, match=r"\(66\.7%\), below gate.min_coverage 67%"):
        retriever.check_coverage(["q1", "q2", "q3"], 0.67)
