"""Small random qrels and runs with the cases scorers get wrong: ties, negative grades, odd ids."""

from __future__ import annotations

import numpy as np


def make_case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]], int]:
    """Small random qrels and run: ties, negative grades, empty rankings, odd ids."""
    rng = np.random.default_rng(seed)
    rel = int(rng.choice([1, 2]))
    # ids that sort differently as strings and as numbers ("d9" > "d10", "2" > "10")
    doc_style = str(rng.choice(["d{}", "{}", "mixed"]))
    qid_pool = rng.permutation(["1", "2", "10", "11", "100", "q9", "q10"])

    def doc_id(n: int) -> str:
        style = doc_style if doc_style != "mixed" else str(rng.choice(["d{}", "D{}", "{}"]))
        return style.format(n)

    score_mode = str(rng.choice(["tiny", "int", "float", "same"]))

    def score() -> float:
        if score_mode == "tiny":
            return float(rng.choice([0.0, 0.5, 1.0]))
        if score_mode == "int":
            return float(rng.integers(-2, 3))
        if score_mode == "float":
            return float(rng.normal())
        return 1.0

    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in qid_pool[: rng.integers(1, 5)]:
        pool = list(dict.fromkeys(doc_id(int(n)) for n in rng.choice(40, rng.integers(1, 30))))
        judged = pool[: rng.integers(1, len(pool) + 1)]
        grades = [-2, -1, 0] if rng.random() < 0.15 else [-2, -1, 0, 0, 0, 1, 1, 2, 3, 4]
        qrels[str(qid)] = {d: int(rng.choice(grades)) for d in judged}
        if max(qrels[str(qid)].values()) < 0:
            # trec_eval misbehaves when no grade is >= 0 (num_ret 0, even a crash with bpref)
            qrels[str(qid)][judged[0]] = 0
        presence = rng.random()
        if presence < 0.1:
            continue  # labelled query absent from the run
        retrieved = [] if presence < 0.15 else rng.permutation(pool)[: rng.integers(1, 31)]
        run[str(qid)] = {str(d): score() for d in retrieved}
    if rng.random() < 0.3:  # a query only the run has
        run["x7"] = {doc_id(1): 1.0, doc_id(2): 0.5}
    if rng.random() < 0.03:
        run = {}
    return qrels, run, rel


def truncated(run: dict[str, dict[str, float]], k: int) -> dict[str, dict[str, float]]:
    """The top k of each ranking, ordered as trec_eval orders: score desc, then doc id desc."""
    out = {}
    for qid, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        out[qid] = dict(ranked[:k])
    return out
