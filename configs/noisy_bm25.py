"""An example nondeterministic retriever: the bundled BM25 with seeded run-to-run noise."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from retrieval_gate.adapters.bm25 import BM25Retriever
    from retrieval_gate.core.model import Document

HERE = Path(__file__).resolve().parent
SEED_VARIABLE = "NOISY_BM25_SEED"
"""The environment variable read for the seed when none is given."""


class BM25Index:
    """The deterministic part, built once: bm25 over a corpus; candidates(query, n) -> list of
    (doc_id, score) best first.

    It is the gate's built-in `bm25` retriever with its default settings (English stemming
    and stopwords, title and text), so its hits are exactly those of `retriever: {type: bm25}`:
    only documents sharing a term with the query, score descending, doc id descending on ties.
    Thread-safe (the built-in retriever scores under a lock)."""

    def __init__(self, corpus: Mapping[str, Document]) -> None:
        from retrieval_gate.adapters.bm25 import BM25Config, BM25Retriever

        self._retriever: BM25Retriever = BM25Retriever(BM25Config(), corpus=corpus)
        self.ids: tuple[str, ...] = tuple(sorted(corpus))
        """Every doc id of the corpus, sorted (the order the lost docs are drawn from)."""

    @classmethod
    def from_jsonl(cls, path: str | Path) -> BM25Index:
        """The index of a BEIR `corpus.jsonl` (`{"_id", "title", "text"}` per line)."""
        from retrieval_gate.datasets.files import read_corpus

        return cls(read_corpus(Path(path)))

    @classmethod
    def from_documents(cls, docs: Mapping[str, tuple[str, str]]) -> BM25Index:
        """The index of `docs`: doc id -> (title, text)."""
        from retrieval_gate.core.model import Document

        return cls({doc: Document(doc, title, text) for doc, (title, text) in docs.items()})

    def candidates(self, query: str, n: int) -> list[tuple[str, float]]:
        """The top `n` BM25 hits for `query` as (doc_id, score), best first."""
        return self.candidates_batch([query], n)[0]

    def candidates_batch(self, queries: Sequence[str], n: int) -> list[list[tuple[str, float]]]:
        """`candidates` for each query, in order (one tokenizer call for all of them)."""
        from retrieval_gate.core.model import Query

        found = self._retriever.search_batch([Query(str(i), q) for i, q in enumerate(queries)], n)
        return [[(hit.doc_id, float(hit.score or 0.0)) for hit in hits] for hits in found]

    def __len__(self) -> int:
        return len(self.ids)


class NoisyBM25:
    """BM25 that answers a little differently on every run, like an approximate (ANN) index
    or a service whose replicas disagree: an example for the gate's noise probe.

    Each instance is one "run", fixed by its seed. Knobs:

    - `seed`: picks the run. When None, the environment variable NOISY_BM25_SEED (an int
      >= 0) is used; when that is unset too, a fresh random seed, so every new instance
      (every gate run) is a different run. Give a seed (or set the variable) to replay a run
      exactly; give different seeds to simulate repeated runs. The seed used is `self.seed`.
    - `jitter`: per query, every candidate's score is multiplied by (1 + jitter * N(0, 1)),
      with a random generator seeded from (seed, sha256 of the query text), so the same query
      gets the same noise within a run whatever the call order, threads or batching. Ties
      (equal perturbed scores) are broken at random by the same generator. 0 turns the
      jitter off (ties are still broken at random).
    - `lost`: the share of the corpus (rounded to a whole number of docs) that this run
      cannot see at all, chosen once per run from the seed: 0 loses nothing. A fixed share
      loses other docs in each run, but each query's loss is its own, so the run's mean
      moves little. A pair [low, high] draws the share itself per run, uniformly: an index
      whose recall varies from build to build, which moves every query of a run at once
      (the run-wide noise a gate must allow for).
    - `candidates`: how many of the best BM25 hits (after removing lost docs) are re-scored
      per query; at least k are. A doc beyond them cannot jitter its way into the top k.
    - `corpus`: the BEIR corpus.jsonl to index, relative to this file's folder unless
      absolute; ignored when `index` is given.
    - `index`: a prebuilt BM25Index, shared by many runs so a simulation indexes once:
      `NoisyBM25(seed=s, index=shared)`.

    With jitter=0 and lost=0 the hits are those of the built-in bm25 retriever, and differ
    only in the order of docs with exactly equal scores."""

    def __init__(
        self,
        corpus: str = "example/corpus.jsonl",
        seed: int | None = None,
        jitter: float = 0.05,
        lost: float | Sequence[float] = 0.03,
        candidates: int = 100,
        index: BM25Index | None = None,
    ) -> None:
        if not (jitter >= 0 and np.isfinite(jitter)):
            raise ValueError(f"jitter must be a finite number >= 0, not {jitter!r}")
        low, high = (lost, lost) if isinstance(lost, (int, float)) else tuple(lost)
        if not 0 <= low <= high <= 1:
            raise ValueError(
                f"lost must be a share between 0 and 1, or a pair [low, high], not {lost!r}"
            )
        if candidates < 1:
            raise ValueError(f"candidates must be at least 1, not {candidates!r}")
        self.seed: int = _pick_seed(seed)
        self.jitter = float(jitter)
        self.candidates = int(candidates)
        if index is None:
            path = Path(corpus).expanduser()
            index = BM25Index.from_jsonl(path if path.is_absolute() else HERE / path)
        self.index = index
        rng = np.random.default_rng(self.seed)
        self.lost_share = float(low if low == high else rng.uniform(low, high))
        """The share of the corpus this run lost."""
        count = max(0, round(self.lost_share * len(index.ids)))
        chosen = rng.choice(len(index.ids), size=count, replace=False)
        self.lost: frozenset[str] = frozenset(index.ids[i] for i in chosen.tolist())
        """The doc ids this run never returns."""

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The top `k` (doc_id, score) for `query` in this run, best first."""
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: list[str], k: int) -> list[list[tuple[str, float]]]:
        """`search` for each query, in order; the same results as one call per query."""
        if k <= 0:
            return [[] for _ in queries]
        pool = max(self.candidates, k)
        found = self.index.candidates_batch(queries, pool + len(self.lost))
        pairs = zip(queries, found, strict=True)
        return [self._rerank(query, hits, pool, k) for query, hits in pairs]

    def _rerank(
        self, query: str, hits: list[tuple[str, float]], pool: int, k: int
    ) -> list[tuple[str, float]]:
        kept = [hit for hit in hits if hit[0] not in self.lost][:pool]
        if not kept:
            return []
        digest = hashlib.sha256(query.encode("utf-8")).digest()
        rng = np.random.default_rng([self.seed, int.from_bytes(digest, "big")])
        scores = np.array([score for _, score in kept], dtype=np.float64)
        perturbed = scores * (1.0 + self.jitter * rng.standard_normal(len(kept)))
        tie_keys = rng.random(len(kept))
        order = np.lexsort((tie_keys, -perturbed))[:k]  # the last key sorts first
        return [(kept[i][0], float(perturbed[i])) for i in order.tolist()]


def _pick_seed(seed: int | None) -> int:
    """`seed`, else NOISY_BM25_SEED, else a fresh random one; an int >= 0."""
    if seed is None:
        value = os.environ.get(SEED_VARIABLE, "").strip()
        if value:
            try:
                seed = int(value)
            except ValueError:
                raise ValueError(f"{SEED_VARIABLE}={value!r} is not an integer") from None
        else:
            seed = secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"the seed must be an integer >= 0, not {seed!r}")
    return int(seed)
