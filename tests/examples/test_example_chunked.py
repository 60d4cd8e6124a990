"""The chunked example: its committed files are its generator's output, and its two configs
differ in the chunk size alone."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from retrieval_gate.config.loader import load
from tests.helpers.paths import CONFIGS

FOLDER = CONFIGS / "example-chunked"


@pytest.fixture(scope="module")
def generator() -> Iterator[ModuleType]:
    """configs/example-chunked/make_chunks.py, imported from its path."""
    spec = importlib.util.spec_from_file_location("make_chunks", FOLDER / "make_chunks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_committed_files_are_the_generators_output(generator: ModuleType) -> None:
    pytest.importorskip("langchain_text_splitters")
    for name, text in generator.render().items():
        assert (FOLDER / name).read_text(encoding="utf-8") == text, (
            f"configs/example-chunked/{name} is out of date: run its make_chunks.py"
        )


def test_the_pull_request_changes_the_chunk_size_alone() -> None:
    main, pr = load(CONFIGS / "example-chunked.yaml"), load(CONFIGS / "example-chunked-pr.yaml")
    assert main.baseline == pr.baseline
    assert main.dataset.corpus == "example-chunked/corpus-300.jsonl"
    assert pr.dataset.corpus == "example-chunked/corpus-200.jsonl"
    same = main.dataset.model_copy(update={"corpus": pr.dataset.corpus})
    assert same == pr.dataset
    for field in ("retriever", "k", "metrics", "slices", "gate"):
        assert getattr(main, field) == getattr(pr, field), field
