"""retrieval-gate: a CI regression gate for retrieval and RAG systems."""

from __future__ import annotations

__version__ = "0.1.0"
