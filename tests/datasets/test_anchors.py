"""Chunk anchors: given offsets checked, missing ones found by containment, bad metadata refused."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from retrieval_gate.core.model import Document
from retrieval_gate.datasets.anchors import Anchor, corpus_anchors, span_hash
from retrieval_gate.errors import InputError
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

SOURCE = "one two. one two. three."
DOCUMENTS = {"d": Document("d", "Title", SOURCE)}


def _chunk(cid: str, text: str, **metadata: object) -> Document:
    return Document(cid, "", text, {"source": "d", **metadata})


def test_a_given_start_anchors_the_chunk_without_the_source() -> None:
    found = corpus_anchors({"c": _chunk("c", "two.", start=4), "plain": Document("plain")})
    assert found.anchors == {"c": Anchor("d", 4, 8, span_hash("two."))}
    assert found.unanchored == ()
    assert found.chunked


def test_a_corpus_without_sources_is_not_chunked() -> None:
    assert not corpus_anchors({"p": Document("p", "", "text")}).chunked


def test_containment_follows_the_chunk_order_of_each_source() -> None:
    corpus = {
        "c0": _chunk("c0", "one two."),
        "c1": _chunk("c1", "one two."),  # the same words again: the second occurrence
        "c2": _chunk("c2", "three."),
        "c3": _chunk("c3", "one"),  # behind the previous chunk: anywhere, the first
    }
    anchors = corpus_anchors(corpus, DOCUMENTS).anchors
    assert [(a.start, a.end) for a in anchors.values()] == [(0, 8), (9, 17), (18, 24), (0, 3)]


def test_text_the_source_lacks_or_no_source_text_is_unanchored() -> None:
    corpus = {"c0": _chunk("c0", "four."), "c1": _chunk("c1", "two"), "c2": _chunk("c2", "")}
    assert corpus_anchors(corpus, DOCUMENTS).unanchored == ("c0", "c2")
    assert corpus_anchors(corpus).unanchored == ("c0", "c1", "c2")
    assert corpus_anchors(
        {"x": Document("x", "", "t", {"source": "gone"})}, DOCUMENTS
    ).unanchored == ("x",)


def test_a_start_that_is_not_the_sources_text_there_is_an_input_error() -> None:
    with pytest.raises(
        InputError,
        match=r"corpus.jsonl: chunk 'c': its text is not the text of source 'd' at start 5",
    ):
        corpus_anchors({"c": _chunk("c", "two.", start=5)}, DOCUMENTS, source="corpus.jsonl")


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"source": 7}, "source"),
        ({"source": ""}, "source"),
        ({"source": "x" * 1001}, "source"),
        ({"source": ["d"]}, "source"),
        ({"source": "d", "start": -1}, "start"),
        ({"source": "d", "start": True}, "start"),
        ({"source": "d", "start": 1.5}, "start"),
        ({"source": "d", "start": math.nan}, "start"),
        ({"source": "d", "start": math.inf}, "start"),
        ({"source": "d", "start": "4"}, "start"),
        ({"source": "d", "start": {"a": [[[]]]}}, "start"),
    ],
)
def test_bad_metadata_is_an_input_error_naming_the_chunk_and_field(
    metadata: dict[str, object], field: str
) -> None:
    with pytest.raises(
        InputError, match=rf"^corpus.jsonl: chunk 'c\\x1b::error::x': metadata.{field} must"
    ):
        corpus_anchors(
            {"c": Document("c\x1b::error::x", "", "two.", metadata)}, source="corpus.jsonl"
        )


def test_hostile_text_anchors_as_any_other() -> None:
    text = "::error::x\x00\u202e"
    source = {"d": Document("d", "", "pre " + text)}
    assert corpus_anchors({"c": _chunk("c", text)}, source).anchors["c"].start == 4


def test_a_missing_documents_file_is_an_input_error_naming_the_field(tmp_path: Path) -> None:
    text = (
        (CONFIGS / "example-chunked.yaml")
        .read_text()
        .replace("documents: example/corpus.jsonl", "documents: example/nowhere.jsonl")
    )
    (tmp_path / "gate.yaml").write_text(text)
    shutil.copytree(CONFIGS / "example-chunked", tmp_path / "example-chunked")
    shutil.copytree(CONFIGS / "example", tmp_path / "example")
    code, _, err = run_cli("run", "-c", tmp_path / "gate.yaml", "--no-cache", "--quiet")
    assert code == 2
    assert "dataset.documents: " in err
    assert "nowhere.jsonl does not exist" in err


def test_an_unknown_level_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    text = (
        (CONFIGS / "example-chunked.yaml")
        .read_text()
        .replace("level: document", 'level: "::error::para\\u001b"')
    )
    (tmp_path / "gate.yaml").write_text(text)
    code, _, err = run_cli("lint", "-c", tmp_path / "gate.yaml")
    assert code == 2
    assert "dataset.level" in err
    assert not any(line.lstrip().startswith("::") for line in err.splitlines())
    assert "\x1b" not in err
