"""Lint rules on slicing: slices too small to gate, fields that cannot slice, slices that
repeat the overall check, none at all."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from retrieval_gate.core.wording import plural
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.slicing import (
    ALL,
    QUERY_LENGTH,
    check_slicing,
    query_length_label,
    same_as_all,
    slice_queries,
    small_slices,
)
from retrieval_gate.lint.engine import Draft, LintInput, rule, some

MAX_SLICE_VALUES = 20
"""A metadata field with more distinct values than this is an id or free text, not a slice."""


@rule("small-slice", "info", "slices below slices.min_size are reported, not gated")
def _small_slices(given: LintInput) -> Iterator[Draft]:
    slices = given.slices
    if slices is None:
        return
    again = set(same_as_all(slices))  # not reported at all: repeats-overall's
    small = {
        name: why
        for name, why in small_slices(slices, given.config.slices.min_size).items()
        if name not in again
    }
    if not small:
        return
    shown = [f"{name} ({len(slices[name])})" for name in small]
    yield Draft(
        f"{plural(len(small), 'slice')} below min_size {given.config.slices.min_size} "
        f"{'is' if len(small) == 1 else 'are'} reported but not gated: {some(shown)}",
        "label more queries of those slices, or lower slices.min_size if a smaller slice is "
        "still worth gating",
        given.at("slices", "min_size"),
    )


@rule("bad-slice", "error", "a slice field the queries cannot be sliced by")
def _bad_slice(given: LintInput) -> Iterator[Draft]:
    slicing = given.config.slices
    try:
        check_slicing(given.labels.queries, slicing.by, slicing.combine, slicing.query_length.bins)
    except GateError as error:
        yield Draft(str(error), "fix slices.by / slices.combine", given.at("slices"))


@rule("repeats-overall", "warning", "a slice holding every query repeats the overall check")
def _repeats_overall(given: LintInput) -> Iterator[Draft]:
    slices, dataset = given.slices, given.dataset
    if slices is None or dataset is None:
        return
    again = same_as_all(slices)
    if not again:
        return
    slicing = given.config.slices
    queries, bins = dataset.queries, slicing.query_length.bins
    total = plural(len(queries), "query", "queries")
    why = "it repeats the overall check, so `check` leaves it out"
    dimensions: list[tuple[str, tuple[str, ...]]] = [("by", (field,)) for field in slicing.by]
    dimensions += [("combine", tuple(group)) for group in slicing.combine]
    explained: set[str] = set()
    for key, group in dimensions:
        by, combine = (group, []) if key == "by" else ([], [group])
        names = [name for name in slice_queries(queries, by, combine, bins) if name != ALL]
        if len(names) != 1 or names[0] not in again or names[0] in explained:
            continue
        explained.add(names[0])
        named = group[0] if key == "by" else f"[{', '.join(group)}]"
        fix = f"remove {named} from slices.{key}"
        if group == (QUERY_LENGTH,):
            lengths = sorted(len(query.text.split()) for query in queries)
            span = f"{lengths[0]} to {lengths[-1]}" if lengths[0] != lengths[-1] else lengths[0]
            where = f" (they have {span} words)"
            split = _length_bins(lengths, bins)
            if split:
                fix += f", or split the queries by length: `slices.query_length.bins: {split}`"
        else:
            where = ""
        yield Draft(
            f"slices.{key}: {named} puts all {total} in one slice, {names[0]}{where}: {why}",
            fix,
            given.at("slices", key),
        )
    rest = [name for name in again if name not in explained]
    if rest:
        one = len(rest) == 1
        yield Draft(
            f"{plural(len(rest), 'slice')} {'holds' if one else 'hold'} all {total} (every "
            f"query has that value, among others): {some(rest)}; "
            f"{'it repeats' if one else 'each repeats'} the overall check, so `check` leaves "
            f"{'it' if one else 'them'} out",
            "nothing to change unless those values should not be on every query; the other "
            "slices of those fields are checked",
            given.at("slices"),
        )


def _length_bins(lengths: list[int], bins: list[int]) -> list[int] | None:
    """Bins that cut the sorted query `lengths` at their thirds, when those split them."""
    cuts = sorted({lengths[len(lengths) // 3], lengths[2 * len(lengths) // 3]} - {lengths[0]})
    if not cuts:
        return None
    split = [1, *cuts]
    labels = {query_length_label(length, split) for length in lengths}
    return split if len(labels) > 1 and split != bins else None


@rule("unsliced", "warning", "only the overall mean is gated though queries carry metadata")
def _unsliced(given: LintInput) -> Iterator[Draft]:
    slicing = given.config.slices
    if slicing.by or slicing.combine or given.dataset is None:
        return
    queries = given.dataset.queries
    fields: dict[str, set[str]] = {}
    present: Counter[str] = Counter()
    for query in queries:
        for field, value in query.metadata.items():
            if isinstance(value, str | int | bool) and not isinstance(value, float):
                fields.setdefault(field, set()).add(str(value))
                present[field] += 1
    candidates = [
        f"{field} ({len(values)} values)"
        for field, values in sorted(fields.items())
        if 2 <= len(values) <= MAX_SLICE_VALUES and present[field] * 2 >= len(queries)
    ]
    if not candidates:
        return
    names = [c.split(" ", 1)[0] for c in candidates]
    yield Draft(
        f"the queries carry {', '.join(candidates)}, but only the overall mean is gated: a "
        "drop on one of them can hide in the average",
        f"slice by them: `slices: {{by: [{', '.join(names)}]}}`",
        given.at("slices") if "slices" in given.config.model_fields_set else given.at(),
    )
