"""Run shards: the files a folder, a glob or a list names, and one shard read as a `Run`."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from retrieval_gate.core.ids import ByteIds, check_unique, object_array
from retrieval_gate.core.run import Run
from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import InputError
from retrieval_gate.readers import read_run

PARQUET_COLUMNS = ("qid", "docid", "score")
"""The columns a Parquet shard needs; a `rank` column may sit beside them (ranks come from
the scores, as trec_eval ranks, so it is not read)."""


def expand_shards(given: Sequence[str]) -> list[Path]:
    """The shard files `given` names, each a file, a folder (its files, sorted, but for hidden
    ones and `_` markers) or a quoted glob pattern; an error when one names nothing or a file
    is named twice."""
    found: list[Path] = []
    for item in given:
        path = Path(item)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            # Hidden files and `_` markers (Spark's _SUCCESS, Parquet's _metadata) are no shards.
            inside = sorted(p for p in path.iterdir() if p.is_file() and p.name[0] not in "._")
            if not inside:
                raise InputError("a folder of run shards holds no file", source=one_line(item))
            found += inside
        elif glob.has_magic(item):
            matched = sorted(Path(p) for p in glob.glob(item) if Path(p).is_file())
            if not matched:
                raise InputError("no run shard matches this pattern", source=one_line(item))
            found += matched
        else:
            raise InputError(
                "no such run shard (a file, a folder or a glob)", source=one_line(item)
            )
    seen: set[Path] = set()
    for path in found:
        if path.resolve() in seen:
            raise InputError("this run shard is named twice", source=one_line(path))
        seen.add(path.resolve())
    return found


def read_shard(path: Path, format: str | None = None) -> Run:
    """One shard: Parquet (by suffix or `format="parquet"`) or a run file `read_run` reads."""
    if format == "parquet" or (format is None and path.name.lower().endswith(".parquet")):
        return read_parquet_run(path)
    return read_run(path, format)


def read_parquet_run(path: Path) -> Run:
    """A run from a Parquet file with columns qid, docid and score (ids as text or integers)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as error:
        raise InputError(
            "reading Parquet needs pyarrow: pip install 'retrieval-gate[distributed]'",
            source=one_line(path),
        ) from error
    try:
        table = pq.read_table(path, columns=list(PARQUET_COLUMNS))
    except (pa.ArrowException, OSError) as error:
        raise InputError(
            f"cannot read it as Parquet with columns {', '.join(PARQUET_COLUMNS)}: "
            f"{one_line(error)}",
            source=one_line(path),
        ) from error
    for name in PARQUET_COLUMNS:
        if table.column(name).null_count:
            raise InputError(f"column {name} has empty (null) cells", source=one_line(path))
    try:
        qid = pc.cast(table.column("qid"), pa.large_string()).combine_chunks()
        docid = pc.cast(table.column("docid"), pa.large_string()).combine_chunks()
        score = pc.cast(table.column("score"), pa.float64()).to_numpy()
    except pa.ArrowException as error:
        raise InputError(
            f"qid and docid must be text or integers, score a number: {one_line(error)}",
            source=one_line(path),
        ) from error
    encoded = pc.dictionary_encode(qid)
    names = object_array(encoded.dictionary.to_pylist())
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    query = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    docs = _byte_ids(docid)
    source = str(path)
    check_unique(query, names[order], docs, source=source, lines=None, what="result")
    return Run(names[order], query, docs, np.asarray(score, dtype=np.float64), source=source)


def _byte_ids(column: object) -> ByteIds:
    """A large_string Arrow array's ids as `ByteIds`, sharing no Python object per row."""
    _, offsets, data = column.buffers()  # type: ignore[attr-defined]
    start = column.offset  # type: ignore[attr-defined]
    count = len(column)  # type: ignore[arg-type]
    bounds = np.frombuffer(offsets, dtype=np.int64)[start : start + count + 1]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return ByteIds(raw[int(bounds[0]) : int(bounds[-1])].copy(), bounds - bounds[0])
