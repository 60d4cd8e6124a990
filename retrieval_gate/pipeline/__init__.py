"""Orchestration, the only layer that runs things end to end: execute, record, against, check."""
