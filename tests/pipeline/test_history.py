"""A pull request's check shows main's trend and names a drift of main, read from the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.drifting_main import BUDGET, STEPS, Main


def test_the_next_pull_request_shows_the_trend_and_names_the_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = Main(tmp_path, f"reference: v1, max_drop: {BUDGET:g}pt")
    main.record()
    broken = 0
    for step, count in enumerate(STEPS[:4], 1):
        broken += count
        main.merge(100 + step, broken)
        main.record()
    # The next pull request, in the clone whose history branch the Action fetched.
    monkeypatch.setenv("RETRIEVAL_GATE_HISTORY_BRANCH", "retrieval-gate-history")
    report, result = tmp_path / "report.md", tmp_path / "pr.json"
    code, out, err = run_cli(
        "check", "-c", str(main.config), "--quiet", "--no-cache", "--no-reports",
        "--markdown", str(report), "--json", str(result),
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(result.read_text(encoding="utf-8"))
    series = {s["metric"]: s["points"] for s in document["trend"]["series"]}
    assert len(series["ndcg@10"]) == 5  # v1 and the four merges, oldest first
    assert [p["pr"] for p in series["ndcg@10"]] == [None, 101, 102, 103, 104]
    values = [p["value"] for p in series["ndcg@10"]]
    assert values == sorted(values, reverse=True)  # each merge lost a little
    markdown = report.read_text(encoding="utf-8")
    assert "main moved within" in markdown
    assert "trend on main" in out
    drift = [w for w in document["warnings"] if w.startswith("main's drift: ")]
    assert drift, document["warnings"]
    assert drift[0] == (
        "main's drift: bar: e-value >= gate.drift.horizon 50 / the check's share of gate.alpha "
        "0.05 (without a change, at most 0.05 of histories trip within 50 merges)"
    )
    assert "ndcg@10 is 5.5 pt below v1 over 4 merges: #101 -1.3, #102 -1.5, #103 -1.3" in drift[1]
    # Markdown-escaped, as every warning: the PR numbers do not turn into links or mentions.
    assert "main&#39;s drift: ndcg@10 is 5.5 pt below v1 over 4 merges: #&#8203;101" in markdown


def test_without_a_history_nothing_is_shown_and_a_named_one_must_exist(tmp_path: Path) -> None:
    main = Main(tmp_path, f"max_drop: {BUDGET:g}pt")
    main.refresh()
    result = tmp_path / "pr.json"
    args = ("check", "-c", str(main.config), "--quiet", "--no-reports", "--json", str(result))
    code, _, err = run_cli(*args)
    assert code == 0, err
    assert "trend" not in json.loads(result.read_text(encoding="utf-8"))
    code, _, err = run_cli(*args, "--history", str(tmp_path / "nowhere.jsonl"))
    assert code == 2
    assert "nowhere.jsonl: no such file" in err
    code, _, err = run_cli(*args, "--history", "no-such-branch")
    assert code == 0, err  # a branch the repository does not have holds no history yet
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"history_schema": 1, "kind": "result"\n', encoding="utf-8")
    code, _, err = run_cli(*args, "--history", str(broken))
    assert code == 2
    assert "broken.jsonl:1" in err


def test_a_hostile_history_name_is_refused_inertly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = Main(tmp_path, f"max_drop: {BUDGET:g}pt")
    main.refresh()
    hostile = "x\n::error::owned\x1b[31m"
    args = ("check", "-c", str(main.config), "--quiet", "--no-reports")
    for how in ("option", "environment"):
        if how == "option":
            code, out, err = run_cli(*args, "--history", hostile)
        else:
            monkeypatch.setenv("RETRIEVAL_GATE_HISTORY_BRANCH", hostile)
            code, out, err = run_cli(*args)
        assert code == 2, how
        assert "the history branch 'x\\n::error::owned\\x1b[31m' is not a valid" in err
        for stream in (out, err):
            assert "\x1b" not in stream
            assert not any(line.startswith("::") for line in stream.splitlines())
