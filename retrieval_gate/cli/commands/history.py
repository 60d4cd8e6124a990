"""`retrieval-gate history`: the main branch's results kept in a git branch, and their drift."""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, TextIO

from retrieval_gate.cli.commands.common import add_config_option, raw
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.errors import EXIT_OK, InputError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from retrieval_gate.history.record import Entry, ResultEntry
    from retrieval_gate.history.store import HistorySource

SHOWN_METRICS = 4
"""Metric columns of `history list`; `show` and `export` have them all."""
LIST_HEAD = ("config", "commit", "time", "pr", "status")
TEXT_SHOWN = 80


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `history` and its actions."""
    from retrieval_gate.history.defaults import DEFAULT_BRANCH, DEFAULT_REMOTE

    history = commands.add_parser(
        "history",
        help="keep the main branch's results in a git branch; check their drift",
        description="The main branch's results, one JSON line per commit and config, kept in "
        f"a git branch of the repository (default {DEFAULT_BRANCH}), and the drift budget "
        "(gate.drift) checked against them.",
    )
    actions = history.add_subparsers(dest="history_command", metavar="ACTION", required=True)

    def branch_options(parser: argparse.ArgumentParser, *, reads: bool) -> None:
        parser.add_argument(
            "--branch", default=DEFAULT_BRANCH, help="the history branch (default: %(default)s)"
        )
        parser.add_argument(
            "--remote", default=DEFAULT_REMOTE, help="the remote to push to (default: %(default)s)"
        )
        parser.add_argument(
            "--repo", metavar="DIR", default=".", help="the git checkout (default: %(default)s)"
        )
        if reads:
            parser.add_argument(
                "--from",
                dest="from_path",
                metavar="PATH",
                help="read this JSON Lines file or folder of them instead of the branch",
            )

    append = actions.add_parser(
        "append",
        help="append a `check` result of the checked-out commit to the history branch",
        description="Append the record of a `check` JSON result (the commit's time, ref, pull "
        "request, means, per-query scores and top k ids, fingerprints) to NAME.jsonl on the "
        "history branch, with git plumbing: the working tree and index are not touched. With "
        "--push the record goes onto the remote's branch; a push that loses a race with "
        "another job fetches again and re-appends. A record already there is not repeated.",
    )
    append.add_argument("--result", metavar="RESULT", required=True, help="a JSON result")
    branch_options(append, reads=False)
    append.add_argument("--push", action="store_true", help="push the branch to --remote")
    append.set_defaults(handler=run_append)

    accept = actions.add_parser(
        "accept",
        help="accept the newest record's drift: the drift reference moves to it",
        description="Append an acceptance of the newest result: an acknowledged trade-off. "
        "The drift is measured from that record from now on.",
    )
    add_config_option(accept)
    accept.add_argument("--reason", required=True, help="why the drop is accepted")
    branch_options(accept, reads=False)
    accept.add_argument("--push", action="store_true", help="push the branch to --remote")
    accept.set_defaults(handler=run_accept)

    listing = actions.add_parser("list", help="list the records, oldest first")
    listing.add_argument("--name", help="only this config's records (default: every config's)")
    branch_options(listing, reads=True)
    listing.set_defaults(handler=run_list)

    show = actions.add_parser("show", help="one commit's records in full")
    show.add_argument("commit", metavar="COMMIT", help="a commit sha or its prefix")
    show.add_argument("--name", help="only this config's record")
    branch_options(show, reads=True)
    show.set_defaults(handler=run_show)

    export = actions.add_parser(
        "export", help="the records' means as JSON or CSV (one row per metric and slice)"
    )
    export.add_argument("--format", choices=("json", "csv"), default="json")
    export.add_argument("--name", help="only this config's records")
    branch_options(export, reads=True)
    export.set_defaults(handler=run_export)

    drift = actions.add_parser(
        "drift",
        help="check the newest record against the drift reference (gate.drift)",
        description="Compare the newest record with the reference of gate.drift query by "
        "query, with gate.drift.max_drop as the tolerance. Exit 1 when a gated metric drifted "
        "past the budget with evidence (an e-detector over the records since the reference: "
        "without a change, at most gate.alpha of histories trip within gate.drift.horizon "
        "merges), naming the merges the drop came from.",
    )
    add_config_option(drift)
    drift.add_argument(
        "--json", dest="json_path", metavar="PATH", help="also write the drift report as JSON"
    )
    branch_options(drift, reads=True)
    drift.set_defaults(handler=run_drift)


def run_append(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Append the record of --result to the history branch."""
    from retrieval_gate.history.record import entry_line, read_result, result_entry
    from retrieval_gate.history.store import append, commit_info, current_ref

    repo = _checkout(args)
    path = Path(args.result)
    document = read_result(path)
    current = document.get("current") if isinstance(document, dict) else None
    if isinstance(current, dict) and current.get("git_dirty"):
        raise InputError(
            "the result was made in a working tree with uncommitted changes: its scores are "
            "not the commit's; run `check` on a clean checkout",
            source=str(path),
        )
    made_at = current.get("git_commit") if isinstance(current, dict) else None
    info = commit_info(repo, made_at if isinstance(made_at, str) and made_at else "HEAD")
    entry = result_entry(
        document,
        str(path),
        commit=info.sha,
        time=info.time,
        ref=current_ref(repo),
        subject=info.message,
    )
    done = append(
        repo, entry, entry_line(entry), branch=args.branch, remote=args.remote, push=args.push
    )
    where = f"{args.remote}/{args.branch}" if args.push else args.branch
    if done.appended:
        retried = ""
        if done.attempts > 1:
            retried = f"; {done.attempts} attempts, another job pushed first"
        print(
            f"appended {entry.config} {entry.label} to {where} ({done.tip[:12]}{retried})", file=out
        )
    else:
        print(f"{entry.config} {entry.label} is already in {where}; nothing appended", file=out)
    return EXIT_OK


def run_accept(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Accept the newest result of the config: the drift reference moves to it."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.errors import InputError
    from retrieval_gate.history.record import ResultEntry, accept_entry, entry_line
    from retrieval_gate.history.store import BranchSource, append, iter_history, refresh

    config = load(args.config)
    reason = " ".join(args.reason.split())
    if not reason:
        raise InputError("--reason: say why the drop is accepted (it is kept in the history)")
    repo = _checkout(args)
    if args.push:
        refresh(repo, args.remote, args.branch)
    entries = iter_history(
        BranchSource(repo=repo, branch=args.branch, remote=args.remote), config.name
    )
    newest = None
    for entry in entries:
        newest = entry if isinstance(entry, ResultEntry) else newest
    if newest is None:
        raise InputError(f"the history branch {args.branch} holds no result of {config.name!r}")
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    entry = accept_entry(config.name, newest.commit, now, reason)
    done = append(
        repo, entry, entry_line(entry), branch=args.branch, remote=args.remote, push=args.push
    )
    verb = "accepted" if done.appended else "already accepted"
    print(f"{verb}: the drift of {config.name} is measured from {newest.label} on", file=out)
    return EXIT_OK


def run_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """One line per record, oldest first."""
    from retrieval_gate.history.record import AcceptEntry

    # The history is read one record at a time; the rows wait in a temporary file until
    # the columns' widths are known (a bad line is an error before anything is printed).
    widths = [len(name) for name in LIST_HEAD]
    metrics: list[str] = []  # the first SHOWN_METRICS metrics of the results, in order
    records = results = 0
    with _spool() as rows:
        for entry in _entries(args, args.name):
            cells = _list_head(entry)
            if not isinstance(entry, AcceptEntry):
                for metric in entry.means:
                    if metric not in metrics and len(metrics) < SHOWN_METRICS:
                        widths.append(1 if results else 0)  # the results before show "-"
                        metrics.append(metric)
                cells += [_list_mean(entry, metric) for metric in metrics]
                results += 1
            for column, cell in enumerate(cells):
                widths[column] = max(widths[column], len(cell))
            rows.write(json.dumps([entry.kind, *cells]) + "\n")
            records += 1
        if not records:
            print("no records", file=out)
            return EXIT_OK
        widths = [max(w, len(name)) for w, name in zip(widths, [*LIST_HEAD, *metrics], strict=True)]
        print(_list_line([*LIST_HEAD, *metrics], widths), file=out)
        rows.seek(0)
        for row in rows:
            kind, *cells = parsed_json(row)
            # A metric first seen after this row: "-" for a result, nothing for an accept.
            cells += ["" if kind == "accept" else "-"] * (len(widths) - len(cells))
            print(_list_line(cells, widths), file=out)
    return EXIT_OK


def _list_head(entry: Entry) -> list[str]:
    """The cells of `history list` before the metrics."""
    from retrieval_gate.history.record import AcceptEntry

    if isinstance(entry, AcceptEntry):
        return [entry.config, entry.commit[:12], entry.time, "", f"accepted: {_text(entry.reason)}"]
    pr = "" if entry.pr is None else f"#{entry.pr}"
    return [entry.config, entry.commit[:12], entry.time, pr, _text(entry.status)]


def _list_mean(entry: ResultEntry, metric: str) -> str:
    return f"{entry.means[metric]:.4f}" if metric in entry.means else "-"


def _list_line(cells: list[str], widths: list[int]) -> str:
    """A row as `aligned` lays it out: columns two spaces apart, left-aligned."""
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


def run_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Every record of one commit, in full but the per-query scores."""
    from retrieval_gate.errors import InputError
    from retrieval_gate.history.drift import resolver
    from retrieval_gate.history.record import AcceptEntry

    wanted = args.commit.strip().lower()
    found = [e for e in _entries(args, args.name) if wanted and e.commit.startswith(wanted)]
    if not found:  # a tag, a branch, HEAD~2: what git calls it in the checkout
        sha = resolver(_checkout(args))(args.commit.strip())
        found = [e for e in _entries(args, args.name) if sha and e.commit == sha]
    if not found:
        raise InputError(f"no record of commit {_text(args.commit)!r} in the history")
    for number, entry in enumerate(found):
        if number:
            print("", file=out)
        print(f"{entry.kind} {entry.config} {entry.commit} (line {entry.line})", file=out)
        print(f"  time: {entry.time}", file=out)
        if isinstance(entry, AcceptEntry):
            print(f"  reason: {_text(entry.reason, 2000)}", file=out)
            continue
        print(f"  ref: {_text(entry.ref)}", file=out)
        print(f"  pull request: {'#' + str(entry.pr) if entry.pr is not None else '-'}", file=out)
        print(f"  subject: {_text(entry.subject, 200)}", file=out)
        print(f"  status: {_text(entry.status)}", file=out)
        print(f"  tool version: {_text(entry.tool_version)}", file=out)
        for name, value in entry.fingerprints.items():
            print(f"  fingerprint {_text(name)}: {_text(value or '-')}", file=out)
        print(f"  queries: {len(entry.record.query_ids)}", file=out)
        for metric, mean in entry.means.items():
            print(f"  {_text(metric)}: {mean:.4f}", file=out)
        for name, means in entry.slices.items():
            shown = ", ".join(f"{_text(m)} {v:.4f}" for m, v in means.items())
            print(f"  {_text(name)}: {shown}", file=out)
    return EXIT_OK


def run_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The records as JSON (one object each) or CSV (one row per metric and slice)."""
    from retrieval_gate.core.wording import json_text
    from retrieval_gate.history.record import AcceptEntry, entry_summary

    # The history is read one record at a time; the output waits in a temporary file, so
    # that a bad line is an error before anything is written.
    with _spool() as spool:
        if args.format == "json":
            # Data, written beneath the console's filter; JSON escapes every control
            # character, and "##[" (a workflow command anywhere in a line) is escaped the
            # JSON way. The list as `json_text` writes it: each item indented one level.
            opening = "["
            for entry in _entries(args, args.name):
                item = json_text(entry_summary(entry)).replace("##[", "##\\u005b")
                spool.write(opening + "\n  " + item.replace("\n", "\n  "))
                opening = ","
            spool.write("[]\n" if opening == "[" else "\n]\n")
        else:
            writer = csv.writer(spool, lineterminator="\n")
            writer.writerow(["config", "kind", "commit", "time", "ref", "pr", "status",
                             "metric", "slice", "value", "reason"])  # fmt: skip
            for entry in _entries(args, args.name):
                head = [_cell(entry.config), entry.kind, _cell(entry.commit), _cell(entry.time)]
                if isinstance(entry, AcceptEntry):
                    writer.writerow([*head, "", "", "", "", "", "", _cell(entry.reason)])
                    continue
                common = [*head, _cell(entry.ref), entry.pr or "", _cell(entry.status)]
                for metric, mean in entry.means.items():
                    writer.writerow([*common, _cell(metric), "all", repr(mean), ""])
                for name, means in entry.slices.items():
                    for metric, mean in means.items():
                        writer.writerow([*common, _cell(metric), _cell(name), repr(mean), ""])
        spool.seek(0)
        shutil.copyfileobj(spool, raw(out))
    return EXIT_OK


def run_drift(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Check the newest record against the drift reference; exit 1 past the budget."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.history.drift import check_drift, describe, drift_document, resolver
    from retrieval_gate.pipeline.judge_labels import gate_judge

    config = load(args.config)
    if config.gate.drift is None:
        print(f"no drift budget (gate.drift) in {args.config}: nothing to check", file=out)
        return EXIT_OK
    dataset = load_dataset(
        config.dataset, config.base_dir, keep_unjudged=config.gate.uses_llm_labels
    )
    entries = list(_entries(args, config.name))
    report = check_drift(
        entries,
        config,
        dataset,
        resolve=resolver(_checkout(args)),
        judge=gate_judge(config, dataset),
    )
    if args.json_path:
        text = json.dumps(drift_document(report), indent=2, ensure_ascii=True) + "\n"
        write_text_atomic(Path(args.json_path), text)
    for line in describe(report):
        print(line, file=out)
    return report.exit_code


def _entries(args: argparse.Namespace, name: str | None) -> Iterator[Entry]:
    """The records of --from, else of the branch, read one at a time."""
    from retrieval_gate.history.store import BranchSource, iter_history

    source: HistorySource = (
        Path(args.from_path)
        if args.from_path
        else BranchSource(repo=_checkout(args), branch=args.branch, remote=args.remote)
    )
    return iter_history(source, name)


def _spool() -> IO[str]:
    """A temporary file for output that waits until the history is read to its end; it has
    no name, so nothing is left behind whatever ends the process."""
    return tempfile.TemporaryFile("w+", encoding="utf-8", newline="")


def _text(value: str, limit: int = TEXT_SHOWN) -> str:
    """Text from a record on one line, cut short: it is data, shown inert."""
    from retrieval_gate.core.wording import excerpt

    return excerpt(str(value), limit)


def _cell(value: str) -> str:
    """A CSV cell of text from a record: on one line, control characters shown, no workflow
    command, and not readable as a spreadsheet formula (`spreadsheet_cell`)."""
    from retrieval_gate.core.wording import console_text, one_line, spreadsheet_cell

    return spreadsheet_cell(console_text(one_line(value)))


def _checkout(args: argparse.Namespace) -> Path:
    """--repo, checked to be a git checkout: outside one, reading the branch found nothing
    and said "no records" (exit 0), and a folder that does not exist blamed the branch's
    name."""
    from retrieval_gate.core.git import git_output
    from retrieval_gate.history.store import GIT_TIMEOUT

    repo = Path(args.repo)
    where = "this folder" if args.repo == "." else f"--repo {args.repo}"
    todo = (
        "run it in the checkout that holds the history, give --repo DIR, or read a file with --from"
    )
    if getattr(args, "from_path", None):  # the records are read; their commits still are not
        todo = (
            "--from reads the records, but their commits are looked up in the checkout they "
            "were made in: run it there, or give --repo DIR"
        )
    if not repo.is_dir():
        raise InputError(f"{where}: no such folder; {todo}")
    if git_output(repo, "rev-parse", "--git-dir", timeout=GIT_TIMEOUT) is None:
        raise InputError(f"{where} is not in a git repository; {todo}")
    return repo
