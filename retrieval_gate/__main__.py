"""`python -m retrieval_gate` runs the CLI."""

from retrieval_gate.cli.main import main_entry

# Guarded: the worker processes of `evaluate --scheduler local:N` are spawned, and a spawned
# process imports the parent's main module again.
if __name__ == "__main__":
    main_entry()
