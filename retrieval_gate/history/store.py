"""The history branch: one JSON Lines file per config, appended with git plumbing, merge-safe."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import tempfile
import time as clock
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from retrieval_gate.core.git import run_git
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.history.defaults import DEFAULT_BRANCH, DEFAULT_REMOTE
from retrieval_gate.history.record import Entry, parse_entry

GIT_TIMEOUT = 60.0
"""Seconds a git call may take: a fetch or push crosses the network."""
ATTEMPTS = 8
"""Pushes tried before giving up: each lost race re-fetches and re-appends onto the new tip."""
SUFFIX = ".jsonl"
BOM = "\ufeff"
IDENTITY = ("-c", "user.name=retrieval-gate", "-c", "user.email=retrieval-gate@users.noreply")
# A push refused because the branch moved (or was being moved) under us: worth a retry.
_RACE_MARKS = ("non-fast-forward", "fetch first", "cannot lock", "failed to update ref",
               "incorrect old value")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class BranchSource:
    """A history branch of the git repository around `repo`: the local branch when there is
    one, else the remote-tracking branch `remote/branch` (what a pull request's job fetched)."""

    repo: Path
    branch: str = DEFAULT_BRANCH
    remote: str = DEFAULT_REMOTE


HistorySource = Path | BranchSource
"""A history to read: a JSON Lines file, a folder of them (`NAME.jsonl`), or a branch."""


@dataclass(frozen=True, kw_only=True)
class Appended:
    """What an append did: whether the record was new, and the branch's tip after it."""

    appended: bool
    tip: str
    attempts: int


def file_name(config: str) -> str:
    """The history file of the gate named `config` (names are slugs: a safe file name)."""
    return f"{config}{SUFFIX}"


def parse_history(text: str, source: str) -> list[Entry]:
    """Every record of a history file, in order; blank lines are skipped."""
    return [parse_entry(line, source, number) for number, line in _numbered(text.split("\n"))]


def read_history(source: HistorySource, config: str | None = None) -> list[Entry]:
    """The records of `config` (every config's, in name order, when None) at `source`; a
    source without a history file for it holds no records."""
    return list(iter_history(source, config))


def iter_history(source: HistorySource, config: str | None = None) -> Iterator[Entry]:
    """`read_history`, one record at a time: the history is read as it is parsed, so a
    reader that keeps what it needs of each record holds one record at once."""
    for label, lines in _sources(source, config):
        with contextlib.closing(lines):  # a bad line stops git's output at once
            for number, line in lines:
                entry = parse_entry(line, label, number)
                if config is None or entry.config == config:
                    yield entry


def _sources(
    source: HistorySource, config: str | None
) -> Iterator[tuple[str, Generator[tuple[int, str], None, None]]]:
    """(label, its numbered lines) of each history file of `source`, in name order."""
    if isinstance(source, BranchSource):
        tip = branch_tip(source)
        if not tip:
            return
        names = [file_name(config)] if config else _names_at(source.repo, tip)
        for name in names:
            if _git(source.repo, "cat-file", "-e", f"{tip}:{name}").returncode == 0:
                yield f"{source.branch}:{name}", _blob_lines(source.repo, tip, name)
        return
    path = Path(source)
    if path.is_dir():
        files = [path / file_name(config)] if config else sorted(path.glob(f"*{SUFFIX}"))
        for file in files:
            if file.is_file():
                yield str(file), _file_lines(file)
        return
    if not path.exists():
        raise InputError(f"no history file or folder at {path}")
    yield str(path), _file_lines(path)


def _file_lines(path: Path) -> Generator[tuple[int, str], None, None]:
    try:
        with path.open("rb") as file:
            yield from _numbered(_decoded(file, str(path)))
    except OSError as error:
        raise InputError(f"cannot read the history: {error}", source=str(path)) from None


def _blob_lines(repo: Path, commit: str, name: str) -> Generator[tuple[int, str], None, None]:
    """The lines of file `name` at `commit`, read from git as they come."""
    command = ["git", "-C", str(repo), "cat-file", "blob", f"{commit}:{name}"]
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    ) as git:
        assert git.stdout is not None
        assert git.stderr is not None
        try:
            yield from _numbered(_decoded(git.stdout, None))
        except BaseException:
            git.kill()  # the reader stopped early (or failed): git need not write the rest
            raise
        problem = git.stderr.read().decode("utf-8", "replace").strip()
        if git.wait() != 0:
            raise GateError(f"cannot read {name} at {commit[:12]}: {problem}")


def _decoded(lines: Iterable[bytes], strict_source: str | None) -> Iterator[str]:
    """Lines of text as a text-mode read gives them (CR LF and a lone CR end a line too),
    invalid UTF-8 an InputError naming `strict_source`, or replaced when it is None (as git's
    output is read)."""
    number = 0
    for raw in lines:
        try:
            text = raw.decode("utf-8", "strict" if strict_source else "replace")
        except UnicodeDecodeError as error:
            raise InputError(
                f"cannot read the history: {error}", source=strict_source, line=number + 1
            ) from None
        text = text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")
        parts = text.split("\r")
        number += len(parts)
        yield from parts


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(number, line) of the lines that are not blank, counted from 1; a UTF-8 byte order
    mark opening a line (a file saved by an editor that writes one) is not part of it."""
    for number, line in enumerate(lines, 1):
        line = line.removeprefix(BOM)
        if line.strip():
            yield number, line


def branch_tip(source: BranchSource) -> str | None:
    """The commit the history branch points at: the local branch, else the remote-tracking
    one; None when neither exists."""
    check_branch_name(source.repo, source.branch)
    for ref in (f"refs/heads/{source.branch}", f"refs/remotes/{source.remote}/{source.branch}"):
        tip = _tip(source.repo, ref)
        if tip is not None:
            return tip
    return None


def check_branch_name(repo: Path, branch: str) -> None:
    """An InputError unless `branch` is a valid branch name."""
    if branch.startswith("-") or _git(repo, "check-ref-format", "--branch", branch).returncode:
        raise InputError(f"the history branch {branch!r} is not a valid git branch name")


# ------------------------------------------------------------------------------------------
# Appending


def append(
    repo: Path,
    entry: Entry,
    line: str,
    *,
    branch: str = DEFAULT_BRANCH,
    remote: str = DEFAULT_REMOTE,
    push: bool = False,
    attempts: int = ATTEMPTS,
) -> Appended:
    """Append `line` (the JSON of `entry`) to the config's file on the history branch.

    Never touches the working tree or the index: the new file is a blob, the tree and commit
    are written with plumbing, and the branch ref moves by compare-and-swap. With `push` the
    base is the remote's branch (fetched), and a push refused because another job pushed
    first fetches again and re-appends onto the new tip, up to `attempts` times. A record whose
    key (kind, config, commit) is already there is not appended again. Raises GateError.
    """
    check_branch_name(repo, branch)
    if push:
        _check_remote(repo, remote)
    name = file_name(entry.config)
    local = f"refs/heads/{branch}"
    tracking = f"refs/remotes/{remote}/{branch}"
    problem = ""
    for attempt in range(1, attempts + 1):
        mine = None if push else _tip(repo, local)
        base = _fetch(repo, remote, branch) if push else mine or _tip(repo, tracking)
        text = _blob_text(repo, base, name) if base else None
        text = text or ""
        source = f"{branch}:{name}"
        # A corrupted history is refused, not appended to: its lines name the fault.
        if any(e.key == entry.key for e in parse_history(text, source)):
            if base is not None:
                _follow(repo, local, base)
            return Appended(appended=False, tip=base or "", attempts=attempt)
        if text and not text.endswith("\n"):
            text += "\n"
        commit = _commit(repo, base, name, text + line + "\n", _message(entry))
        if push:
            done = _git(repo, "push", "--porcelain", remote, f"{commit}:{local}")
            if done.returncode == 0:
                _update_ref(repo, tracking, commit, None)
                _follow(repo, local, commit)
                return Appended(appended=True, tip=commit, attempts=attempt)
            problem = (done.stderr + done.stdout).strip()
            moved = _remote_moved(repo, remote, branch, base)
            if not moved and not any(mark in problem for mark in _RACE_MARKS):
                raise GateError(f"cannot push the history branch {branch} to {remote}: {problem}")
        else:
            # Compare-and-swap: the local branch must still be what it was (or still absent).
            done = _git(repo, "update-ref", local, commit, mine or "0" * len(commit))
            if done.returncode == 0:
                return Appended(appended=True, tip=commit, attempts=attempt)
            problem = done.stderr.strip()
        # Another job won the race: let it finish, then start again from its tip.
        clock.sleep(random.uniform(0.05, 0.2) * attempt)
    raise GateError(
        f"could not append to the history branch {branch} after {attempts} attempts: it kept "
        f"moving under this job ({problem or 'no message'}); run the job again"
    )


def refresh(repo: Path, remote: str, branch: str) -> str | None:
    """Fetch the remote's history branch into `remote/branch`; its tip, None if it has none."""
    check_branch_name(repo, branch)
    _check_remote(repo, remote)
    return _fetch(repo, remote, branch)


def _message(entry: Entry) -> str:
    what = "accept" if entry.kind == "accept" else "result"
    return f"retrieval-gate history: {entry.config} {what} {entry.commit[:12]}"


def _check_remote(repo: Path, remote: str) -> None:
    done = _git(repo, "remote")
    if done.returncode != 0:
        raise GateError(f"not a git repository: {repo}")
    if remote not in done.stdout.split():
        raise InputError(
            f"--remote {remote!r} is not a remote of this repository (git remote add it first)"
        )


def _fetch(repo: Path, remote: str, branch: str) -> str | None:
    """The remote's branch tip after fetching it into the remote-tracking ref; None when the
    remote has no such branch yet."""
    tracking = f"refs/remotes/{remote}/{branch}"
    done = _git(repo, "fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:{tracking}")
    if done.returncode != 0:
        if "couldn't find remote ref" in done.stderr.lower():
            _git(repo, "update-ref", "-d", tracking)  # the branch is gone or not made yet
            return None
        raise GateError(f"cannot fetch the history branch {branch} from {remote}: "
                        f"{done.stderr.strip()}")  # fmt: skip
    return _tip(repo, tracking)


def _remote_moved(repo: Path, remote: str, branch: str, base: str | None) -> bool:
    done = _git(repo, "ls-remote", "--heads", remote, f"refs/heads/{branch}")
    if done.returncode != 0:
        return False
    tips = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    return (tips[0] if tips else None) != base


def _commit(repo: Path, parent: str | None, name: str, text: str, message: str) -> str:
    """A commit of `parent`'s tree with file `name` holding `text`, made without an index."""
    blob = _hash_object(repo, text.encode("utf-8"), "blob")
    entries = _tree_entries(repo, parent) if parent else []
    entries = [e for e in entries if e[3] != name] + [("100644", "blob", blob, name)]
    tree = _hash_object(repo, _tree_bytes(entries), "tree")
    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-m", message]
    done = _git(repo, *IDENTITY, *args)
    if done.returncode != 0:
        raise GateError(f"git commit-tree failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _hash_object(repo: Path, data: bytes, kind: str) -> str:
    # hash-object reads a file here: the git runner gives no stdin.
    handle, path = tempfile.mkstemp(prefix="retrieval-gate-history-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        done = _git(repo, "hash-object", "-w", "--no-filters", "-t", kind, "--", path)
    finally:
        os.unlink(path)
    if done.returncode != 0:
        raise GateError(f"git hash-object failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _tree_entries(repo: Path, commit: str) -> list[tuple[str, str, str, str]]:
    """(mode, type, object, name) of the top level of `commit`'s tree."""
    done = _git(repo, "ls-tree", "-z", commit)
    if done.returncode != 0:
        raise GateError(f"git ls-tree {commit} failed: {done.stderr.strip()}")
    entries = []
    for item in done.stdout.split("\0"):
        if item:
            meta, name = item.split("\t", 1)
            mode, kind, sha = meta.split()
            entries.append((mode, kind, sha, name))
    return entries


def _tree_bytes(entries: Sequence[tuple[str, str, str, str]]) -> bytes:
    """A tree object's content: entries sorted as git sorts them (a tree as `name/`)."""

    def order(entry: tuple[str, str, str, str]) -> bytes:
        return (entry[3] + ("/" if entry[1] == "tree" else "")).encode("utf-8")

    return b"".join(
        mode.lstrip("0").encode() + b" " + name.encode("utf-8") + b"\0" + bytes.fromhex(sha)
        for mode, _, sha, name in sorted(entries, key=order)
    )


def _names_at(repo: Path, commit: str) -> list[str]:
    return sorted(e[3] for e in _tree_entries(repo, commit) if e[3].endswith(SUFFIX))


def _blob_text(repo: Path, commit: str, name: str) -> str | None:
    done = _git(repo, "cat-file", "-e", f"{commit}:{name}")
    if done.returncode != 0:
        return None
    done = _git(repo, "cat-file", "blob", f"{commit}:{name}")
    if done.returncode != 0:
        raise GateError(f"cannot read {name} at {commit[:12]}: {done.stderr.strip()}")
    return done.stdout


def _tip(repo: Path, ref: str) -> str | None:
    done = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _update_ref(repo: Path, ref: str, new: str, old: str | None) -> None:
    args = ["update-ref", ref, new, *([old] if old else [])]
    done = _git(repo, *args)
    if done.returncode != 0:
        raise GateError(f"cannot move {ref}: {done.stderr.strip()}")


def _follow(repo: Path, local: str, commit: str) -> None:
    """Move the local branch to the pushed `commit`, unless it holds records the remote does
    not (appended without --push): those stay where they are, never dropped."""
    old = _tip(repo, local)
    if old is None or _git(repo, "merge-base", "--is-ancestor", old, commit).returncode == 0:
        _update_ref(repo, local, commit, None)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_git(repo, *args, timeout=GIT_TIMEOUT)


# ------------------------------------------------------------------------------------------
# What a record needs from the repository


@dataclass(frozen=True, kw_only=True)
class CommitInfo:
    """A commit of the repository: its full sha, committer time (UTC) and message."""

    sha: str
    time: str
    message: str


def commit_info(repo: Path, commit: str) -> CommitInfo:
    """The commit `commit` names in `repo`; an InputError when it is not there."""
    # A result's commit is input: git would read a leading "-" as an option (--output=FILE
    # writes a file), and no commit is named so.
    show = ("show", "-s", "--format=%H%n%cI%n%B", f"{commit}^{{commit}}", "--")
    if commit.startswith("-") or (done := _git(repo, *show)).returncode != 0:
        raise InputError(
            f"commit {commit[:40]!r} is not in the repository at {repo}; run the history "
            "command in the checkout that made the result"
        )
    sha, stamp, message = [*done.stdout.split("\n", 2), "", ""][:3]
    moment = datetime.fromisoformat(stamp.strip()).astimezone(timezone.utc)
    return CommitInfo(
        sha=sha.strip(), time=moment.strftime("%Y-%m-%dT%H:%M:%SZ"), message=message.strip()
    )


def current_ref(repo: Path) -> str:
    """What was checked out: $GITHUB_REF in a workflow, else HEAD's branch; "" when detached."""
    if os.environ.get("GITHUB_REF"):
        return os.environ["GITHUB_REF"]
    done = _git(repo, "symbolic-ref", "--quiet", "HEAD")
    return done.stdout.strip() if done.returncode == 0 else ""
