"""check --sequential on the bundled example: a worse retriever stops early, the same one never."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from retrieval_gate.gate.modes.sequential import draw_order
from retrieval_gate.pipeline.check import check
from retrieval_gate.report import read_result, render, summary_of
from tests.helpers.builders import copy_example
from tests.helpers.cli import run_cli

QUERIES = 131


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_example(tmp_path_factory.mktemp("sequential") / "configs")


def _check(config: Path, *extra: str) -> tuple[int, str, str, dict]:  # type: ignore[type-arg]
    result = config.parent / f"{config.stem}-{len(extra)}.json"
    code, out, err = run_cli("check", "-c", config, "--quiet", "--json", result, *extra)
    return code, out, err, json.loads(result.read_text(encoding="utf-8"))


def test_a_worse_retriever_stops_early_with_fail(example: Path) -> None:
    code, out, err, document = _check(example / "example-regressed.yaml", "--sequential")
    assert code == 1, err
    sequential = document["sequential"]
    assert sequential["stopped"] is True
    run = sequential["queries_run"]
    assert run == 48  # docs/gate.md quotes it
    assert sequential["queries_total"] == QUERIES
    assert run % 8 == 0  # whole batches of the retriever's concurrency (8)
    assert sequential["looks"] == run // 8
    stopped = sequential["stopped_by"]
    assert stopped
    assert all(s["t"] >= s["bound"] for s in stopped)
    # The checks shown are on the queries run, and those the early fail stopped on failed.
    assert all(c["n"] <= run for c in document["comparisons"])
    overall = next(c for c in document["comparisons"] if c["slice"] == "all")
    assert overall["n"] == run
    failed = {(c["metric"], c["slice"]) for c in document["failures"]}
    assert {(s["metric"], s["slice"]) for s in stopped} <= failed
    line = f"stopped early after {run} of {QUERIES} queries"
    assert line in out
    assert sequential["note"] == (  # docs/gate.md quotes it
        "stopped early after 48 of 131 queries: recall@10 overall dropped past 7pt over the "
        "labelled set (t 4.11 >= 3.19); the checks below are on the 48 queries run"
    )
    assert document["current"]["query_ids"] == sorted(document["current"]["query_ids"])
    assert len(document["current"]["query_ids"]) == run


def test_the_same_retriever_never_stops_and_decides_as_check(example: Path) -> None:
    config = example / "example.yaml"
    sequential = check(config, sequential=True, progress=None)
    whole = check(config, progress=None)
    assert sequential.sequential is not None
    assert not sequential.sequential.stopped
    assert sequential.sequential.queries_run == QUERIES
    assert sequential.sequential.looks == -(-QUERIES // 8)
    assert sequential.status == whole.status == "pass"
    document, checked = sequential.document(), whole.document()
    note = document.pop("sequential")["note"]
    # The one difference: check probed the retriever's noise, the early fail does not.
    assert document.pop("noise")["unprobed"] == (
        "gate.sequential runs the queries once: the noise was not probed"
    )
    assert "probe" in checked.pop("noise")
    assert document == checked
    assert note.startswith("looked 17 times, every 8 queries, and did not stop")


def test_the_order_and_the_result_follow_the_seed(example: Path) -> None:
    assert draw_order(QUERIES, 0).tolist() == draw_order(QUERIES, 0).tolist()
    assert draw_order(QUERIES, 0).tolist() != draw_order(QUERIES, 1).tolist()
    assert sorted(draw_order(QUERIES, 5).tolist()) == list(range(QUERIES))
    config = example / "example-regressed.yaml"
    first = check(config, sequential=True).to_json()
    assert check(config, sequential=True).to_json() == first


def _with_gate(example: Path, name: str, gate: dict) -> Path:  # type: ignore[type-arg]
    document = yaml.safe_load((example / "example-regressed.yaml").read_text(encoding="utf-8"))
    document["gate"] = gate
    path = example / name
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def test_the_config_block_sets_the_batch(example: Path) -> None:
    config = _with_gate(example, "batch5.yaml", {"sequential": {"batch": 5}})
    result = check(config)
    assert result.sequential is not None
    assert result.sequential.batch == 5
    assert result.sequential.queries_run % 5 == 0
    assert result.sequential.stopped


@pytest.mark.parametrize(
    ("gate", "field"),
    [
        ({"sequential": {"batch": 0}}, "gate.sequential.batch"),
        ({"sequential": {"alpha_share": 0}}, "gate.sequential.alpha_share"),
        ({"sequential": {"alpha_share": 1.5}}, "gate.sequential.alpha_share"),
        ({"sequential": {"batches": 5}}, "gate.sequential.batches"),
        ({"sequential": "yes"}, "gate.sequential"),
    ],
)
def test_bad_values_are_exit_2_naming_the_field(
    example: Path,
    gate: dict,  # type: ignore[type-arg]
    field: str,
) -> None:
    config = _with_gate(example, "bad.yaml", gate)
    code, _, err = run_cli("check", "-c", config, "--quiet", "--no-reports")
    assert code == 2
    assert field in err


def test_what_sequential_cannot_do_is_refused_before_any_call(example: Path) -> None:
    config = example / "example-regressed.yaml"
    code, _, err = run_cli(
        "check", "-c", config, "--sequential", "--against", "main", "--quiet", "--no-reports"
    )
    assert code == 2
    assert "--against" in err
    assert "gate.sequential" in err
    code, _, err = run_cli(
        "check", "-c", config, "--sequential", "--repeats", "2", "--quiet", "--no-reports"
    )
    assert code == 2
    assert "gate.repeats" in err


def test_a_saved_run_is_read_whole(example: Path, tmp_path: Path) -> None:
    from retrieval_gate.execution.runner import save_trec
    from retrieval_gate.pipeline.execute import execute

    run = tmp_path / "run.trec"
    save_trec(execute(example / "example-regressed.yaml", cache=False).run, run, "worse")
    result = check(example / "example-regressed.yaml", run_path=run, sequential=True)
    assert result.sequential is None
    assert result.status == "fail"
    assert any("a saved run is read whole" in warning for warning in result.warnings)


HOSTILE = "::error::pwned\n<script>alert(1)</script>\x1b[31m|x|"


def test_a_hostile_note_reaches_no_sink_raw(example: Path) -> None:
    _code, _, _, document = _check(example / "example-regressed.yaml", "--sequential")
    document["sequential"]["note"] = HOSTILE
    path = example / "hostile.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    record = read_result(path)
    terminal, markdown, html = (
        summary_of(record),
        render(record, "markdown"),
        render(record, "html"),
    )
    for text in (terminal, markdown, html):  # one line, no escape sequence, no workflow command
        assert "\x1b" not in text
        assert not any(line.startswith("::") for line in text.splitlines())
    for text in (markdown, html):  # markup stays text
        assert "<script>" not in text


def test_the_history_refuses_a_result_that_stopped_early(example: Path) -> None:
    from retrieval_gate.errors import InputError
    from retrieval_gate.history.record import result_entry

    _, _, _, document = _check(example / "example-regressed.yaml", "--sequential")
    with pytest.raises(InputError, match="stopped early after"):
        result_entry(document, "result.json", commit="0" * 40, time="", ref="", subject="")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers.generated_project import make_project

    root = make_project(tmp_path_factory.mktemp("generated"))
    (root / "down_search.py").write_text(
        "def search(query, k, metadata):\n    raise ValueError('the service is down')\n"
    )
    return root


def test_a_retriever_past_its_error_budget_stops_as_an_error(generated: Path) -> None:
    from tests.helpers.generated_project import write_config

    config = write_config(generated, "down_search", name="down.yaml")
    code, _, err = run_cli("check", "-c", config, "--sequential", "--quiet", "--no-reports")
    assert code == 2  # a broken retriever is an error, never a regression
    assert "failed" in err
    assert "8 of 240 queries failed" in err  # the first batch; the budget allows 2


def test_a_drop_confined_to_a_slice_stops_on_that_slice(generated: Path) -> None:
    from tests.helpers.generated_project import write_config

    config = write_config(generated, "worse_search", name="worse.yaml")
    result = check(config, sequential=True)
    assert result.sequential is not None
    assert result.sequential.stopped
    assert result.sequential.queries_run < 240
    assert {c.slice for c in result.sequential.stopped_by} & {"all", "intent=billing"}
    assert result.exit_code == 1


def test_compare_refuses_a_result_that_stopped_early(example: Path) -> None:
    config = example / "example-regressed.yaml"
    result = config.parent / "stopped.json"
    code, _, err = run_cli("check", "-c", config, "--quiet", "--json", result, "--sequential")
    assert code == 1, err
    baseline = example / ".retrieval-gate" / "example" / "baseline.json"
    assert baseline.is_file()
    code, _, err = run_cli("compare", "-c", config, "--no-reports", baseline, result)
    assert code == 2
    assert "sequential: the check stopped early after 48 of 131 queries" in err
    assert "use a result of `check` without --sequential" in err


def test_no_sequential_runs_every_query_whatever_the_config_says(example: Path) -> None:
    text = (example / "example-regressed.yaml").read_text(encoding="utf-8")
    config = example / "regressed-sequential.yaml"
    config.write_text(text + "\ngate: {sequential: true}\n", encoding="utf-8")
    code, _, err, document = _check(config)
    assert code == 1, err
    assert document["sequential"]["queries_run"] == 48
    code, _, err, document = _check(config, "--no-sequential")
    assert code == 1, err
    assert "sequential" not in document or document["sequential"] is None
    assert all(c["n"] == QUERIES for c in document["comparisons"] if c["slice"] == "all")
