"""The `run_file` retriever: answers from a precomputed run (TREC, JSONL or BEIR JSON)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from retrieval_gate.adapters.adapter import Adapter
from retrieval_gate.adapters.base import Document, Hit, Query
from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.errors import GateError


class RunFileConfig(AdapterSettings):
    """Reads results computed elsewhere."""

    type: Literal["run_file"] = Field(default="run_file", description="A precomputed run file.")
    path: Path = Field(description="The run file; relative paths start at the config's folder.")
    format: str | None = Field(
        default=None,
        description="trec, jsonl or json (BEIR results); detected from the file if unset.",
    )


class RunFileRetriever(Adapter[RunFileConfig]):
    """Each query's docs ranked as trec_eval ranks them (score descending, doc id descending
    on ties); `search` gives the top k. A query the file does not have gets no hits. The
    description holds the file's hash, so a changed file is a different retriever."""

    config_class = RunFileConfig
    cacheable = True

    def __init__(
        self,
        config: RunFileConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        from retrieval_gate.readers import read_run  # numpy: not needed to start the CLI

        path = (base_dir or Path()) / config.path
        if not path.is_file():
            raise GateError(f"retriever.path: run file not found: {path}")
        self.sha256 = _sha256(path)
        self.ranked: dict[str, list[Hit]] = {}
        for query, scores in read_run(path, config.format).to_dict().items():
            by_doc = sorted(scores.items(), reverse=True)  # sorts are stable: ties keep this
            ranked = sorted(by_doc, key=lambda item: item[1], reverse=True)
            self.ranked[query] = [Hit(doc, score) for doc, score in ranked]

    def describe(self) -> Mapping[str, Any]:
        return {
            "type": "run_file",
            "path": self.config.path.as_posix(),
            "format": self.config.format,
            "sha256": self.sha256,
        }

    def search(self, query: Query, k: int) -> list[Hit]:
        return self.ranked.get(query.id, [])[:k]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
