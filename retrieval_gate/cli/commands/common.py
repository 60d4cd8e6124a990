"""What several commands share: option declarations, report writing, the raw stream."""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.config import DEFAULT_CONFIG

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.report import Format, ResultRecord


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """-c/--config, the config file."""
    parser.add_argument(
        "-c", "--config", default=DEFAULT_CONFIG, help="config file (default: %(default)s)"
    )


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """Where the results come from: --run, the cache options and --quiet."""
    parser.add_argument("--run", help="score this run file instead of calling the retriever")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument(
        "--refresh-cache", action="store_true", help="call the retriever again, then cache"
    )
    add_quiet_option(parser)


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    """--quiet: no progress and no "wrote PATH" lines of reports; the rest still prints."""
    parser.add_argument(
        "--quiet",
        action="store_true",
        help='no progress output and no "wrote PATH" lines of reports; warnings, errors '
        "and the summary still print",
    )


def add_repeats_option(parser: argparse.ArgumentParser) -> None:
    """--repeats N, the number of retriever runs."""
    parser.add_argument(
        "--repeats",
        type=_repeats,
        metavar="N",
        help="run the retriever N times (default: gate.repeats) to measure its run-to-run "
        "noise, which the test then allows for; never from the cache",
    )


def _repeats(text: str) -> int:
    """The --repeats value: a whole number from 1 to 100."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs, got {text!r}") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected 1 to 100 runs, got {value}")
    return value


# What `check` and `compare` write when the config has no `report:` block: these files in
# .retrieval-gate/<name>/ beside the config (JUnit XML only when asked for).
DEFAULT_REPORTS: dict[Format, str] = {
    "json": "result.json",
    "markdown": "report.md",
    "html": "report.html",
}


def default_report_paths(name: str) -> dict[Format, str]:
    """The report paths of a config named `name` without a `report:` block, relative to it."""
    return {fmt: f".retrieval-gate/{name}/{file}" for fmt, file in DEFAULT_REPORTS.items()}


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """The report paths: --json, --markdown, --junit, --html and --no-reports."""
    group = parser.add_argument_group(
        "reports",
        "Default: the paths of the config's `report:` block; without one, result.json, "
        "report.md and report.html in .retrieval-gate/NAME/ beside the config (NAME: the "
        "config's `name`). Each option below replaces one of them.",
    )
    group.add_argument("--json", metavar="PATH", help="write the JSON result")
    group.add_argument("--markdown", metavar="PATH", help="write the Markdown report")
    group.add_argument("--junit", metavar="PATH", help="write JUnit XML (one testcase per check)")
    group.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    group.add_argument(
        "--no-reports",
        action="store_true",
        help="write none of the config's or the default reports, only those named by the "
        "options above",
    )


def report_targets(args: argparse.Namespace, config: GateConfig) -> dict[Format, Path]:
    """Report format -> path: options relative to the working directory; the config's
    `report:` paths (or, without that block, the default ones) relative to the config."""
    settings: Mapping[Format, str | None]
    if args.no_reports:
        settings = {}
    elif "report" in config.model_fields_set:  # a `report:` block says exactly what to write
        configured = config.report
        settings = {
            "json": configured.json_path,
            "markdown": configured.markdown,
            "junit": configured.junit,
            "html": configured.html,
        }
    else:
        settings = default_report_paths(config.name)
    options: dict[Format, str | None] = {
        "json": args.json,
        "markdown": args.markdown,
        "junit": args.junit,
        "html": args.html,
    }
    targets: dict[Format, Path] = {}
    for fmt, option in options.items():
        setting = settings.get(fmt)
        if option:
            targets[fmt] = Path(option)
        elif setting:
            targets[fmt] = config.resolve(setting)
    return targets


def write_reports(
    record: ResultRecord, targets: Mapping[Format, Path], err: TextIO, *, quiet: bool = False
) -> None:
    """Render and write each report atomically; say which unless `quiet`."""
    if not targets:
        return
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.report import render

    for fmt, path in targets.items():
        if fmt == "json":  # a large top k goes to a side file beside it, written first
            from retrieval_gate.core.wording import json_file_pieces
            from retrieval_gate.gate.baseline.side_file import with_top_k_file

            document = with_top_k_file(dict(record.document), path)
            write_text_atomic(path, json_file_pieces(document))
        else:
            write_text_atomic(path, render(record, fmt))
        if not quiet:
            print(f"retrieval-gate: wrote {path}", file=err)


def raw(stream: TextIO) -> TextIO:
    """The stream beneath the CLI's InertStream: for data formats and workflow commands."""
    from retrieval_gate.core.wording import raw_stream

    return raw_stream(stream)


def say(err: TextIO, message: str, *, fenced: bool = False) -> None:
    """Print a message on `err`; `fenced` (the `comment` command, in GitHub mode) puts it
    between stop-commands markers, written beneath the InertStream."""
    if not fenced:
        print(message, file=err)
        return
    from retrieval_gate.integrations.github.workflow import fenced as fence

    stream = raw(err)
    stream.write(fence(message))
    stream.flush()


def positive_int(text: str) -> int:
    """An option's whole number, 1 or more; argparse's error otherwise."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, 1 or more, got {text!r}")
    return int(text)


def positive_amount(text: str) -> float:
    """An option's finite amount above 0; argparse's error otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected an amount above 0, got {text!r}")
    return value
