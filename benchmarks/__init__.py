"""Benchmarks of retrieval-gate: timings, simulations, accuracy checks and tools (README.md)."""
