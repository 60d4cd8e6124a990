"""Speed and memory beside the tools users would otherwise use (README.md)."""
