"""Results checked against reference implementations and brute-force recounts (README.md)."""
