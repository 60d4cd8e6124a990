"""`retrieval-gate completion bash|zsh|fish`: print a shell completion script."""

from __future__ import annotations

import argparse
from typing import TextIO

from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `completion` and its shell."""
    parser = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script of a shell, generated from this command "
        "line: commands, options, choices, and files for the options that take one "
        "(*.yaml and *.yml for -c/--config). Load it with: "
        "source <(retrieval-gate completion bash) in ~/.bashrc; "
        "source <(retrieval-gate completion zsh) in ~/.zshrc, after compinit; "
        "retrieval-gate completion fish > ~/.config/fish/completions/retrieval-gate.fish.",
    )
    # completion.SHELLS, spelled out: every command line builds this parser, and importing the
    # generator to read three names cost 9 ms of `--help`'s 42 (test_completion ties the two).
    parser.add_argument(
        "shell", choices=("bash", "zsh", "fish"), help="the shell: bash, zsh or fish"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the script for the parser of the whole command line."""
    from retrieval_gate.cli.completion import script
    from retrieval_gate.core.wording import raw_stream

    raw_stream(out).write(script(args.shell, args.root_parser))
    return EXIT_OK
