"""Whether anything a record retrieved is known: a run of unknown ids scores 0 and never fails."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping

from retrieval_gate.config.check_keys import kind_of
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import GateError

__all__ = ["only_labelled_checks", "unknown_retrieval", "unknown_sides"]

SHOWN = 3
"""Ids quoted as examples, of what was retrieved and of what was expected."""


def unknown_retrieval(
    top_k: Mapping[str, Iterable[str]],
    judged: Iterable[str],
    corpus: Mapping[str, object] | None,
) -> str | None:
    """What is wrong with a record that retrieved ids none of which is a document of the
    corpus or a judged one (a vector store read without its id field returns its own
    `chunk-N` ids); None when any retrieved id is known, or nothing was retrieved, or there
    is no corpus to tell an unknown id from a real document nobody judged.

    Every metric of such a record is 0 for every query: a baseline made of it passes
    whatever changes. `judged` is read only when no retrieved id is in the corpus (the usual
    case is decided by the first id)."""
    if corpus is None or not list(itertools.islice(_ids(top_k), 1)):
        return None
    if any(doc in corpus for doc in _ids(top_k)):
        return None
    known = set(judged)
    if any(doc in known for doc in _ids(top_k)):
        return None
    count = len(set(_ids(top_k)))
    got = ", ".join(repr(doc) for doc in itertools.islice(dict.fromkeys(_ids(top_k)), SHOWN))
    expected = sorted(corpus)[:SHOWN]
    return (
        f"none of the {plural(count, 'document id')} retrieved ({got}, ...) is in the corpus "
        "or the judgments "
        f"(which name {', '.join(map(repr, expected))}, ...): every metric is 0 on every "
        "query. Make the retriever return the corpus's ids: a vector store's id_field (or "
        "index: {from: corpus}), a run file's doc column, or the adapter's id mapping"
    )


def only_labelled_checks(config: GateConfig) -> bool:
    """Whether every check of `config` scores ranked lists against the labels (none is
    latency, cost, an evaluator's score or a label-free check, which need no known id): the
    gate then cannot fail when no retrieved id is known."""
    kinds = {kind_of(key) for key in config.metrics}
    return config.unlabelled is None and kinds <= {"ranking", "candidates"}


def unknown_sides(
    reference: Mapping[str, Iterable[str]],
    current: Mapping[str, Iterable[str]],
    dataset: Dataset,
    config: GateConfig,
) -> tuple[str, ...]:
    """The warnings of a comparison one of whose sides retrieved no known id (its metrics all
    0: the drop or the gain is the ids', not the ranking's). A GateError when both did and
    every check scores against the labels: both sides constant, no check could ever fail."""
    judged, corpus = dataset.qrels.docs, dataset.corpus
    found = [
        (side, reason)
        for side, top_k in (("the reference", reference), ("the current run", current))
        if (reason := unknown_retrieval(top_k, judged, corpus))
    ]
    if len(found) == 2 and only_labelled_checks(config):
        raise GateError(
            f"both sides retrieved no known id, so no check can ever fail: {found[1][1]}"
        )
    return tuple(f"{side}: {reason}" for side, reason in found)


def _ids(top_k: Mapping[str, Iterable[str]]) -> Iterator[str]:
    for ids in top_k.values():
        yield from ids
