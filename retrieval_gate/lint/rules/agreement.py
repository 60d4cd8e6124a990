"""Lint rules on annotator agreement, when the qrels name who judged what."""

from __future__ import annotations

from collections.abc import Iterator

from retrieval_gate.core.wording import plural
from retrieval_gate.lint.engine import Draft, LintInput, rule, some


@rule("low-agreement", "warning", "annotators agree less than dataset.annotators.min_agreement",
      blocking=True)  # fmt: skip
def _low_agreement(given: LintInput) -> Iterator[Draft]:
    agreement = given.agreement
    if agreement is None:
        return
    settings = given.config.dataset.annotators
    floor = settings.min_agreement
    low_pairs = [
        f"{p.first}-{p.second} {p.kappa:.3f} ({p.shared} shared)"
        for p in agreement.pairs
        if p.shared and p.kappa == p.kappa and p.kappa < floor
    ]
    alpha_low = agreement.alpha == agreement.alpha and agreement.alpha < floor
    if not alpha_low and not low_pairs:
        return
    parts = []
    if alpha_low:
        parts.append(
            f"Krippendorff's alpha ({agreement.level}) is {agreement.alpha:.3f} over "
            f"{plural(agreement.items, 'shared item')}, below {floor:g}"
        )
    if low_pairs:
        parts.append(
            f"Cohen's kappa ({agreement.weights} weights) below {floor:g}: {some(low_pairs)}"
        )
    enforced = settings.enforce and alpha_low
    yield Draft(
        "; ".join(parts)
        + (" (dataset.annotators.enforce: check refuses to gate)" if enforced else ""),
        "reconcile the grading guide with the annotators and re-judge the disagreements; a gate "
        "on labels people do not agree on measures the labels, not the retriever",
        given.labels.judgments.source,
        "error" if enforced else None,
    )


@rule("agreement", "info", "inter-annotator agreement, when the qrels name annotators")
def _agreement(given: LintInput) -> Iterator[Draft]:
    agreement = given.agreement
    if agreement is None:
        return
    pairs = ", ".join(
        f"{p.first}-{p.second} {_kappa(p.kappa)} ({p.shared} shared)" for p in agreement.pairs
    )
    yield Draft(
        f"{plural(len(agreement.annotators), 'annotator')}; Krippendorff's alpha "
        f"({agreement.level}) {_kappa(agreement.alpha)} over "
        f"{plural(agreement.items, 'item')} judged twice or more; Cohen's kappa "
        f"({agreement.weights} weights) per pair: {pairs}",
        "nothing to do; several annotators' grades combine by dataset.annotators.combine "
        f"({given.config.dataset.annotators.combine})",
        given.labels.judgments.source,
    )


def _kappa(value: float) -> str:
    return "undefined" if value != value else f"{value:.3f}"
