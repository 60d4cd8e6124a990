"""The per-query differences `power` reads its spread from: a saved run, or main's history."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.record import Baseline, some_of
from retrieval_gate.gate.power.spread import DeltaSource
from retrieval_gate.history.record import Entry, ResultEntry

HISTORY_PAIRS = 20
"""Main's newest pairs of consecutive records pooled: the recent merges, not the project's
whole past."""

Side = tuple[dict[str, FloatArray], dict[str, FloatArray]]
"""Two records' scores of the same queries, in the same order: (before, after)."""


def run_source(
    config: GateConfig, baseline: Baseline, path: str | Path, option: str = "--run"
) -> tuple[DeltaSource, list[str]]:
    """The differences between the run at `path` and `baseline`, query by query: a run file
    scored on the config's labelled set now, or a baseline or `check` JSON result (its
    record); and the scoring's warnings (queries the run misses score 0). Raises InputError
    (exit 2) naming `path` when it pairs another query set, k or metrics with the baseline."""
    from retrieval_gate.gate.baseline.file import read_record

    path = Path(path)
    warnings: list[str] = []
    if _is_json(path, option):
        record = read_record(path)
    else:
        from retrieval_gate.pipeline.record import record_current

        scored = record_current(config, run_path=path, cache=False)
        record, warnings = scored.record, [f"{option} {path}: {w}" for w in scored.warnings]
    if record.fingerprints.k != baseline.fingerprints.k:
        raise InputError(
            f"{option} {path}: scored at k {record.fingerprints.k}, the baseline at k "
            f"{baseline.fingerprints.k}: their differences are not a change's; give a run of k "
            f"{baseline.fingerprints.k}"
        )
    missing = [m for m in baseline.scores if m not in record.scores]
    if missing:
        raise InputError(
            f"{option} {path}: has no scores of {', '.join(missing)}, which the baseline has; "
            "score it with this config"
        )
    lacking = sorted(set(baseline.query_ids) - set(record.query_ids))
    if lacking:
        raise InputError(
            f"{option} {path}: pairs another query set with the baseline: "
            f"{plural(len(lacking), 'query', 'queries')} of the baseline's "
            f"{len(baseline.query_ids)} missing ({some_of([one_line(q) for q in lacking])}); "
            "give a run of the same labelled set"
        )
    side = _sides(baseline, record, baseline.query_ids)
    return DeltaSource(
        kind="run",
        label=str(path),
        query_ids=tuple(baseline.query_ids),
        pairs=(_differences(side),),
        sides=(side,),
    ), warnings


def history_source(
    entries: Iterable[Entry], dataset: Dataset, baseline: Baseline
) -> tuple[DeltaSource | None, str]:
    """The differences between consecutive records of main made on the baseline's queries
    under the labelled set's judgments and the baseline's k and metrics (the newest
    HISTORY_PAIRS pairs that changed anything), and a note on what was left out; None when no
    such pair exists."""
    # Read one record at a time: the previous one and the newest pairs are all that is kept.
    pairs: deque[Side] = deque(maxlen=HISTORY_PAIRS)
    previous: Baseline | None = None
    unchanged = 0
    for entry in entries:
        if not isinstance(entry, ResultEntry):
            continue
        record = entry.record if _usable(entry.record, dataset, baseline) else None
        if previous is not None and record is not None:
            side = _sides(previous, record, baseline.query_ids)
            if any(np.any(values) for values in _differences(side).values()):
                pairs.append(side)
            else:
                unchanged += 1  # a merge that moved no score says nothing of a change's spread
        previous = record
    kept = list(pairs)
    note = ""
    if unchanged:
        note = f"{plural(unchanged, 'merge')} of main that changed no score left out"
    if not kept:
        return None, note
    label = f"{plural(len(kept), 'pair')} of consecutive records of main"
    return DeltaSource(
        kind="history",
        label=label,
        query_ids=tuple(baseline.query_ids),
        pairs=tuple(_differences(side) for side in kept),
        sides=tuple(kept),
    ), note


def _usable(record: Baseline, dataset: Dataset, baseline: Baseline) -> bool:
    """Whether `record` scored the baseline's queries, k and metrics under the labelled set's
    current judgments (a record under others would add their change to the differences)."""
    return (
        record.fingerprints.dataset == dataset.fingerprint
        and record.fingerprints.k == baseline.fingerprints.k
        and set(baseline.scores) <= set(record.scores)
        and set(baseline.query_ids) <= set(record.query_ids)
    )


def _sides(before: Baseline, after: Baseline, ids: Sequence[str]) -> Side:
    """`before`'s and `after`'s scores of every metric of `before`, on `ids` in that order."""
    first, second = _rows(before, ids), _rows(after, ids)
    return (
        {metric: np.asarray(before.scores[metric])[first] for metric in before.scores},
        {metric: np.asarray(after.scores[metric])[second] for metric in before.scores},
    )


def _differences(side: Side) -> dict[str, FloatArray]:
    """after minus before, metric by metric."""
    before, after = side
    return {metric: after[metric] - values for metric, values in before.items()}


def _rows(record: Baseline, ids: Sequence[str]) -> np.ndarray:
    position = {query_id: i for i, query_id in enumerate(record.query_ids)}
    return np.array([position[query_id] for query_id in ids], dtype=np.int64)


def _is_json(path: Path, option: str) -> bool:
    """Whether the file opens with `{` (a baseline or result; a run file never does)."""
    try:
        with regular_file(path).open("rb") as file:
            start = file.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except FileNotFoundError:
        raise InputError(f"{option} {path}: no such file") from None
    except OSError as error:
        raise InputError(f"{option} {path}: cannot read it: {error}") from None
    return start.startswith(b"{")
