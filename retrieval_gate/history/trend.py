"""A metric's trend on the main branch, read from the history for a pull request's check."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_gate.history.record import Entry, ResultEntry, TrendPoint
from retrieval_gate.history.store import HistorySource, read_history
from retrieval_gate.metrics import parse_metric


def load_trend(
    history_source: HistorySource, config_name: str, metric: str, last_n: int
) -> list[TrendPoint]:
    """The last `last_n` results of `config_name` in `history_source`, oldest first, as
    (commit, pr, time, mean of `metric`) points; records without the metric are skipped.

    `history_source` is a JSON Lines file, a folder of them, or a `BranchSource` (a branch
    of a local clone: the local branch, else `origin/BRANCH` as a pull request fetched it).
    An empty list when there is no history yet; an InputError for a corrupted one.
    """
    points = trend_points(read_history(history_source, config_name), metric)
    return points[-last_n:] if last_n > 0 else []


def trend_points(entries: Sequence[Entry], metric: str) -> list[TrendPoint]:
    """(commit, pr, time, mean of `metric`) of each result in `entries`, in their order;
    results without the metric are skipped."""
    name = str(parse_metric(metric))
    return [
        TrendPoint(entry.commit, entry.pr, entry.time, entry.means[name])
        for entry in entries
        if isinstance(entry, ResultEntry) and name in entry.means
    ]
