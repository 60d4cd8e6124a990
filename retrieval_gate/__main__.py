"""`python -m retrieval_gate` runs the CLI."""

from retrieval_gate.cli.main import main_entry

main_entry()
