"""The console summary of a gate result: verdict first, failing checks, the metric table."""

from __future__ import annotations

from retrieval_gate.compare import Comparison
from retrieval_gate.gate import GateResult, QueryChange
from retrieval_gate.wording import aligned, plural

SLICE_ROWS = 12
"""Non-overall rows shown in the table besides failures; the JSON result has all of them."""


def format_summary(result: GateResult) -> str:
    """A plain-text summary for terminals and CI logs (ASCII only)."""
    lines = [_headline(result), ""]
    if result.failures:
        lines.append("failed checks:")
        lines += [f"  x {_sentence(c)}" for c in result.failures]
        lines.append("")
    lines += _table(result)
    small = [c for c in result.comparisons if not c.gated and c.slice != "all"]
    if small:
        names = sorted({f"{c.slice} ({c.reason})" for c in small})
        lines += ["", f"not gated ({len(names)} slices too small): " + "; ".join(names[:8])]
    weak = [
        f"{c.metric} on {c.slice} detects {c.mde * 100:.1f}pt, needs {c.queries_needed} "
        f"queries for {c.max_drop * 100:g}pt"
        for c in result.comparisons
        if c.gated
        and c.verdict in ("pass", "noise")
        and c.max_drop is not None
        and c.mde is not None
        and c.mde > c.max_drop
    ]
    if weak:
        lines.append("too few queries to enforce the threshold: " + "; ".join(weak[:6]))
    if result.query_changes:
        lines += ["", f"most regressed queries ({result.query_changes[0].metric}):"]
        lines += [_query_line(change) for change in result.query_changes]
    if result.hits_lost or result.hits_gained:
        lines.append(
            f"top-k hits lost: {len(result.hits_lost)} queries"
            + (f" ({', '.join(result.hits_lost[:5])})" if result.hits_lost else "")
            + f"; gained: {len(result.hits_gained)}"
        )
    return "\n".join(lines).rstrip() + "\n"


def _headline(result: GateResult) -> str:
    if result.failures:
        worst = result.failures[0]
        return (
            f"retrieval-gate {result.name}: FAIL, {plural(len(result.failures), 'failing check')}"
            f"; worst: {_sentence(worst)}"
        )
    noise = [c for c in result.comparisons if c.gated and c.verdict == "noise"]
    note = f" ({len(noise)} drops past the threshold without significance)" if noise else ""
    return f"retrieval-gate {result.name}: PASS{note}"


def _sentence(c: Comparison) -> str:
    where = "" if c.slice == "all" else f" on {c.slice}"
    p = f", p={c.p_adjusted:.3g}" if c.p_adjusted is not None else ""
    if c.verdict == "below_floor":
        return f"{c.metric}{where} is {c.current_mean:.4f}, below its floor {c.floor:g}"
    change = "fell" if c.delta < 0 else "rose"
    return f"{c.metric}{where} {change} {abs(c.delta) * 100:.1f}pt ({c.verdict}{p})"


def _table(result: GateResult) -> list[str]:
    overall = [c for c in result.comparisons if c.slice == "all"]
    others = [c for c in result.comparisons if c.slice != "all" and c.verdict != "pass"]
    rows = [["metric", "slice", "n", "baseline", "current", "delta pt", "95% CI", "p", "verdict"]]
    for c in [*overall, *others[:SLICE_ROWS]]:
        p = c.p_adjusted if c.p_adjusted is not None else c.p_value
        rows.append(
            [
                c.metric,
                c.slice,
                str(c.n),
                f"{c.baseline_mean:.4f}",
                f"{c.current_mean:.4f}",
                f"{c.delta * 100:+.2f}",
                f"[{c.ci_low * 100:+.2f}, {c.ci_high * 100:+.2f}]",
                "-" if p is None else f"{p:.3g}",
                c.verdict + ("" if c.gated else " (not gated)"),
            ]
        )
    lines = aligned(rows)
    hidden = len(others) - SLICE_ROWS
    if hidden > 0:
        lines.append(f"... and {hidden} more slice rows in the JSON result")
    return lines


def _query_line(change: QueryChange) -> str:
    text = change.text if len(change.text) <= 60 else change.text[:57] + "..."
    moves = "; ".join(
        f"{m.doc_id}: {_rank(m.before)} -> {_rank(m.after)}" for m in change.moves[:4]
    )
    return f"  {change.query_id} {text!r}: {change.before:.3f} -> {change.after:.3f}" + (
        f" ({moves})" if moves else ""
    )


def _rank(rank: int | None) -> str:
    return "out of top k" if rank is None else f"rank {rank}"
