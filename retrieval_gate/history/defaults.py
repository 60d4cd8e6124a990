"""The history's default branch and remote: light, so the command line can name them."""

DEFAULT_BRANCH = "retrieval-gate-history"
DEFAULT_REMOTE = "origin"
