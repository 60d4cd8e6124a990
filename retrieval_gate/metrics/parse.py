"""Reading metric names: `name(p=v)@k` in our spelling or another tool's, into specs."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics.dialects import foreign, possessive, refusal, split_prefix, translate
from retrieval_gate.metrics.spec import ALIASES, REGISTRY, Measure, MetricSpec, ParamValue

_SPEC = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-]*)\s*(?:\((?P<params>[^()]*)\))?\s*(?:@\s*(?P<k>[^\s]+))?\s*$"
)


def parse_metric(
    text: str | MetricSpec, *, dialect: str | None = None, in_config: bool = False
) -> MetricSpec:
    """The spec named by `text`, e.g. `NDCG@10`, `ndcg(gain=linear)@10`, `ap(rel=2)@100`.

    With `dialect` (trec_eval, ir_measures, ranx), or a `dialect:` prefix on `text`, a name
    of that tool is read with the tool's meaning: `trec_eval:ndcg_cut_10` is
    `ndcg(gain=linear)@10`. Without one, a name only another tool uses is refused with our
    spelling of it."""
    if isinstance(text, MetricSpec):
        return text
    if dialect is not None or ":" in text:
        prefix, rest = split_prefix(text)
        if prefix is not None or dialect is not None:
            ours = translate(rest, prefix or str(dialect))
            if ours is not None:
                try:
                    return _parse(ours)
                except MetricError as error:
                    raise MetricError(f"{text.strip()} (read as {ours}): {error}") from None
            text = rest
    try:
        return _parse(text)
    except MetricError as error:
        match = _SPEC.match(text)
        if match and _known(match["name"]):
            raise  # our name, wrongly written: our error says how
        found = foreign(text)
        if not found:
            refused = refusal(text)
            if refused is not None:
                raise refused from error
            raise
        # `metrics_dialect` is a config key: the command line takes the prefix alone.
        ways = "; or ".join(
            f"{ours!r} (or declare `metrics_dialect: {tool}`, or write {tool}:{text.strip()})"
            if in_config
            else f"{ours!r} (or write {tool}:{text.strip()})"
            for tool, ours in ((t, str(_parse(o))) for t, o in found)
        )
        tools = " and ".join(possessive(tool) for tool, _ in found)
        raise MetricError(f"{text.strip()!r} is {tools} name, not ours: write {ways}") from error


def _known(raw: str) -> bool:
    name = raw.lower().replace("-", "_")
    return name in REGISTRY or name in ALIASES


def _parse(text: str) -> MetricSpec:
    """`text` in our own spelling."""
    match = _SPEC.match(text)
    if match is None:
        raise MetricError(
            f"cannot read metric {text!r}: expected name, name@k or name(param=value,...)@k, "
            "e.g. ndcg@10, ap(rel=2)@100, rbp(p=0.8)"
        )
    raw_name = match["name"].lower().replace("-", "_")
    name = ALIASES.get(raw_name, raw_name)
    if name not in REGISTRY:
        raise MetricError(
            f"unknown metric {match['name']!r} in {text!r}{_suggest(raw_name)}; "
            f"available: {available_metrics()}"
        )
    measure = REGISTRY[name]
    given = _split_params(match["params"], text)
    known = {p.name: p for p in measure.params}
    for key in given:
        if key not in known:
            listing = "; ".join(p.describe() for p in measure.params) or "none"
            raise MetricError(f"{text}: {name} has no parameter {key!r}; its parameters: {listing}")
    params: list[tuple[str, ParamValue]] = []
    for param in measure.params:
        if param.name in given:
            params.append((param.name, param.convert(given[param.name], text)))
        elif param.default is None:
            raise MetricError(f"{text}: {name} needs {param.describe()}, e.g. {measure.example}")
        else:
            params.append((param.name, param.default))
    return MetricSpec(name, tuple(params), _cutoff(match["k"], measure, text))


def parse_metrics(
    texts: Iterable[str | MetricSpec], *, dialect: str | None = None
) -> tuple[MetricSpec, ...]:
    """Distinct specs in the order given; every bad name is reported in one MetricError."""
    specs: list[MetricSpec] = []
    problems: list[str] = []
    for text in texts:
        try:
            specs.append(parse_metric(text, dialect=dialect))
        except MetricError as error:
            problems.append(str(error))
    if problems:
        raise MetricError("\n".join(problems))
    return tuple(dict.fromkeys(specs))


def available_metrics() -> str:
    """Every metric name with its aliases, for error messages."""
    return ", ".join(
        m.name + (f" ({'/'.join(m.aliases)})" if m.aliases else "") for m in REGISTRY.values()
    )


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, [*REGISTRY, *ALIASES], n=1)
    return f" (did you mean {ALIASES.get(close[0], close[0])!r}?)" if close else ""


def _split_params(raw: str | None, text: str) -> dict[str, str]:
    given: dict[str, str] = {}
    if raw is None or not raw.strip():
        return given
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or not key or not value.strip():
            raise MetricError(f"{text}: parameters are written name=value, got {item.strip()!r}")
        if key in given:
            raise MetricError(f"{text}: parameter {key!r} given twice")
        given[key] = value
    return given


def _cutoff(raw: str | None, measure: Measure, text: str) -> int | None:
    if raw is None:
        if measure.cutoff == "required":
            raise MetricError(f"{text}: {measure.name} needs a cutoff, e.g. {measure.name}@10")
        return None
    if measure.cutoff == "none":
        raise MetricError(f"{text}: {measure.name} takes no cutoff; write {measure.name}")
    if not raw.isdigit() or int(raw) < 1:
        raise MetricError(f"{text}: the cutoff must be a positive integer, got {raw!r}")
    return int(raw)


def may_be_undefined(metric: str) -> bool:
    """Whether check column `metric` may hold NaN for a query (a one-class query's `auc`):
    its last `prefix:` part names one of our measures registered as possibly undefined.
    Any other column, a name we cannot read included, must hold a number per query."""
    measure = _column_measure(metric)
    return measure is not None and measure.undefined


def reads_scores(metric: str) -> bool:
    """Whether check column `metric` is one of our measures that reads the run's scores, not
    only its ranking (`auc`): a stored top k (ids in rank order) cannot recompute it."""
    measure = _column_measure(metric)
    return measure is not None and measure.needs_scores


@functools.lru_cache(maxsize=1024)  # asked once per check (metric x slice) by the gate
def _column_measure(metric: str) -> Measure | None:
    try:
        return _parse(metric.rsplit(":", 1)[-1]).measure
    except MetricError:
        return None
