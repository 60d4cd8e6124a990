"""trec_eval's own test files: the qrels and run of each printed output, our measure names."""

from __future__ import annotations

import re
from pathlib import Path

from retrieval_gate.metrics import parse_metric
from tests.helpers.paths import SHARED_DATA

# trec_eval measure (regex, `k` is the cutoff) -> our metric; {rel} is "(rel=N)" or "".
MEASURES = {
    r"map": "ap{rel}",
    r"map_cut_(?P<k>\d+)": "ap{rel}@{k}",
    r"P_(?P<k>\d+)": "precision{rel}@{k}",
    r"recall_(?P<k>\d+)": "recall{rel}@{k}",
    r"Rprec": "r_precision{rel}",
    r"bpref": "bpref{rel}",
    r"recip_rank": "rr{rel}",
    r"ndcg": "ndcg(gain=linear)",
    r"ndcg_cut_(?P<k>\d+)": "ndcg(gain=linear)@{k}",
    r"success_(?P<k>\d+)": "hit_rate{rel}@{k}",
    r"num_rel": "num_rel{rel}",
    r"num_rel_ret": "num_rel_ret{rel}",
    r"num_ret": "num_ret",
}
COUNTS = {"num_rel", "num_rel_ret", "num_ret"}

# expected output -> (qrels, run, relevance level)
CASES = {
    "out.test.aq": ("qrels.test", "results.test", 1),
    "out.test.aqc": ("qrels.test", "results.trunc", 1),
    "out.test.aql": ("qrels.rel_level", "results.test", 2),
    "out.test.meas_params": ("qrels.test", "results.test", 1),
    "out.comment.test": ("qrels.comment.test", "results.comment.test", 1),
}


def at_collection() -> Path | None:
    """trec_eval_test's folder, to parametrize tests by its rows, or None when it is missing.
    Only collection reads it so: a test reads the files through the `trec_eval_test` fixture,
    which fails in CI (skips elsewhere) when ../shared is missing."""
    folder = SHARED_DATA / "trec_eval_test"
    return folder if folder.is_dir() else None


def our_metric(measure: str, rel: int) -> str | None:
    """Our canonical metric name for a trec_eval measure, or None when we have no counterpart."""
    for pattern, template in MEASURES.items():
        match = re.fullmatch(pattern, measure)
        if match:
            suffix = f"(rel={rel})" if rel != 1 else ""
            return str(parse_metric(template.format(rel=suffix, k=match.groupdict().get("k"))))
    return None
