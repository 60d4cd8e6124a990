"""The adapter registry: config validation, building, schema, and a light package import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from retrieval_gate.adapters import (
    ADAPTERS,
    AdapterConfig,
    Document,
    Query,
    Retriever,
    build_retriever,
)
from retrieval_gate.errors import GateError
from tests.helpers.waiting import GUARD

CONFIGS = TypeAdapter(AdapterConfig)


def test_every_type_validates_and_names_its_adapter() -> None:
    samples: dict[str, dict[str, Any]] = {
        "python": {"target": "m:f"},
        "http": {"url": "http://h/search"},
        "command": {"argv": ["prog"]},
        "run_file": {"path": "run.txt"},
        "langchain": {"target": "m:r"},
        "llamaindex": {"target": "m:r"},
        "haystack": {"target": "m:r"},
        "bm25": {},
        "stages": {"candidates": {"type": "bm25"}, "rerank": {"target": "m:rerank"}},
        "qdrant": {"path": "q", "collection": "c", "embedding": {"python": "m:e"}},
        "chroma": {"path": "c", "collection": "c", "embedding": {"wordllama": {}}},
        "lancedb": {"uri": "l", "table": "t", "id_field": "id", "query": "fts"},
        "fusion": {"retrievers": {"a": {"type": "bm25"}, "b": {"type": "bm25"}}},
        "pgvector": {"dsn": "postgresql://h/db", "table": "t", "embedding": {"python": "m:e"}},
    }
    assert set(samples) == set(ADAPTERS)
    for kind, fields in samples.items():
        config = CONFIGS.validate_python({"type": kind, **fields})
        assert isinstance(config, ADAPTERS[kind].config_class)
        assert (config.concurrency, config.timeout, config.retries, config.batch_size) == (
            8,
            30.0,
            3,
            1,
        )


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "nope"},
        {"type": "http", "url": "http://h", "verb": "POST"},  # unknown field
        {"type": "http", "url": "http://h", "timeout": 0},
        {"type": "bm25", "concurrency": 0},
        {"type": "bm25", "fields": ["body"]},
    ],
)
def test_invalid_configs_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CONFIGS.validate_python(bad)


def test_build_retriever_uses_base_dir_and_corpus(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.0 x\n", encoding="utf-8")
    run = build_retriever(
        CONFIGS.validate_python({"type": "run_file", "path": "run.txt"}), base_dir=tmp_path
    )
    assert isinstance(run, Retriever)
    assert [hit.doc_id for hit in run.search(Query("q1", ""), 5)] == ["d1"]
    corpus = {"a": Document("a", "alpha", "first letter")}
    bm25 = build_retriever(
        CONFIGS.validate_python({"type": "bm25"}), base_dir=tmp_path, corpus=corpus
    )
    assert [hit.doc_id for hit in bm25.search(Query("q", "alpha"), 5)] == ["a"]


def test_build_retriever_rejects_other_objects(tmp_path: Path) -> None:
    fake: Any = type("Fake", (), {"type": "nope"})()
    with pytest.raises(GateError, match=r"unknown retriever type 'nope'.*available: python, http"):
        build_retriever(fake, base_dir=tmp_path)


def test_json_schema_has_descriptions_for_editors() -> None:
    schema = CONFIGS.json_schema()
    http = schema["$defs"]["HttpConfig"]["properties"]
    assert "discriminator" in schema
    assert all("description" in field for field in http.values())
    json.dumps(schema)


def test_package_import_stays_light() -> None:
    code = (
        "import sys, retrieval_gate.adapters; "
        "heavy = ['httpx', 'bm25s', 'numpy', 'Stemmer', 'langchain_core', 'llama_index', "
        "'haystack', 'qdrant_client', 'chromadb', 'lancedb', 'wordllama', 'pyarrow']; "
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=GUARD
    )
    assert out.stdout.strip() == "[]"
