"""Which judges graded the LLM labels a comparison uses (one, or a mix), and their families."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.core.model_families import model_family
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.wording import one_line
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings
from retrieval_gate.gate.modes.unvouched import unvouched


def pool_judges(
    graded_by: Mapping[tuple[str, str], JudgeIdentity], pool: Qrels, keep: np.ndarray
) -> tuple[tuple[JudgeIdentity, int], ...]:
    """The judges that graded (`graded_by`, per (query, doc)) the pairs of `pool` (the
    judge's pooled labels) of the queries `keep` marks, and how many pairs each, in the
    order of their identities."""
    if not graded_by:
        return ()
    ids = pool.query_ids.tolist()
    counts: dict[JudgeIdentity, int] = {}
    for q, d in zip(pool.query.tolist(), pool.docs.tolist(), strict=True):
        if keep[q]:
            found = graded_by.get((ids[q], d))
            if found is not None:
                counts[found] = counts.get(found, 0) + 1
    return tuple(sorted(counts.items(), key=lambda item: item[0].sort_key))


def mixed_judges(
    made: Sequence[Comparison],
    judges: Sequence[tuple[JudgeIdentity, int]],
    settings: ComparisonSettings,
) -> tuple[tuple[Comparison, ...], str]:
    """The assisted checks, each gated one inconclusive when `judges` are several (one
    estimate over two judges' labels measures neither), and the warning naming them; as
    they are, and "", for one judge."""
    if len(judges) < 2:
        return tuple(made), ""
    undecided = tuple(unvouched(c) if c.gated and c.verdict is not None else c for c in made)
    named = "; ".join(f"{who.describe()} on {pairs}" for who, pairs in judges)
    return undecided, (
        f"the judge's labels the LLM-assisted checks need were graded by {len(judges)} judges "
        f"({named} pairs): they are inconclusive, not decided on a mix; run `retrieval-gate "
        "judge` to grade the pairs again under the judge the endpoint answers with now"
    )


def same_family(config: GateConfig, judges: Sequence[str]) -> tuple[str, ...]:
    """The system's models (judge.system_models) that share a family with any of `judges`
    (the configured name, the models that answered), as "role model (family)"."""
    assert config.judge is not None
    theirs = {family for name in judges if name and (family := model_family(name))}
    named = config.judge.system_models.model_dump()
    return tuple(
        f"{role} {one_line(model)} ({family})"
        for role, model in named.items()
        if model and (family := model_family(model)) in theirs
    )
