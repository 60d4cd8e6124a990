"""The history branch: appends with plumbing to a real bare remote, races, duplicates, bad lines."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from retrieval_gate.errors import GateError, InputError
from retrieval_gate.history import store
from retrieval_gate.history.record import (
    HISTORY_SCHEMA_VERSION,
    ResultEntry,
    accept_entry,
    entry_line,
    pr_number,
)
from retrieval_gate.history.store import BranchSource, append, read_history
from tests.helpers.cli import run_cli
from tests.helpers.git import git
from tests.helpers.history import (
    BRANCH,
    check_result,
    commits,
    entry_at,
    make_repo,
    result_at,
)


def clone(remote: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True)
    return dest


def remote_lines(remote: Path, name: str = "tiny") -> list[dict[str, Any]]:
    text = git(remote, "show", f"{BRANCH}:{name}.jsonl")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def snapshot(work: Path) -> tuple[str, str, str, str]:
    """What a user sees of their checkout: status, HEAD, the index and the branch checked out."""
    return (
        git(work, "status", "--porcelain", "--untracked-files=all"),
        git(work, "rev-parse", "HEAD"),
        git(work, "ls-files", "-s"),
        git(work, "symbolic-ref", "HEAD"),
    )


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    work, remote = make_repo(tmp_path)
    return work, remote, check_result(work, tmp_path / "result.json")


def test_pr_numbers_come_from_merge_and_squash_subjects() -> None:
    assert pr_number("Merge pull request #41 from octo/fix\n\nbody") == 41
    assert pr_number("Faster reranker (#44)") == 44
    assert pr_number("Faster reranker (#44)\n\nsee (#45)") == 44
    assert pr_number("Fix #44 in the reranker") is None
    assert pr_number("") is None


def test_append_pushes_one_line_and_leaves_the_checkout_alone(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, remote, document = world
    head = git(work, "rev-parse", "HEAD").strip()
    (work / "untracked.txt").write_text("mine\n", encoding="utf-8")
    git(work, "add", "untracked.txt")  # staged, not committed: the index must keep it
    before = snapshot(work)
    path = result_at(document, head, tmp_path / "r.json")
    code, out, err = run_cli(
        "history", "append", "--result", str(path), "--repo", str(work), "--push"
    )
    assert code == 0, err
    assert "appended tiny" in out
    assert snapshot(work) == before
    lines = remote_lines(remote)
    assert len(lines) == 1
    line = lines[0]
    assert line["history_schema"] == HISTORY_SCHEMA_VERSION
    assert (line["kind"], line["config"], line["commit"], line["pr"]) == ("result", "tiny", head, 1)
    stamp = int(git(work, "show", "-s", "--format=%ct", head).strip())
    assert line["time"] == datetime.fromtimestamp(stamp, timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert line["ref"] == "refs/heads/main"
    assert set(line["fingerprints"]) == {"labelled_set", "queries", "config"}
    assert set(line["means"]) == {"ndcg@10", "recall@10", "rr@10", "ap@10"}
    assert "intent=billing" in line["slices"]
    assert line["record"]["query_ids"] == document["current"]["query_ids"]
    assert line["record"]["top_k"] == document["current"]["top_k"]
    # The local branch follows the remote; the history commit has only the history file.
    tip = git(work, "rev-parse", BRANCH).strip()
    assert tip == git(remote, "rev-parse", BRANCH).strip()
    assert git(work, "ls-tree", "--name-only", tip).split() == ["tiny.jsonl"]


def test_a_record_is_appended_once(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, remote, document = world
    head = git(work, "rev-parse", "HEAD").strip()
    path = result_at(document, head, tmp_path / "r.json")
    argv = ["history", "append", "--result", str(path), "--repo", str(work), "--push"]
    assert run_cli(*argv)[0] == 0
    tip = git(remote, "rev-parse", BRANCH)
    code, out, _ = run_cli(*argv)
    assert code == 0
    assert "already in" in out
    assert git(remote, "rev-parse", BRANCH) == tip
    assert len(remote_lines(remote)) == 1


def test_a_record_already_pushed_moves_a_clone_s_branch_to_the_remote_s(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, remote, document = world
    head = git(work, "rev-parse", "HEAD").strip()
    path = result_at(document, head, tmp_path / "r.json")
    assert (
        run_cli("history", "append", "--result", str(path), "--repo", str(work), "--push")[0] == 0
    )
    # A fresh clone has no local history branch: the record is not pushed twice, and the
    # branch follows the remote's, so that the clone reads the record it was told is there.
    other = clone(remote, tmp_path / "other")
    code, out, err = run_cli(
        "history", "append", "--result", str(path), "--repo", str(other), "--push"
    )
    assert (code, "already in" in out) == (0, True), err
    assert git(other, "rev-parse", BRANCH) == git(remote, "rev-parse", BRANCH)
    assert [e.commit for e in read_history(BranchSource(repo=other), "tiny")] == [head]


def test_append_without_push_moves_the_local_branch_only(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, remote, document = world
    first, second = commits(work, 2)
    for sha in (first, second):
        path = result_at(document, sha, tmp_path / f"{sha}.json")
        code, out, err = run_cli("history", "append", "--result", str(path), "--repo", str(work))
        assert code == 0, err
        # Said as done, at the first attempt: nobody else moved the branch.
        tip = git(work, "rev-parse", BRANCH).strip()
        assert out.startswith("appended tiny "), out
        assert out.rstrip().endswith(f" to {BRANCH} ({tip[:12]})"), out
    entries = read_history(BranchSource(repo=work), "tiny")
    assert [e.commit for e in entries] == [first, second]
    assert [e.pr for e in entries if isinstance(e, ResultEntry)] == [100, 101]
    no_branch = subprocess.run(
        ["git", "-C", str(remote), "rev-parse", "--verify", "--quiet", BRANCH],
        capture_output=True,
        check=False,
    )
    assert no_branch.returncode != 0
    # A later --push carries the local records along: they are on the branch it pushes.
    third = commits(work, 1)[0]
    path = result_at(document, third, tmp_path / "third.json")
    run_cli("history", "append", "--result", str(path), "--repo", str(work), "--push")
    assert [line["commit"] for line in remote_lines(remote)] == [third]
    # The local branch kept its two records the remote never had: nothing was dropped.
    assert [e.commit for e in read_history(BranchSource(repo=work), "tiny")] == [first, second]


def test_a_history_file_without_a_final_newline_gets_one_before_the_next_line(
    tmp_path: Path,
) -> None:
    work, _ = make_repo(tmp_path)
    first, second = commits(work, 2)
    one = accept_entry("tiny", first, "2026-01-02T00:00:00Z", "a faster index")
    append(work, one, entry_line(one))
    # Edited by hand (or by an editor that drops it): the last line lacks its newline.
    cut = store._commit(work, None, "tiny.jsonl", entry_line(one), "edited")
    git(work, "update-ref", f"refs/heads/{BRANCH}", cut)
    two = accept_entry("tiny", second, "2026-01-03T00:00:00Z", "a smaller index")
    append(work, two, entry_line(two))
    text = git(work, "show", f"{BRANCH}:tiny.jsonl")
    assert text == entry_line(one) + "\n" + entry_line(two) + "\n"
    assert [e.commit for e in read_history(BranchSource(repo=work), "tiny")] == [first, second]


def test_a_lost_race_re_appends_onto_the_new_tip(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, remote, document = world
    mine, theirs = commits(work, 2)
    other = clone(remote, tmp_path / "other")
    their_entry = entry_at(document, other, theirs, tmp_path / "theirs.json")
    my_entry = entry_at(document, work, mine, tmp_path / "mine.json")
    real_commit = store._commit
    calls = []

    def commit_then_lose_the_race(*args: Any) -> str:
        made = real_commit(*args)
        calls.append(made)
        if len(calls) == 1:  # another job pushes between our fetch and our push
            monkeypatch.setattr(store, "_commit", real_commit)
            append(other, their_entry, entry_line(their_entry), push=True)
            monkeypatch.setattr(store, "_commit", commit_then_lose_the_race)
        return made

    monkeypatch.setattr(store, "_commit", commit_then_lose_the_race)
    done = append(work, my_entry, entry_line(my_entry), push=True)
    assert done.appended
    assert done.attempts == 2
    assert [line["commit"] for line in remote_lines(remote)] == [theirs, mine]


RACER = """\
import sys, time
from pathlib import Path
from retrieval_gate.cli.main import main

go, repo, *results = sys.argv[1:]
while not Path(go).exists():
    time.sleep(0.005)
codes = [main(["history", "append", "--result", r, "--repo", repo, "--push"]) for r in results]
sys.exit(max(codes))
"""


def test_two_jobs_racing_lose_and_duplicate_nothing(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, remote, document = world
    shas = commits(work, 8)
    jobs = [clone(remote, tmp_path / "job_a"), clone(remote, tmp_path / "job_b")]
    # Each job appends four commits' records; both append the first one (a re-run job).
    shares = [shas[:4], [shas[0], *shas[4:]]]
    script = tmp_path / "racer.py"
    script.write_text(RACER, encoding="utf-8")
    go = tmp_path / "go"
    processes = []
    for job, share in zip(jobs, shares, strict=True):
        results = [str(result_at(document, sha, tmp_path / f"{job.name}-{sha}.json"))
                   for sha in share]  # fmt: skip
        processes.append(
            subprocess.Popen(
                [sys.executable, str(script), str(go), str(job), *results],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    go.write_text("", encoding="utf-8")
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, out + err
        outputs.append(out)
    print("".join(outputs))  # how often a job lost the race, for -s
    appended = [line["commit"] for line in remote_lines(remote)]
    assert sorted(appended) == sorted(shas)
    # Both jobs' branches agree with the remote, and `history list` reads every record.
    git(work, "fetch", "-q", "origin", f"+{BRANCH}:refs/remotes/origin/{BRANCH}")
    code, out, err = run_cli("history", "list", "--repo", str(work))
    assert code == 0, err
    listed = [line.split()[1] for line in out.splitlines()[1:]]
    assert sorted(listed) == sorted(sha[:12] for sha in shas)


def test_a_push_refused_for_another_reason_is_an_error_at_once(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, remote, document = world
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are frozen' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    head = git(work, "rev-parse", "HEAD").strip()
    path = result_at(document, head, tmp_path / "r.json")
    code, _, err = run_cli(
        "history", "append", "--result", str(path), "--repo", str(work), "--push"
    )
    assert code == 2
    assert "cannot push the history branch" in err
    assert "pushes are frozen" in err


def test_a_push_that_hangs_is_given_up_after_a_minute_and_says_so(
    world: tuple[Path, Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, remote, _ = world
    real_run = subprocess.run
    bounds: list[float] = []

    def hang_on_push(command: list[str], **options: Any) -> Any:
        if "push" in command:
            # What subprocess.run raises when a git stays silent past its timeout.
            bounds.append(options["timeout"])
            raise subprocess.TimeoutExpired(command, options["timeout"])
        return real_run(command, **options)

    monkeypatch.setattr(subprocess, "run", hang_on_push)
    sha = git(work, "rev-parse", "HEAD").strip()
    accepted = accept_entry("tiny", sha, "2026-01-02T00:00:00Z", "a faster index")
    with pytest.raises(GateError) as raised:
        append(work, accepted, entry_line(accepted), push=True)
    # A network call gets a minute, once: a hang is no lost race to retry.
    assert bounds == [60.0]
    message = str(raised.value)
    assert message.startswith(f"cannot push the history branch {BRANCH} to origin: Command ")
    assert message.endswith("timed out after 60.0 seconds")
    assert git(remote, "branch", "--list", BRANCH).strip() == ""  # nothing was pushed


def test_an_unknown_remote_and_a_bad_branch_name_are_usage_errors(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, _, document = world
    path = result_at(document, git(work, "rev-parse", "HEAD").strip(), tmp_path / "r.json")
    base = ["history", "append", "--result", str(path), "--repo", str(work)]
    code, _, err = run_cli(*base, "--push", "--remote", "upstream")
    assert code == 2
    assert "'upstream' is not a remote" in err
    code, _, err = run_cli(*base, "--branch", "bad..name")
    assert code == 2
    assert "not a valid git branch name" in err


def test_a_result_of_a_dirty_tree_or_an_unknown_commit_is_refused(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, _, document = world
    dirty = json.loads(json.dumps(document))
    dirty["current"]["git_dirty"] = True
    path = tmp_path / "dirty.json"
    path.write_text(json.dumps(dirty), encoding="utf-8")
    code, _, err = run_cli("history", "append", "--result", str(path), "--repo", str(work))
    assert code == 2
    assert "uncommitted changes" in err
    path = result_at(document, "f" * 40, tmp_path / "unknown.json")
    code, _, err = run_cli("history", "append", "--result", str(path), "--repo", str(work))
    assert code == 2
    assert "is not in the repository" in err


@pytest.mark.parametrize("commit", ["--output=written", "-o", "--format=%H"])
def test_a_commit_that_reads_as_a_git_option_is_refused_and_runs_nothing(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path, commit: str
) -> None:
    work, _, document = world
    before = sorted(p.name for p in work.iterdir())
    path = result_at(document, commit, tmp_path / "option.json")
    code, out, err = run_cli("history", "append", "--result", str(path), "--repo", str(work))
    assert (code, out) == (2, "")
    assert f"commit {commit!r} is not in the repository at {work}" in err
    # git show --output=FILE would have written FILE^{commit} into the checkout.
    assert sorted(p.name for p in work.iterdir()) == before


def test_a_corrupted_history_names_its_line_and_is_not_appended_to(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, _, document = world
    first, second = commits(work, 2)
    path = result_at(document, first, tmp_path / "first.json")
    assert run_cli("history", "append", "--result", str(path), "--repo", str(work))[0] == 0
    # Someone edits the branch by hand: a line cut short.
    text = git(work, "show", f"{BRANCH}:tiny.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(text + text[: len(text) // 2] + "\n", encoding="utf-8")
    blob = git(work, "hash-object", "-w", str(broken)).strip()
    tree = subprocess.run(
        ["git", "-C", str(work), "mktree"],
        input=f"100644 blob {blob}\ttiny.jsonl\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    commit = git(work, "commit-tree", tree, "-p", BRANCH, "-m", "hand edit").strip()
    git(work, "update-ref", f"refs/heads/{BRANCH}", commit)
    code, _, err = run_cli("history", "list", "--repo", str(work))
    assert code == 2
    assert f"{BRANCH}:tiny.jsonl:2: not valid JSON" in err
    path = result_at(document, second, tmp_path / "second.json")
    code, _, err = run_cli("history", "append", "--result", str(path), "--repo", str(work))
    assert code == 2
    assert "tiny.jsonl:2" in err
    assert git(work, "rev-parse", BRANCH).strip() == commit


def test_a_record_of_a_newer_schema_is_refused_with_the_reason(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, _, document = world
    head = git(work, "rev-parse", "HEAD").strip()
    line = json.loads(entry_line(entry_at(document, work, head, tmp_path / "r.json")))
    line["history_schema"] = HISTORY_SCHEMA_VERSION + 1
    history = tmp_path / "tiny.jsonl"
    history.write_text("\n" + json.dumps(line) + "\n", encoding="utf-8")
    code, _, err = run_cli("history", "list", "--from", str(history))
    assert code == 2
    assert f"{history}:2: history_schema {HISTORY_SCHEMA_VERSION + 1}" in err
    assert "newer retrieval-gate" in err


def test_a_missing_field_is_named(world: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    work, _, document = world
    head = git(work, "rev-parse", "HEAD").strip()
    line = json.loads(entry_line(entry_at(document, work, head, tmp_path / "r.json")))
    del line["means"]
    line["record"]["scores"]["ndcg@10"] = [0.5]
    history = tmp_path / "tiny.jsonl"
    history.write_text(json.dumps(line) + "\n", encoding="utf-8")
    code, _, err = run_cli("history", "show", head, "--from", str(history))
    assert code == 2
    assert f"{history}:1: means: missing; expected an object" in err
    line["means"] = {}
    history.write_text(json.dumps(line) + "\n", encoding="utf-8")
    code, _, err = run_cli("history", "show", head, "--from", str(tmp_path))
    assert code == 2
    assert f"{history}:1: record:" in err
    assert "scores.ndcg@10: 1 values for 5 query_ids" in err


def test_reading_a_history_nobody_wrote_yet(tmp_path: Path) -> None:
    work, _ = make_repo(tmp_path)
    assert read_history(BranchSource(repo=work), "tiny") == []
    code, out, _ = run_cli("history", "list", "--repo", str(work))
    assert code == 0
    assert out.strip() == "no records"
    with pytest.raises(GateError):
        read_history(tmp_path / "absent.jsonl")


def test_a_clone_with_only_the_fetched_branch_appends_on_top_of_it(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, remote, document = world
    first, second = commits(work, 2)
    path = result_at(document, first, tmp_path / "first.json")
    assert (
        run_cli("history", "append", "--result", str(path), "--repo", str(work), "--push")[0] == 0
    )
    other = clone(remote, tmp_path / "other")
    git(other, "fetch", "-q", "origin", f"+{BRANCH}:refs/remotes/origin/{BRANCH}")
    path = result_at(document, second, tmp_path / "second.json")
    code, _, err = run_cli("history", "append", "--result", str(path), "--repo", str(other))
    assert code == 0, err
    assert [e.commit for e in read_history(BranchSource(repo=other), "tiny")] == [first, second]


def test_a_remote_moved_only_when_its_branch_tip_is_not_the_base(tmp_path: Path) -> None:
    work, _ = make_repo(tmp_path)
    main = git(work, "rev-parse", "HEAD").strip()
    # The push's refusal is retried only if the branch moved under it: main is at `main`.
    assert not store._remote_moved(work, "origin", "main", main)
    assert store._remote_moved(work, "origin", "main", "0" * 40)
    # A branch the remote does not have moved from nothing only if there was a base.
    assert not store._remote_moved(work, "origin", BRANCH, None)
    assert store._remote_moved(work, "origin", BRANCH, main)
    # A remote git cannot reach has not moved: the push's own error is the one to report.
    assert not store._remote_moved(work, str(tmp_path / "gone.git"), "main", main)


def test_invalid_utf8_names_its_line_counting_blank_lines_and_lone_crs(tmp_path: Path) -> None:
    path = tmp_path / "tiny.jsonl"
    # Blank lines, 2 and 3 split by a lone CR (a text-mode read ends a line there too).
    path.write_bytes(b"\n\r\r\n\xff\n")
    with pytest.raises(InputError) as raised:
        read_history(path)
    assert (raised.value.source, raised.value.line) == (str(path), 4)


def test_each_history_commit_says_which_config_and_kind_of_line_it_adds(
    world: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    work, _, document = world
    (sha,) = commits(work, 1)
    path = result_at(document, sha, tmp_path / "result-1.json")
    assert run_cli("history", "append", "--result", str(path), "--repo", str(work))[0] == 0
    accepted = accept_entry("tiny", sha, "2026-01-02T00:00:00Z", "a faster index")
    append(work, accepted, entry_line(accepted))
    subjects = git(work, "log", "--format=%s", BRANCH).splitlines()
    assert subjects == [
        f"retrieval-gate history: tiny accept {sha[:12]}",
        f"retrieval-gate history: tiny result {sha[:12]}",
    ]


def test_a_folder_on_the_history_branch_keeps_git_s_tree_order(tmp_path: Path) -> None:
    work, _ = make_repo(tmp_path)
    sha = git(work, "rev-parse", "HEAD").strip()
    # A folder `tiny` beside the file `tiny.jsonl`: git orders a folder as `tiny/`, after
    # `tiny.jsonl` ("." < "/"), where a plain name sort puts it first.
    blob = subprocess.run(
        ["git", "-C", str(work), "hash-object", "-w", "--stdin"],
        input="notes\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folder = _mktree(work, f"100644 blob {blob}\tnotes.md\n")
    root = _mktree(work, f"040000 tree {folder}\ttiny\n")
    git(
        work,
        "update-ref",
        f"refs/heads/{BRANCH}",
        git(work, "commit-tree", root, "-m", "x").strip(),
    )
    accepted = accept_entry("tiny", sha, "2026-01-02T00:00:00Z", "a faster index")
    tip = append(work, accepted, entry_line(accepted)).tip
    listing = git(work, "ls-tree", tip)
    assert [line.split("\t")[1] for line in listing.splitlines()] == ["tiny.jsonl", "tiny"]
    # git's own tree of the same entries (mktree sorts them) is the one written.
    assert git(work, "rev-parse", f"{tip}^{{tree}}").strip() == _mktree(work, listing)


def _mktree(repo: Path, listing: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "mktree"],
        input=listing,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_branch_that_keeps_moving_is_given_up_after_eight_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, _ = make_repo(tmp_path)
    sha = git(work, "rev-parse", "HEAD").strip()
    real_commit = store._commit
    made: list[str] = []

    def commit_then_lose_the_race(repo: Path, parent: str | None, *rest: str) -> str:
        made.append(real_commit(repo, parent, *rest))
        # Another job moves the branch between this one's read and its compare-and-swap.
        theirs = real_commit(repo, parent, "other.txt", f"{len(made)}\n", "theirs")
        git(repo, "update-ref", f"refs/heads/{BRANCH}", theirs)
        return made[-1]

    monkeypatch.setattr(store, "_commit", commit_then_lose_the_race)
    waits: list[float] = []
    monkeypatch.setattr(store, "clock", SimpleNamespace(sleep=waits.append))
    accepted = accept_entry("tiny", sha, "2026-01-02T00:00:00Z", "a faster index")
    with pytest.raises(GateError, match=r"after 8 attempts: it kept moving under this job"):
        append(work, accepted, entry_line(accepted))
    assert (len(made), len(waits)) == (8, 8)
