"""Lint rules on slicing: slices too small to gate, fields that cannot slice, none at all."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from retrieval_gate.core.wording import plural
from retrieval_gate.errors import GateError
from retrieval_gate.gate.slicing import check_slicing, small_slices
from retrieval_gate.lint.engine import Draft, LintInput, rule, some

MAX_SLICE_VALUES = 20
"""A metadata field with more distinct values than this is an id or free text, not a slice."""


@rule("small-slice", "info", "slices below slices.min_size are reported, not gated")
def _small_slices(given: LintInput) -> Iterator[Draft]:
    slices = given.slices
    if slices is None:
        return
    small = small_slices(slices, given.config.slices.min_size)
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
