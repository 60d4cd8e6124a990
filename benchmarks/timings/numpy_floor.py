"""The numpy floor: a TREC run's qid, docno and score columns into arrays, and nothing else."""
# bench_metrics.py times this whole process beside `retrieval-gate evaluate` on the same
# file: the cost of getting the bytes into arrays with plain numpy (issue 31's "floor").
# What it does: read the file 4 MiB at a time (cut at a line end), find every separator
# (bytes <= 32, np.flatnonzero), gather the qid and docno fields as fixed-width bytes
# through a strided view of the chunk (one copy per field), and convert the score field
# with numpy's own bytes-to-float64 conversion. It checks nothing and scores nothing.

from __future__ import annotations

import sys

import numpy as np
import numpy.typing as npt

CHUNK = 4 << 20
FIELDS = 6
QID, DOCNO, SCORE = 0, 2, 4


def field(
    chunk: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.bytes_]:
    """The fields as fixed-width bytes (zero-padded past each field's end)."""
    lengths = ends - starts
    width = int(lengths.max())
    padded = np.concatenate([chunk, np.zeros(width, dtype=np.uint8)])
    windows = np.lib.stride_tricks.as_strided(padded, shape=(len(chunk), width), strides=(1, 1))
    matrix = windows[starts]
    if not (lengths == width).all():
        matrix[np.arange(width) >= lengths[:, None]] = 0
    return matrix.view(f"S{width}").reshape(-1)


def read_columns(path: str) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    qids: list[np.ndarray] = []
    docs: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    tail = b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(CHUNK)
            if not block and not tail:
                break
            text = tail + block
            cut = text.rfind(b"\n") + 1 if block else len(text)
            if not block and not text.endswith(b"\n"):
                text, cut = text + b"\n", cut + 1
            chunk = np.frombuffer(text[:cut], dtype=np.uint8)
            tail = text[cut:]
            ends = np.flatnonzero(chunk <= 32).reshape(-1, FIELDS)
            starts = np.empty_like(ends)
            starts[:, 1:] = ends[:, :-1] + 1
            starts[0, 0] = 0
            starts[1:, 0] = ends[:-1, -1] + 1
            qids.append(field(chunk, starts[:, QID], ends[:, QID]))
            docs.append(field(chunk, starts[:, DOCNO], ends[:, DOCNO]))
            scores.append(field(chunk, starts[:, SCORE], ends[:, SCORE]).astype(np.float64))
            if not block:
                break
    return qids, docs, scores


def main(path: str) -> None:
    qids, docs, scores = read_columns(path)
    assert len(docs) == len(qids)
    rows = sum(map(len, qids))
    print(f"{rows} rows, score sum {sum(float(s.sum()) for s in scores):.6g}")


if __name__ == "__main__":
    # A usage line by hand: importing argparse would add to the floor this process times.
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(f"usage: numpy_floor.py RUN_FILE\n\n{__doc__}")
        raise SystemExit(0)
    main(sys.argv[1])
