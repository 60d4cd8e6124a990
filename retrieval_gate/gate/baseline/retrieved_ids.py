"""Whether anything a record retrieved is known: a run of unknown ids scores 0 and never fails."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping

from retrieval_gate.core.wording import plural

__all__ = ["unknown_retrieval"]

SHOWN = 3
"""Ids quoted as examples, of what was retrieved and of what was expected."""


def unknown_retrieval(
    top_k: Mapping[str, Iterable[str]],
    judged: Iterable[str],
    corpus: Mapping[str, object] | None,
) -> str | None:
    """Why a record can never fail a check, when it retrieved ids and not one of them is a
    document of the corpus or a judged one (a vector store read without its id field returns
    its own `chunk-N` ids); None when any retrieved id is known, or nothing was retrieved,
    or there is no corpus to tell an unknown id from a real document nobody judged.

    Every metric is then 0 for every query, on a baseline made of it and on any run compared
    with it: a gate at 0 passes whatever changes. `judged` is read only when no retrieved id
    is in the corpus (the usual case is decided by the first id)."""
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
        f"(which name {', '.join(map(repr, expected))}, ...): every metric is 0 on every query, "
        "so no check can ever fail. Make the retriever return the corpus's ids: a vector "
        "store's id_field (or index: {from: corpus}), a run file's doc column, or the "
        "adapter's id mapping"
    )


def _ids(top_k: Mapping[str, Iterable[str]]) -> Iterator[str]:
    for ids in top_k.values():
        yield from ids
