"""`retrieval-gate config schema|validate|reference`: the config file."""

from __future__ import annotations

import argparse
from typing import TextIO

from retrieval_gate.cli.commands.common import add_config_option
from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `config` and its actions."""
    config = commands.add_parser("config", help="the config file: schema, validation, reference")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    schema = config_commands.add_parser("schema", help="print the JSON Schema (for editors)")
    schema.set_defaults(handler=run_schema)
    validate = config_commands.add_parser(
        "validate", help="check a config and the labelled set it points to"
    )
    add_config_option(validate)
    validate.set_defaults(handler=run_validate)
    reference = config_commands.add_parser(
        "reference", help="print the Markdown reference of every config key"
    )
    reference.set_defaults(handler=run_reference)


def run_schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the config's JSON Schema."""
    import json

    from retrieval_gate.config.schema import json_schema

    out.write(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
    return EXIT_OK


def run_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Load the config and its labelled set; print what they hold."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset

    config = load(args.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    for warning in dataset.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    for note in config.notes:
        print(f"retrieval-gate: note: {note}", file=err)
    corpus = f", {len(dataset.corpus)} documents" if dataset.corpus is not None else ""
    out.write(
        f"{args.config}: valid; {len(dataset.queries)} labelled queries, "
        f"{len(dataset.qrels)} judgments{corpus}; retriever {config.retriever.type}, "
        f"k = {config.k}, {len(config.metrics)} metrics; dataset {dataset.fingerprint[:12]}\n"
    )
    return EXIT_OK


def run_reference(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the Markdown reference of the config keys."""
    from retrieval_gate.config.reference import config_reference

    out.write(config_reference())
    return EXIT_OK
