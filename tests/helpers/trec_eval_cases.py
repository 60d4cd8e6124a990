"""trec_eval's own test files: the qrels and run of each printed output, our measure names."""

from __future__ import annotations

import re
from pathlib import Path

from retrieval_gate.metrics import parse_metric

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "trec_eval_test"

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


def our_metric(measure: str, rel: int) -> str | None:
    """Our canonical metric name for a trec_eval measure, or None when we have no counterpart."""
    for pattern, template in MEASURES.items():
        match = re.fullmatch(pattern, measure)
        if match:
            suffix = f"(rel={rel})" if rel != 1 else ""
            return str(parse_metric(template.format(rel=suffix, k=match.groupdict().get("k"))))
    return None
