"""An example retriever for python.yaml: keyword overlap (idf-weighted) over the tiny corpus.

retrieval-gate imports it as `my_retriever:search` (the config's folder is importable) and
calls `search(query, k, metadata)` once per labelled query, from several threads at once.
Replace the body with a call to your own search; return the top k documents, best first, as
doc ids, (doc id, score) pairs or {"id": ..., "score": ...} dicts. The other examples here
(my_command.py, my_server.py, my_langchain.py, ...) wrap this same function.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "tiny" / "corpus.jsonl"
WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("a an and are can do for how i in is it my of on the to up we with".split())  # noqa: SIM905


def words(text: str) -> set[str]:
    """The distinct lower-cased words of `text` without stopwords, plurals made singular."""
    found = {word for word in WORD.findall(text.lower()) if word not in STOPWORDS}
    return {word[:-1] if len(word) > 3 and word.endswith("s") else word for word in found}


def _read(path: Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Each document's text (title and body) and its words, from a BEIR corpus.jsonl."""
    texts: dict[str, str] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                texts[str(row["_id"])] = f"{row.get('title', '')} {row.get('text', '')}".strip()
    return texts, {doc: words(text) for doc, text in texts.items()}


# Read once, at import: the retriever is built before the first query, then only read.
TEXTS, WORDS = _read(CORPUS)
IDF = {
    word: math.log(1 + len(WORDS) / count)
    for word, count in Counter(word for bag in WORDS.values() for word in bag).items()
}


def search(query: str, k: int, metadata: dict[str, Any]) -> list[tuple[str, float]]:
    """The top `k` (doc id, score) pairs for `query`: the summed idf of the query words a
    document contains; documents sharing no word are left out. Ties go to the larger doc id,
    as trec_eval breaks them, so the order returned and the order scored agree.

    `metadata` holds the query's other fields (intent, segment, ...): a real retriever
    might pick a tenant's index with it. This one ignores it.
    """
    terms = words(query)
    scored = [(doc, round(sum(IDF[word] for word in terms & bag), 6)) for doc, bag in WORDS.items()]
    return sorted(
        (pair for pair in scored if pair[1] > 0), reverse=True, key=lambda p: (p[1], p[0])
    )[:k]
