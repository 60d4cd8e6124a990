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
    """The drift kind by definition, character by character. The anchor's identity is its
    text (source, length, hash): valid when the labelled chunk still holds it; re-anchorable
    when any chunk of the source is exactly it; else the text is looked for at every offset
    of the source as its chunks hold it (each character from a chunk covering it, or the
    source's whitespace there when `texts` has the source), the occurrence nearest the old
    start (then the earlier) taken: merged when a chunk holds it whole, else split."""
    if anchor is None:
        return "valid" if doc_id in chunks else "orphaned"
    size = anchor.end - anchor.start
    now = anchors.get(doc_id)
    if now is not None and (now.source, now.end - now.start, now.hash) == (
        anchor.source,
        size,
        anchor.hash,
    ):
        return "valid"
    mine = {c: a for c, a in anchors.items() if a.source == anchor.source}
    for chunk, a in mine.items():
        if a.end - a.start == size and span_hash(chunks[chunk].text) == anchor.hash:
            return "re-anchorable"
    text = texts.get(anchor.source)
    last = max((a.end for a in mine.values()), default=0)
    held: list[str | None] = []
    for position in range(last):
        char = None
        for chunk, a in mine.items():
            if a.start <= position < a.end:
                char = chunks[chunk].text[position - a.start]
        if char is None and text is not None and position < len(text) and text[position].isspace():
            char = text[position]
        held.append(char)
    found = [
        at
        for at in range(last - size + 1)
        if size > 0
        and None not in held[at : at + size]
        and span_hash("".join(c or "" for c in held[at : at + size])) == anchor.hash
    ]
    if not found:
        return "orphaned"
    s = min(found, key=lambda at: (abs(at - anchor.start), at))
    e = s + size
    for chunk, a in mine.items():
        inside = chunks[chunk].text[s - a.start : e - a.start]
        if a.start <= s and a.end >= e and span_hash(inside) == anchor.hash:
            return "merged"
    return "split"


def shifted(rng: random.Random, text: str) -> str:
    """`text` with 1-3 random stretches of 1-8 characters inserted at random offsets (before
    or after a label's text, or inside it): every later offset moves."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(text))
        text = text[:at] + random_text(rng, rng.randint(1, 8)) + text[at:]
    return text


def random_case(
    rng: random.Random,
) -> tuple[dict[str, Document], dict[str, Document], dict[str, Document], list[str]]:
    """An old chunking and a new one of 1-4 random texts (a source dropped at 15%; its
    characters replaced at 25%, stretches inserted at 25% (`shifted`); its text known at 50%;
    ids reused at 30%), and the labelled old chunks."""
    old: dict[str, Document] = {}
    new: dict[str, Document] = {}
    sources: dict[str, Document] = {}
    for n in range(rng.randint(1, 4)):
        source = f"s{n}"
        text = random_text(rng, rng.randint(5, 60))
        old |= random_chunks(rng, source, text, "old-", gaps=False)
        if rng.random() < 0.15:
            continue  # the source is gone
        draw = rng.random()
        now = edited(rng, text) if draw < 0.25 else shifted(rng, text) if draw < 0.5 else text
        if rng.random() < 0.5:  # its text known: whitespace between chunks is no loss
            sources[source] = Document(source, "", now)
        # Same ids on both sides in some cases: a chunk id says nothing of its text.
        new |= random_chunks(rng, source, now, "old-" if rng.random() < 0.3 else "new-", gaps=True)
    labelled = rng.sample(sorted(old), k=rng.randint(1, len(old)))
    return old, new, sources, labelled


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


def billing_only(root: Path, judged: dict[str, set[str]]) -> tuple[list[dict[str, Any]], set[str]]:
    """The example's queries (under `root`) and the documents only billing questions judged
    relevant (`judged`: document -> the queries that judged it relevant): the text a re-chunk
    loses to fail exactly those queries' slices."""
    text = (root / "example" / "queries.jsonl").read_text(encoding="utf-8")
    queries = [json.loads(line) for line in text.splitlines()]
    intent = {q["_id"]: q["intent"] for q in queries}
    lost = {doc for doc, by in judged.items() if {intent[q] for q in by} == {"billing"}}
    return queries, lost


def failing_slices(queries: list[dict[str, Any]], hit: set[str], failing: set[str]) -> bool:
    """Whether the `failing` slices are `intent=billing` and slices holding a query of `hit`
    only, with no other intent among them."""
    members: dict[str, set[str]] = {"all": {q["_id"] for q in queries}}
    for q in queries:
        for field in ("intent", "segment"):
            members.setdefault(f"{field}={q[field]}", set()).add(q["_id"])
    return (
        "intent=billing" in failing
        and all(members[name] & hit for name in failing)
        and not any(name.startswith("intent=") and name != "intent=billing" for name in failing)
    )


def judged_relevant(root: Path) -> dict[str, set[str]]:
    """The example's (under `root`) documents judged relevant, each with the queries that
    judged it so."""
    judged: dict[str, set[str]] = {}
    rows = (root / "example" / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    for line in rows[1:]:
        query, doc, grade = line.split("\t")
        if int(grade) >= 1:
            judged.setdefault(doc, set()).add(query)
    return judged
