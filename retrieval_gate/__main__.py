"""`python -m retrieval_gate` runs the CLI."""

from retrieval_gate.cli import main_entry

main_entry()
