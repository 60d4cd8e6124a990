"""`retrieval-gate.yaml`: its schema, its loader and its generated reference."""

DEFAULT_CONFIG = "retrieval-gate.yaml"
"""The config file commands read when no -c is given."""
