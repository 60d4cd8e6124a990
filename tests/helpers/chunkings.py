"""Seeded random chunkings of random texts, and a brute-force drift classification."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from retrieval_gate.core.model import Document
from retrieval_gate.datasets.anchors import Anchor, span_hash
from tests.helpers.paths import CONFIGS

ALPHABET = "ab c"
"""Few letters: repeated substrings, so text found by containment can sit in several places."""


def random_text(rng: random.Random, length: int) -> str:
    """A text of `length` characters from ALPHABET."""
    return "".join(rng.choice(ALPHABET) for _ in range(length))


def random_chunks(
    rng: random.Random, source: str, text: str, prefix: str, *, gaps: bool
) -> dict[str, Document]:
    """`text` cut at random into chunks (random sizes, overlaps and, with `gaps`, dropped
    stretches), each naming `source` and its start."""
    chunks: dict[str, Document] = {}
    at, number = 0, 0
    while at < len(text):
        size = rng.randint(1, 12)
        end = min(len(text), at + size)
        if not (gaps and rng.random() < 0.15):
            chunk_id = f"{prefix}{source}#{number}"
            chunks[chunk_id] = Document(chunk_id, "", text[at:end], {"source": source, "start": at})
            number += 1
        if rng.random() < 0.1 and end - at > 2:  # an extra chunk inside this one: merged targets
            inner = rng.randint(at, end - 1)
            chunk_id = f"{prefix}{source}#{number}"
            chunks[chunk_id] = Document(
                chunk_id, "", text[inner:end], {"source": source, "start": inner}
            )
            number += 1
        overlap = rng.randint(0, min(3, end - at - 1)) if rng.random() < 0.4 else 0
        at = end - overlap
    return chunks


def edited(rng: random.Random, text: str) -> str:
    """`text` with a few characters replaced (never its length changed)."""
    chars = list(text)
    for _ in range(rng.randint(0, 3)):
        if chars:
            chars[rng.randrange(len(chars))] = rng.choice("xyz")
    return "".join(chars)


def brute_force_kind(
    doc_id: str,
    anchor: Anchor | None,
    chunks: dict[str, Document],
    anchors: dict[str, Anchor],
    texts: dict[str, str],
) -> str:
    """The drift kind by definition, character by character: which chunks cover each
    character of the judged span and what text they hold there, or failing any, whether the
    source's text (when in `texts`) has whitespace there."""
    if anchor is None:
        return "valid" if doc_id in chunks else "orphaned"
    if anchors.get(doc_id) == anchor:
        return "valid"
    mine = {c: a for c, a in anchors.items() if a.source == anchor.source}
    s, e = anchor.start, anchor.end
    for chunk, a in mine.items():
        if (a.start, a.end) == (s, e) and span_hash(chunks[chunk].text) == anchor.hash:
            return "re-anchorable"
    for chunk, a in mine.items():
        inside = chunks[chunk].text[s - a.start : e - a.start]
        if a.start <= s and a.end >= e and span_hash(inside) == anchor.hash:
            return "merged"
    held: list[str | None] = []
    for position in range(s, e):
        char = None
        for chunk, a in mine.items():
            if a.start <= position < a.end:
                char = chunks[chunk].text[position - a.start]
        text = texts.get(anchor.source)
        if char is None and text is not None and position < len(text) and text[position].isspace():
            char = text[position]
        held.append(char)
    if None in held:
        return "orphaned"
    return "split" if span_hash("".join(c for c in held if c)) == anchor.hash else "orphaned"


CHUNKED_BASELINE = ".retrieval-gate/example-chunked/baseline.json"


def copy_chunked_example(target: Path) -> Path:
    """The chunked example (its two configs, corpora, labels and committed baseline) and the
    articles it is cut from copied into a new folder `target`."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("example-chunked.yaml", "example-chunked-pr.yaml"):
        shutil.copy(CONFIGS / name, target / name)
    for folder in ("example", "example-chunked"):
        shutil.copytree(
            CONFIGS / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    (target / CHUNKED_BASELINE).parent.mkdir(parents=True)
    shutil.copy(CONFIGS / CHUNKED_BASELINE, target / CHUNKED_BASELINE)
    return target


def corpus_rows(path: Path) -> list[dict[str, Any]]:
    """A corpus.jsonl's rows."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """`rows` as a corpus.jsonl at `path`."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
