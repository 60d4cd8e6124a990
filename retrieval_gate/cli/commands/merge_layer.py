"""`retrieval-gate merge-layer`: git's merge driver for judgment layers, and its installer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.errors import EXIT_OK, GateError

DRIVER = "retrieval-gate-layer"
PATTERN = "*.llm.jsonl"
COMMAND = "retrieval-gate merge-layer %O %A %B %P"
"""What git runs: %O BASE, %A OURS (the result goes there), %B THEIRS, %P the file's path."""
GIT_TIMEOUT = 30.0
REGRADED_SHOWN = 5


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `merge-layer`: three versions of a layer (and its path), or --install."""
    parser = commands.add_parser(
        "merge-layer",
        help="merge two branches' LLM judgment layers (git's merge driver), or --install it",
        description="Write into OURS the union of the rows of two versions of a judgment "
        "layer (BASE, their common ancestor; OURS; THEIRS), sorted as `judge` writes it, "
        "atomically. A pair both sides graded differently keeps the later answer (its "
        "`time`); a row one side removed is kept. git runs it as a merge driver: "
        f"--install adds `{PATTERN} merge={DRIVER}` to the repository's .gitattributes and "
        f'`merge.{DRIVER}.driver "{COMMAND}"` to its git config.',
    )
    parser.add_argument("base", nargs="?", metavar="BASE", help="the common ancestor's version")
    parser.add_argument("ours", nargs="?", metavar="OURS", help="this side's: the result")
    parser.add_argument("theirs", nargs="?", metavar="THEIRS", help="the other side's version")
    parser.add_argument(
        "path", nargs="?", metavar="PATH", help="the file's path in the repository (git's %%P), "
        "named in messages"
    )  # fmt: skip
    parser.add_argument(
        "--install",
        action="store_true",
        help="set this repository up to merge layers with this command: .gitattributes "
        "(commit it) and the git config (once per clone)",
    )
    parser.add_argument(
        "--pattern",
        default=PATTERN,
        metavar="GLOB",
        help="with --install: the files that are layers (default: %(default)s; widen it when "
        "judge.output names another file)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Merge the three versions, or install the driver; say what was done."""
    if args.install:
        if args.base is not None:
            raise GateError("merge-layer: give either --install or BASE OURS THEIRS, not both")
        return install(Path.cwd(), args.pattern, out)
    if args.theirs is None:
        raise GateError(
            "merge-layer needs BASE OURS THEIRS (git passes them as %O %A %B), or --install"
        )
    return _merge(args, err)


def _merge(args: argparse.Namespace, err: TextIO) -> int:
    from retrieval_gate.core.wording import plural
    from retrieval_gate.datasets.layer_merge import merge_layers

    merged = merge_layers(Path(args.base), Path(args.ours), Path(args.theirs), name=args.path)
    name = args.path or args.ours
    # git shows what a driver prints: one line, and one more when grades were replaced.
    said = [f"merge-layer: {name}: {plural(merged.rows, 'row')}, {merged.from_theirs} from theirs"]
    if merged.both_graded:
        said.append(
            f"{plural(merged.both_graded, 'pair')} graded on both sides: the later answer kept"
        )
    if merged.kept_removed:
        said.append(
            f"{plural(merged.kept_removed, 'row')} one side removed kept (the layer only grows)"
        )
    print("; ".join(said), file=err)
    if merged.regraded:
        shown = ", ".join(f"{q}/{d}" for q, d, *_ in merged.regraded[:REGRADED_SHOWN])
        more = len(merged.regraded) - REGRADED_SHOWN
        print(
            f"merge-layer: {plural(len(merged.regraded), 'pair')} got different grades on the "
            f"two sides (query/doc: {shown}{f' and {more} more' if more > 0 else ''}); "
            "each keeps its later grade",
            file=err,
        )
    return EXIT_OK


def install(start: Path, pattern: str, out: TextIO) -> int:
    """Add the driver's line to the repository's .gitattributes (unless there) and define the
    driver in its git config: what every clone needs, as git never reads a merge driver's
    command from the repository itself."""
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.core.git import run_git

    if not pattern.strip() or any(char.isspace() for char in pattern):
        raise GateError(f"merge-layer --pattern {pattern!r}: give one glob, without spaces")
    found = run_git(start, "rev-parse", "--show-toplevel", timeout=GIT_TIMEOUT)
    if found.returncode != 0:
        raise GateError(
            f"merge-layer --install: {start} is not inside a git repository; run it in the "
            "repository whose layers you merge"
        )
    top = Path(found.stdout.strip())
    attributes = top / ".gitattributes"
    line = f"{pattern} merge={DRIVER}"
    text = attributes.read_text(encoding="utf-8") if attributes.is_file() else ""
    if line.split() in (held.split() for held in text.splitlines()):
        print(f"{attributes.name}: already has `{line}`", file=out)
    else:
        joined = text if not text or text.endswith("\n") else text + "\n"
        write_text_atomic(attributes, f"{joined}{line}\n")
        print(f"{attributes.name}: added `{line}` (commit it)", file=out)
    for key, value in (
        (f"merge.{DRIVER}.name", "retrieval-gate judgment layers: the union of both sides' rows"),
        (f"merge.{DRIVER}.driver", COMMAND),
    ):
        done = run_git(top, "config", "--local", key, value, timeout=GIT_TIMEOUT)
        if done.returncode != 0:
            raise GateError(f"merge-layer --install: git config {key} failed: {done.stderr}")
    print(
        f'git config: merge.{DRIVER}.driver "{COMMAND}" (this clone only: every clone, and a '
        "CI job that merges, runs `retrieval-gate merge-layer --install` once)",
        file=out,
    )
    return EXIT_OK
