"""Tools for developers: behaviour snapshots, mutation testing, synthetic data (README.md)."""
