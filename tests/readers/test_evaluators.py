"""Evaluator exports read from each tool's documented shape, and every bad one refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.readers.evaluators import read_evaluator_scores
from retrieval_gate.readers.evaluators import rows as export_rows
from tests.helpers.builders import copy_example, write
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

RAGAS_CSV = (
    "user_input,retrieved_contexts,response,reference,faithfulness,answer_relevancy\n"
    "refund,\"['Refund policy', 'Request a refund']\",An answer.,A reference.,0.75,0.5\n"
    '"how do I\n  cancel",[],"Another, answer",ref,1.0,0.25\n'
)


def test_a_ragas_csv_gives_each_rows_text_and_the_wanted_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "ragas.csv", RAGAS_CSV)
    export = read_evaluator_scores(path, "ragas", ["faithfulness"])
    assert [(r.text, r.query_id, dict(r.scores)) for r in export.rows] == [
        ("refund", None, {"faithfulness": 0.75}),
        ("how do I cancel", None, {"faithfulness": 1.0}),  # whitespace collapsed
    ]
    assert [r.where for r in export.rows] == ["row 1", "row 2"]
    assert [r.line for r in export.rows] == [2, 3]
    assert "answer_relevancy" in export.names


def test_ragas_jsonl_and_the_older_question_column_are_read(tmp_path: Path) -> None:
    lines = [
        {"question": "refund", "contexts": ["a"], "answer": "x", "faithfulness": 0.5},
        {"question": "cancel", "contexts": [], "answer": "y", "faithfulness": 1},
    ]
    path = write(tmp_path, "ragas.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    export = read_evaluator_scores(path, "ragas", ["faithfulness"])
    assert [(r.text, r.scores["faithfulness"]) for r in export.rows] == [
        ("refund", 0.5),
        ("cancel", 1.0),
    ]


def test_a_ragas_table_with_a_query_id_column_carries_ids(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "query_id,user_input,faithfulness\nq1,refund,0.5\n")
    (row,) = read_evaluator_scores(path, "ragas", ["faithfulness"]).rows
    assert (row.query_id, row.text) == ("q1", "refund")


def test_deepeval_test_runs_and_evaluation_results_are_read(tmp_path: Path) -> None:
    test_run = {
        "testCases": [
            {
                "name": "test_case_0",
                "input": "refund",
                "actualOutput": "...",
                "metricsData": [
                    {"name": "Faithfulness", "threshold": 0.5, "success": True, "score": 0.9},
                    {"name": "Answer Relevancy", "threshold": 0.5, "success": False, "score": 0.2},
                ],
                "additionalMetadata": {"query_id": "q1"},
            },
            {"name": "turn", "input": "no metrics ran"},
        ]
    }
    path = write(tmp_path, "run.json", json.dumps(test_run))
    (row,) = read_evaluator_scores(path, "deepeval", ["faithfulness", "answer_relevancy"]).rows
    assert (row.query_id, row.text) == ("q1", "refund")
    assert dict(row.scores) == {"faithfulness": 0.9, "answer_relevancy": 0.2}
    result = {
        "test_results": [
            {"name": "t", "success": True, "input": "cancel", "metrics_data": [
                {"name": "Hallucination", "score": 0.1, "threshold": 0.5, "success": True,
                 "reason": "fine"}
            ]}
        ]
    }  # fmt: skip
    path = write(tmp_path, "result.json", json.dumps(result))
    (row,) = read_evaluator_scores(path, "deepeval", ["hallucination"]).rows
    assert (row.query_id, row.text, dict(row.scores)) == (None, "cancel", {"hallucination": 0.1})


def test_a_deepeval_metric_that_errored_is_an_error_naming_the_case(tmp_path: Path) -> None:
    case = {"input": "q", "metricsData": [{"name": "Faithfulness", "score": None,
            "error": "rate limited", "success": False, "threshold": 0.5}]}  # fmt: skip
    path = write(tmp_path, "run.json", json.dumps({"testCases": [case]}))
    with pytest.raises(InputError, match=r"testCases\[0\]: metric faithfulness has no score"):
        read_evaluator_scores(path, "deepeval", ["faithfulness"])


def test_a_deepeval_error_text_with_a_key_is_not_echoed(tmp_path: Path) -> None:
    secret = "sk-live-0123456789abcdef"
    error = f"Incorrect API key provided: {secret}\n::error::x"
    case = {"input": "q", "metricsData": [{"name": "Faithfulness", "score": None, "error": error}]}
    path = write(tmp_path, "run.json", json.dumps({"testCases": [case]}))
    with pytest.raises(InputError) as caught:
        read_evaluator_scores(path, "deepeval", ["faithfulness"])
    assert secret not in str(caught.value)
    assert "::error::" not in str(caught.value)


def test_promptfoo_results_give_named_scores_and_the_overall_score(tmp_path: Path) -> None:
    results = {
        "evalId": "eval-1",
        "results": {
            "version": 3,
            "results": [
                {
                    "provider": {"id": "openai:gpt-4o-mini"},
                    "vars": {"query_id": "q1", "query": "refund"},
                    "testCase": {"vars": {"query_id": "q1", "query": "refund"}},
                    "success": True,
                    "score": 0.8,
                    "namedScores": {"context-faithfulness": 0.7},
                    "gradingResult": {"componentResults": []},
                },
                {
                    "testCase": {"vars": {"question": "cancel"}},
                    "success": False,
                    "score": 0.4,
                    "namedScores": {},
                },
            ],
        },
    }
    path = write(tmp_path, "results.json", json.dumps(results))
    export = read_evaluator_scores(path, "promptfoo", ["context_faithfulness", "score"])
    assert [(r.query_id, r.text, dict(r.scores)) for r in export.rows] == [
        ("q1", "refund", {"context_faithfulness": 0.7, "score": 0.8}),
        (None, "cancel", {"score": 0.4}),
    ]


def test_the_plain_jsonl_reads_ids_texts_and_scores(tmp_path: Path) -> None:
    text = (
        '{"query_id": "q1", "scores": {"faithfulness": 0.5, "other": 3}}\n\n'
        '{"query": "cancel  it", "scores": {"faithfulness": 1}}\n'
    )
    export = read_evaluator_scores(write(tmp_path, "s.jsonl", text), "jsonl", ["faithfulness"])
    assert [(r.where, r.query_id, r.text, dict(r.scores)) for r in export.rows] == [
        ("line 1", "q1", None, {"faithfulness": 0.5}),
        ("line 3", None, "cancel it", {"faithfulness": 1.0}),
    ]


@pytest.mark.parametrize(
    ("name", "text", "form", "message"),
    [
        ("nan.csv", "user_input,faithfulness\nrefund,nan\n", "ragas",
         r"nan\.csv:2: row 1: score faithfulness 'nan' is NaN"),
        ("blank.csv", "user_input,faithfulness\nrefund,\n", "ragas",
         r"blank\.csv:2: row 1: score faithfulness '' is not a finite number"),
        ("word.jsonl", '{"query_id": "q", "scores": {"faithfulness": "high"}}\n', "jsonl",
         r"word\.jsonl:1: line 1: score faithfulness 'high' is not a finite number"),
        ("bool.jsonl", '{"query_id": "q", "scores": {"faithfulness": true}}\n', "jsonl",
         r"score faithfulness 'True' is not a finite number"),
        ("null.jsonl", '{"query_id": "q", "scores": {"faithfulness": null}}\n', "jsonl",
         r"score faithfulness 'None' is not a finite number"),
        ("empty.json", "", "deepeval", r"empty\.json: is empty"),
        ("empty.csv", "", "ragas", r"empty\.csv: no scored rows"),
        ("header.csv", "user_input,faithfulness\n", "ragas", r"no scored rows \(read as ragas\)"),
        ("noquery.csv", "answer,faithfulness\nx,0.5\n", "ragas", r"no query column"),
        ("ragged.csv", "user_input,faithfulness\nrefund,0.5,extra\n", "ragas",
         r"ragged\.csv:2: row 1 has 3 cells, the header 2"),
        ("list.json", "[1, 2]", "promptfoo", r"expected promptfoo results"),
        ("nocase.json", '{"cases": []}', "deepeval", r"no test cases: a DeepEval export has"),
        ("noid.jsonl", '{"scores": {"faithfulness": 1}}\n', "jsonl", r"no query_id or query"),
        ("twice.json", '{"testCases": [{"input": "q", "metricsData": [{"name": "F", "score": 1},'
         ' {"name": "F", "score": 0}]}]}', "deepeval", r"metric 'F' is given twice"),
        ("clash.jsonl", '{"query": "q", "scores": {"Faithfulness": 1, "faithfulness": 0}}\n',
         "jsonl", r"both read as faithfulness"),
        ("bad.json", '{"results": ', "promptfoo", r"bad\.json:1: invalid JSON"),
        ("latin.csv", b"user_input,faithfulness\n\xe9t\xe9,0.5\n", "ragas", r"not UTF-8"),
    ],
)  # fmt: skip
def test_a_bad_export_is_an_error_naming_file_row_and_field(
    tmp_path: Path, name: str, text: str | bytes, form: str, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(InputError, match=message):
        read_evaluator_scores(path, form, ["faithfulness"])


def test_deep_nesting_is_refused_quickly(tmp_path: Path) -> None:
    path = write(tmp_path, "deep.json", "[" * 200_000 + "]" * 200_000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_evaluator_scores(path, "deepeval", ["faithfulness"])
    line = '{"query": "q", "scores": ' + "[" * 200_000 + "]" * 200_000 + "}\n"
    with pytest.raises(InputError, match=r"deep\.jsonl:1: nested too deeply"):
        read_evaluator_scores(write(tmp_path, "deep.jsonl", line), "jsonl", ["faithfulness"])


def test_a_huge_export_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_rows, "MAX_EXPORT_BYTES", 1000)
    path = write(tmp_path, "big.csv", "user_input,faithfulness\n" + "refund,0.5\n" * 200)
    with pytest.raises(InputError, match=r"big\.csv: is over 0 MiB: not a per-query score"):
        read_evaluator_scores(path, "ragas", ["faithfulness"])


def test_a_huge_csv_field_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_rows, "MAX_FIELD_CHARS", 1000)
    monkeypatch.setattr("retrieval_gate.readers.evaluators.ragas.MAX_FIELD_CHARS", 1000)
    path = write(tmp_path, "wide.csv", f'user_input,faithfulness\n"{"x" * 5000}",0.5\n')
    with pytest.raises(InputError, match=r"wide\.csv:2: not CSV: field larger than field limit"):
        read_evaluator_scores(path, "ragas", ["faithfulness"])


def test_control_characters_in_names_and_texts_are_quoted_in_errors(tmp_path: Path) -> None:
    text = '{"query": "q\\u001b[31m", "scores": {"faithfulness": "::error::x\\u0007"}}\n'
    with pytest.raises(InputError) as caught:
        read_evaluator_scores(write(tmp_path, "c.jsonl", text), "jsonl", ["faithfulness"])
    message = str(caught.value)
    assert "\x07" not in message
    assert "\x1b" not in message
    assert "'::error::x\\x07'" in message  # quoted: the runner reads no command from a quote


@pytest.mark.parametrize(
    ("name", "text", "form"),
    [
        ("wide.csv", f"{'x' * 100_000},faithfulness\nrefund,0.5\n", "ragas"),
        ("keys.json", json.dumps({"x" * 100_000: []}), "deepeval"),
        ("twice.json", json.dumps({"testCases": [{"input": "q", "metricsData": [
            {"name": "F" * 100_000, "score": 1}, {"name": "F" * 100_000, "score": 0}]}]}),
         "deepeval"),
    ],
)  # fmt: skip
def test_a_huge_name_in_an_export_is_cut_in_the_error(
    tmp_path: Path, name: str, text: str, form: str
) -> None:
    with pytest.raises(InputError) as raised:
        read_evaluator_scores(write(tmp_path, name, text), form, ["faithfulness"])
    assert len(str(raised.value)) < 1000


def test_jsonl_scores_that_are_not_an_object_are_an_error_on_their_line(tmp_path: Path) -> None:
    path = write(tmp_path, "list.jsonl", '\n{"query_id": "q", "scores": [0.5]}\n')
    with pytest.raises(InputError, match=r"list\.jsonl:2: line 2: scores: expected") as raised:
        read_evaluator_scores(path, "jsonl", ["faithfulness"])
    assert (raised.value.source, raised.value.line) == (str(path), 2)


def test_a_query_id_that_is_not_an_id_is_an_error_showing_it_cut(tmp_path: Path) -> None:
    line = json.dumps({"query_id": list(range(100_000)), "scores": {"faithfulness": 1}})
    path = write(tmp_path, "id.jsonl", line + "\n")
    with pytest.raises(InputError, match=r"id\.jsonl:1: line 1: query_id \[0, 1, 2,") as raised:
        read_evaluator_scores(path, "jsonl", ["faithfulness"])
    assert len(str(raised.value)) < 200


def test_a_deepeval_error_names_the_metrics_list_as_the_export_spells_it(tmp_path: Path) -> None:
    text = json.dumps({"test_results": [{"input": "q", "metrics_data": [{"score": 1}]}]})
    path = write(tmp_path, "result.json", text)
    with pytest.raises(InputError, match=r"test_results\[0\]\.metrics_data\[0\]: a metric needs"):
        read_evaluator_scores(path, "deepeval", ["faithfulness"])


def test_a_score_past_any_real_one_is_refused_at_its_row(tmp_path: Path) -> None:
    # 1e160 in its own units: squared over the queries it overflowed the statistics.
    folder = copy_example(tmp_path / "configs")
    config = (CONFIGS / "example-evaluators.yaml").read_text(encoding="utf-8")
    config = config.replace("{max_drop: 3pt}", "{max_drop: 0.5stars}").replace(
        "    reference: example/ragas-baseline.csv\n",
        "    reference: example/ragas-baseline.csv\n    units: {faithfulness: stars}\n",
    )
    write(folder, "gate.yaml", config)
    export = folder / "example" / "ragas-current.csv"
    header, first, *rest = export.read_text(encoding="utf-8").splitlines(keepends=True)
    assert header.rstrip().endswith(",faithfulness")
    export.write_text(header + first.rsplit(",", 1)[0] + ",1e160\n" + "".join(rest))
    code, _, err = run_cli("check", "-c", folder / "gate.yaml", "--no-reports")
    assert code == 2, err
    assert (
        f"{export}:2: row 1: score faithfulness '1e160' is past 1e+15 either way, which no "
        "evaluator's score is"
    ) in err
