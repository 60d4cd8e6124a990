"""Check columns of a retriever's first stage: `candidates:<metric>`, a metric of its candidates."""

from __future__ import annotations

from collections.abc import Iterable

from retrieval_gate.metrics import MetricSpec, parse_metric

STAGE = "candidates"
PREFIX = f"{STAGE}:"


def stage_metric(key: str) -> str | None:
    """The metric part of a `candidates:<metric>` check (`recall@100`), None for any other."""
    text = key.strip()
    return text[len(PREFIX) :].strip() if text.startswith(PREFIX) else None


def check_metric(key: str, dialect: str | None = None) -> tuple[MetricSpec, str]:
    """The metric a check key computes and the check's canonical name: `ndcg@10` for
    `NDCG@10`, `candidates:recall@100` for `candidates: recall@100` (the metric read as any
    other, dialect prefixes too). Raises MetricError."""
    metric = stage_metric(key)
    spec = parse_metric(key if metric is None else metric, dialect=dialect, in_config=True)
    return spec, str(spec) if metric is None else PREFIX + str(spec)


def candidates_checks(names: Iterable[str]) -> dict[str, MetricSpec]:
    """Canonical `candidates:` check name -> the metric it computes on the candidates, in the
    order given; the other names are left out."""
    found = {}
    for name in names:
        metric = stage_metric(name)
        if metric is not None:
            spec = parse_metric(metric)
            found[PREFIX + str(spec)] = spec
    return found
