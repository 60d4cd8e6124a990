"""A metric's trend on the main branch, read from the history for a pull request's check."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from retrieval_gate.config.check_keys import canonical_name
from retrieval_gate.history.record import Entry, ResultEntry, TrendPoint
from retrieval_gate.history.store import HistorySource, iter_history


def load_trend(
    history_source: HistorySource, config_name: str, metric: str, last_n: int
) -> list[TrendPoint]:
    """The last `last_n` results of `config_name` in `history_source`, oldest first, as
    (commit, pr, time, mean of `metric`) points; records without the metric are skipped.

    `history_source` is a JSON Lines file, a folder of them, or a `BranchSource` (a branch
    of a local clone: the local branch, else `origin/BRANCH` as a pull request fetched it).
    An empty list when there is no history yet; an InputError for a corrupted one.
    """
    # Read one record at a time, keeping the newest points only.
    points = _points(iter_history(history_source, config_name), metric)
    return list(deque(points, maxlen=max(last_n, 0)))


def trend_points(entries: Iterable[Entry], metric: str) -> list[TrendPoint]:
    """(commit, pr, time, mean of `metric`) of each result in `entries`, in their order;
    results without the metric are skipped."""
    return list(_points(entries, metric))


def _points(entries: Iterable[Entry], metric: str) -> Iterator[TrendPoint]:
    name = canonical_name(metric)
    for entry in entries:
        if isinstance(entry, ResultEntry) and name in entry.means:
            yield TrendPoint(
                commit=entry.commit, pr=entry.pr, time=entry.time, value=entry.means[name]
            )
