"""A generated labelled set of 240 queries, retrievers broken on purpose, and their config."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tests.helpers.cli import run_cli

QUERIES = 240

RETRIEVER = """\
import zlib

COUNT, RANK, BROKEN, WHERE = @COUNT@, @RANK@, @BROKEN@, "@WHERE@"


def search(query, k, metadata):
    # The relevant doc of query i is d<i>; a share of WHERE's queries ranks it at RANK.
    i = int(metadata["n"])
    docs = [f"d{(i + j) % COUNT}" for j in range(1, k)]
    broken = zlib.crc32(query.encode()) % 100 < BROKEN and metadata["intent"] == WHERE
    docs.insert(RANK if broken else 0, f"d{i}")
    return docs[:k]
"""


NOISY_RETRIEVER = """\
import itertools


class Noisy:
    # Each instance is one run: every other run loses the relevant document of every query
    # whose number is a multiple of 7 (run-wide), and each run shuffles ranks 5-9 its own way
    # (per query). Runs are numbered, not drawn at random, so that any three runs of a side
    # differ run-wide and a test of the noise never depends on luck.
    runs = itertools.count()

    def __init__(self):
        self.seed = next(Noisy.runs)
        self.lossy = self.seed % 2 == 0

    def search(self, query, k, metadata):
        i = int(metadata["n"])
        docs = [f"d{(i + j) % @COUNT@}" for j in range(1, k)]
        if not (self.lossy and i % 7 == 0):
            docs.insert(0, f"d{i}")
        tail = sorted(docs[5:], key=lambda d: hash((self.seed, d)))
        return (docs[:5] + tail)[:k]
"""
"""A retriever whose runs differ, as a class (one instance a run): run-wide and per query."""


def make_set(root: Path) -> None:
    """QUERIES queries in three intents, query i judging d<i> 2 and d<i+7> 1."""
    rnd = random.Random(0)
    intents = ["billing", "how-to", "troubleshooting"]
    with (root / "queries.jsonl").open("w") as handle:
        for i in range(QUERIES):
            row = {
                "id": f"q{i:03d}",
                "text": " ".join(
                    rnd.choice(["reset", "invoice", "sso", "api", "plan"]) for _ in range(1 + i % 5)
                ),
                "intent": intents[i % 3],
                "n": i,
                "qrels": {f"d{i}": 2, f"d{(i + 7) % QUERIES}": 1},
            }
            handle.write(json.dumps(row) + "\n")


def write_retriever(
    root: Path, name: str, broken: int, rank: int = 6, where: str = "billing"
) -> None:
    """RETRIEVER as `name.py`, ranking d<i> at `rank` on `broken`% of `where`'s queries."""
    code = RETRIEVER.replace("@COUNT@", str(QUERIES)).replace("@RANK@", str(rank))
    code = code.replace("@BROKEN@", str(broken)).replace("@WHERE@", where)
    (root / f"{name}.py").write_text(code)


CONFIG = """\
version: 1
name: generated
dataset: {{queries: queries.jsonl}}
retriever: {{type: python, target: "{target}:search"}}
k: {k}
metrics:
  ndcg@10: {{max_drop: 2pt}}
  recall@10: {{max_drop: 5pt}}
slices:
  by: [intent, query_length]
  min_size: 30
gate: {{resamples: 2000}}
"""


def write_config(root: Path, target: str, k: int = 10, name: str = "gate.yaml") -> Path:
    path = root / name
    path.write_text(CONFIG.format(target=target, k=k))
    return path


def make_project(root: Path) -> Path:
    """A labelled set of QUERIES queries, three retrievers and a baseline of the good one."""
    make_set(root)
    write_retriever(root, "good_search", broken=0)
    write_retriever(root, "worse_search", broken=60)
    write_retriever(root, "slightly_search", broken=3)
    config = write_config(root, "good_search")
    code, out, err = run_cli("baseline", "-c", str(config), "--quiet")
    assert code == 0, err
    assert "wrote" in out
    return root
