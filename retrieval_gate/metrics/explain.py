"""What metric names mean across tools: a dialect's names as ours, and notes on differences."""

from __future__ import annotations

import re

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics.dialects import (
    DIALECTS,
    IR_MEASURES_EXAMPLES,
    RANX_EXAMPLES,
    RANX_REFUSED,
    TREC_EVAL,
    split_prefix,
    translate,
)
from retrieval_gate.metrics.parse import parse_metric


def mapping(dialect: str) -> list[tuple[str, str]]:
    """(tool name, our canonical name or why not) for the examples of `dialect`'s names."""
    if dialect == "trec_eval":
        examples = [e for rule in TREC_EVAL for e in rule.examples]
    elif dialect == "ir_measures":
        examples = [*IR_MEASURES_EXAMPLES, "ERR@10", "RBP(p=0.8)", "SDCG@10", "SetF"]
    elif dialect == "ranx":
        examples = [*RANX_EXAMPLES, *RANX_REFUSED]
    else:
        raise MetricError(f"unknown metrics dialect {dialect!r}; available: {', '.join(DIALECTS)}")
    rows = []
    for example in examples:
        try:
            rows.append((example, str(parse_metric(example, dialect=dialect))))
        except MetricError as error:
            rows.append((example, f"refused: {str(error).split(', but ', 1)[-1]}"))
    return rows


_OURS = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-]*)\s*(?:\((?P<params>[^()]*)\))?")


def notes(text: str, dialect: str | None = None) -> list[str]:
    """What to know about metric `text` as written: a deprecated alias, or a name whose
    meaning differs between us and the other tools. Empty for a name read in a dialect."""
    prefix, rest = split_prefix(text)
    if prefix is not None or (dialect is not None and translate(rest, dialect) is not None):
        return []
    spec = parse_metric(rest)
    match = _OURS.match(rest)
    raw = match["name"].lower().replace("-", "_") if match else ""
    explicit = "gain=" in (match["params"] or "").replace(" ", "").lower() if match else False
    found = []
    if raw == "hits":
        k = spec.k
        found.append(
            f"{rest.strip()} is deprecated: here hits is hit_rate (1 if any relevant doc is in "
            f"the top {k}); write hit_rate@{k}. ranx's hits@{k} is a count (relevant docs in the "
            f"top {k}): that is num_rel_ret@{k}, or write ranx:hits@{k}"
        )
    if spec.name in ("ndcg", "dcg") and not explicit:
        cut = "" if spec.k is None else f"@{spec.k}"
        theirs = (
            f"trec_eval's {spec.name}{'_cut_' + str(spec.k) if spec.k else ''}, "
            if spec.name == "ndcg"
            else ""
        )
        peers = (
            f"{theirs}ir_measures' nDCG{cut} and ranx's ndcg{cut}"
            if spec.name == "ndcg"
            else f"ranx's dcg{cut}"
        )
        found.append(
            f"{rest.strip()} uses exponential gain 2^g - 1 (our default); {peers} use linear "
            f"gain g: write {spec.name}(gain=linear){cut} for theirs, or "
            f"{spec.name}(gain=exp){cut} to pin ours (they differ only on grades above 1)"
        )
    return found
