"""`history list/show/export/drift` and `load_trend`: hostile records stay inert everywhere."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.history import BranchSource, TrendPoint, load_trend
from retrieval_gate.history.record import ResultEntry, accept_entry, entry_line
from tests.helpers.builders import copy_example
from tests.helpers.cli import run_cli
from tests.helpers.git import git
from tests.helpers.history import check_result, commits, entry_at, make_repo

HOSTILE_REF = "\x1b[31mred\x1b[0m\n::error::from the ref"
HOSTILE_SUBJECT = "::error title=x::pwned\r\n##[error]old syntax\x07"
HOSTILE_STATUS = "\x9b31m\n  ::warning::status"
HOSTILE_REASON = "\x1b]0;title\x07\n::add-mask::reason"
HOSTILE_SLICE = "intent=\x1b[2J\n::error::slice"
HOSTILE_METRIC = "::set-output name=x::y"
# What a CI log or terminal must never receive from a record.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def assert_inert(text: str) -> None:
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    for line in text.split("\n"):
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A history file of three records of configs/tiny, the last one hostile in every text
    field, and an acceptance with a hostile reason; the checkout; the commits."""
    work, _ = make_repo(tmp_path)
    document = check_result(work, tmp_path / "result.json")
    shas = commits(work, 3)
    entries = [entry_at(document, work, sha, tmp_path / f"{sha}.json") for sha in shas]
    last = entries[-1]
    entries[-1] = dataclasses.replace(
        last,
        ref=HOSTILE_REF,
        subject=HOSTILE_SUBJECT + "x" * 5_000_000,  # a huge line
        status=HOSTILE_STATUS,
        means={**last.means, HOSTILE_METRIC: 0.5},
        slices={**last.slices, HOSTILE_SLICE: {"ndcg@10": 0.5}},
    )
    lines = [entry_line(entry) for entry in entries]
    lines.append(entry_line(accept_entry("tiny", shas[-1], "2026-01-01T00:00:00Z", HOSTILE_REASON)))
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, work, shas


def test_list_show_and_export_keep_hostile_text_inert(
    history: tuple[Path, Path, list[str]],
) -> None:
    path, _, shas = history
    outputs = []
    for argv in (
        ["list"],
        ["show", shas[-1]],
        ["export", "--format", "json"],
        ["export", "--format", "csv"],
    ):
        code, out, err = run_cli("history", *argv, "--from", str(path))
        assert code == 0, err
        assert_inert(out + err)
        outputs.append(out)
    listing, shown, exported, table = outputs
    assert max(len(line) for line in listing.splitlines()) < 500
    assert max(len(line) for line in shown.splitlines()) < 500
    assert "accepted: ?]0;title? ::add-mask::reason" in listing
    assert "?[31mred?[0m ::error::from the ref" in shown
    # JSON keeps the data (escaped); the hostile text is there, as data.
    items = json.loads(exported)
    assert items[2]["ref"] == HOSTILE_REF
    assert items[3]["reason"] == HOSTILE_REASON
    rows = list(csv.DictReader(io.StringIO(table)))
    assert {row["slice"] for row in rows} >= {"all", "intent=?[2J ::error::slice"}
    assert all("\n" not in value for row in rows for value in row.values())


def test_a_formula_in_a_record_is_not_a_formula_in_the_csv(
    history: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    path, _, _ = history
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    first["ref"] = '=HYPERLINK("http://x")'
    first["time"] = '@SUM(1+1)*cmd|"/C calc"!A0'
    target = tmp_path / "formula.jsonl"
    target.write_text(json.dumps(first) + "\n", encoding="utf-8")
    code, out, _ = run_cli("history", "export", "--format", "csv", "--from", str(target))
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {row["ref"] for row in rows} == {'\'=HYPERLINK("http://x")'}
    assert {row["time"] for row in rows} == {'\'@SUM(1+1)*cmd|"/C calc"!A0'}


def test_drift_output_keeps_an_accepted_reason_inert(
    history: tuple[Path, Path, list[str]],
) -> None:
    path, work, _ = history
    config = work / "retrieval-gate.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "  drift: {max_drop: 3pt}\n", encoding="utf-8"
    )
    code, out, err = run_cli("history", "drift", "-c", str(config), "--from", str(path))
    assert code == 0, err
    assert_inert(out + err)
    assert "by an acceptance: ?]0;title?" in out


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ("[" * 200_000 + "]" * 200_000, "not valid JSON (nested too deeply)"),
        ('{"history_schema": 1, "kind": "result", "config": {"a": {"b": ["::error::x"]}}}',
         "config: {'a': {'b': ['::error::x']}}; expected a string"),
        ('{"history_schema": 1, "kind": "\\u001b[31m::error::k", "config": "tiny", "commit": "'
         + "a" * 40 + '", "time": "t"}', "kind: '\\x1b[31m::error::k'; a history line is"),
        ("\x1b[31m::error::not json", "not valid JSON"),
        ('{"history_schema": true}', "history_schema: True is not a history schema version"),
    ],
    ids=["deeply-nested", "nested-field", "hostile-kind", "raw-escape", "boolean-version"],
)  # fmt: skip
def test_hostile_lines_are_named_errors(tmp_path: Path, line: str, complaint: str) -> None:
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n" + line + "\n", encoding="utf-8")
    code, out, err = run_cli("history", "list", "--from", str(path))
    assert code == 2
    assert f"{path}:2: " in err
    assert complaint in err
    assert_inert(out + err)
    assert len(err) < 2000


def test_load_trend_returns_the_last_points_of_a_metric(
    history: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    path, work, shas = history
    points = load_trend(path, "tiny", "NDCG@10", 2)
    assert [point.commit for point in points] == shas[1:]
    assert all(isinstance(point, TrendPoint) for point in points)
    assert [point.pr for point in points] == [101, 102]
    assert points[0].value == pytest.approx(0.9392, abs=1e-4)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", points[0].time)
    assert load_trend(path, "tiny", "ndcg@10", 0) == []
    assert load_trend(path, "other", "ndcg@10", 5) == []
    assert load_trend(path.parent, "tiny", "recall@10", 10)[0].commit == shas[0]
    # From a branch: what a pull request's job fetched as origin/BRANCH.
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    result = tmp_path / "again.json"
    document: dict[str, Any] = json.loads((tmp_path / "result.json").read_text("utf-8"))
    document["current"]["git_commit"] = first["commit"]
    result.write_text(json.dumps(document), encoding="utf-8")
    code, _, err = run_cli("history", "append", "--result", str(result), "--repo", str(work),
                           "--push")  # fmt: skip
    assert code == 0, err
    reader = make_reader(tmp_path, work)
    trend = load_trend(BranchSource(repo=reader), "tiny", "ndcg@10", 10)
    assert [point.commit for point in trend] == [first["commit"]]


def make_reader(tmp_path: Path, work: Path) -> Path:
    """A pull request's checkout: a fresh clone that fetched the history branch read-only."""
    reader = tmp_path / "reader"
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), str(reader))
    branch = "retrieval-gate-history"
    git(reader, "fetch", "-q", "origin", f"+refs/heads/{branch}:refs/remotes/origin/{branch}")
    assert git(reader, "branch", "--list", branch) == ""
    return reader


def test_show_finds_a_commit_by_what_git_calls_it(
    history: tuple[Path, Path, list[str]],
) -> None:
    path, work, shas = history
    code, out, _ = run_cli("history", "show", "HEAD~1", "--from", str(path), "--repo", str(work))
    assert code == 0
    assert out.startswith(f"result tiny {shas[1]} (line 2)")
    code, _, err = run_cli("history", "show", "0000000", "--from", str(path))
    assert code == 2
    assert "no record of commit '0000000'" in err


def test_entries_round_trip(history: tuple[Path, Path, list[str]]) -> None:
    from retrieval_gate.history.store import read_history

    path, _, _ = history
    entries = read_history(path)
    again = [entry_line(entry) for entry in entries]
    assert again == path.read_text(encoding="utf-8").splitlines()
    assert isinstance(entries[0], ResultEntry)


@pytest.mark.parametrize("action", ["list", "show", "export"])
def test_a_folder_that_is_no_git_checkout_is_named_not_the_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    # --repo /nonexistent blamed the branch's name; outside any repository, `list` printed
    # "no records" and exited 0.
    extra = ["HEAD"] if action == "show" else []
    missing = tmp_path / "nonexistent"
    code, out, err = run_cli("history", action, "--repo", str(missing), *extra)
    assert code == 2
    assert f"--repo {missing}: no such folder" in err
    assert "branch" not in err.split("error:", 1)[1].split(";")[0]
    monkeypatch.chdir(tmp_path)  # a folder in no git repository
    code, out, err = run_cli("history", action, *extra)
    assert code == 2
    assert "this folder is not in a git repository" in err
    assert out == ""


def test_drift_from_a_file_outside_a_checkout_says_the_commits_need_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`history drift --from FILE` reads the records from the file but looks their commits up
    in a checkout: outside one it said "or read a file with --from", which was given."""
    config = copy_example(tmp_path / "configs") / "example.yaml"
    text = config.read_text(encoding="utf-8")
    assert "\ngate:" not in text
    config.write_text(text + "gate:\n  drift: {reference: v1, max_drop: 3pt}\n", encoding="utf-8")
    records = tmp_path / "history.jsonl"
    records.write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # a folder in no git repository
    code, _, err = run_cli("history", "drift", "-c", config, "--from", records)
    assert code == 2, err
    assert "--from reads the records, but their commits are looked up in the checkout" in err
    assert "or read a file with --from" not in err
