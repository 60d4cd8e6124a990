"""Metric specs: small hashable values with a canonical string, parsed from `name(p=v)@k`."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from retrieval_gate.errors import MetricError

if TYPE_CHECKING:
    from retrieval_gate.metrics.measures import Measure

ParamValue = int | float | str
Cutoff = Literal["required", "optional", "none"]

_SPEC = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-]*)\s*(?:\((?P<params>[^()]*)\))?\s*(?:@\s*(?P<k>[^\s]+))?\s*$"
)


@dataclass(frozen=True)
class Param:
    """A metric parameter: its type, default (None when it must be given) and allowed values."""

    name: str
    kind: Literal["int", "float", "choice", "gains"]
    default: ParamValue | None
    help: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def describe(self) -> str:
        """`name` with what it accepts and its default, for error messages and `--help`."""
        if self.kind == "choice":
            accepts = "|".join(self.choices)
        elif self.kind == "gains":
            accepts = "grade:gain;grade:gain;... (grades >= 0)"
        else:
            accepts = "integer" if self.kind == "int" else "number"
            if self.low is not None or self.high is not None:
                left = "(" if self.low_open else "["
                right = ")" if self.high_open else "]"
                low = "-inf" if self.low is None else format_value(self.low)
                high = "inf" if self.high is None else format_value(self.high)
                accepts += f" in {left}{low}, {high}{right}"
        default = (
            "required"
            if self.default is None
            else f"default {format_value(self.default) or 'none'}"
        )
        return f"{self.name}={accepts} ({default}): {self.help}"

    def convert(self, raw: str, metric: str) -> ParamValue:
        """The typed value of `raw`, or a MetricError saying what is allowed."""
        text = raw.strip()
        value: ParamValue
        try:
            if self.kind == "int":
                value = int(text)
            elif self.kind == "gains":
                value = _gains(text)
            elif self.kind == "float":
                value = float(text)
                if value != value or value in (float("inf"), float("-inf")):
                    raise ValueError(text)
            else:
                value = text.lower()
                if value not in self.choices:
                    raise ValueError(text)
        except ValueError:
            raise MetricError(
                f"{metric}: bad value {raw.strip()!r} for {self.describe()}"
            ) from None
        if isinstance(value, (int, float)) and not self._in_range(value):
            raise MetricError(f"{metric}: {self.name}={text} is out of range; {self.describe()}")
        return value

    def _in_range(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (
            self.high is not None and (value >= self.high if self.high_open else value > self.high)
        )


def _gains(text: str) -> str:
    """Canonical `grade:gain;...` (grades ascending, shortest numbers) of a gain mapping, or
    ValueError. Semicolons, since `,` separates a metric's parameters."""
    mapping: dict[int, float] = {}
    for item in text.split(";"):
        grade_text, sep, gain_text = item.partition(":")
        grade, gain = int(grade_text), float(gain_text)
        if not sep or grade < 0 or grade in mapping or gain != gain or abs(gain) == float("inf"):
            raise ValueError(text)
        mapping[grade] = gain
    return ";".join(f"{g}:{format_value(mapping[g])}" for g in sorted(mapping))


def parse_gains(value: ParamValue) -> dict[int, float]:
    """The mapping of a canonical `gains` parameter value ({} for the empty default)."""
    text = str(value)
    if not text:
        return {}
    return {int(g): float(v) for g, _, v in (item.partition(":") for item in text.split(";"))}


def format_value(value: ParamValue) -> str:
    """Shortest faithful text of a parameter value: 3 not 3.0, 0.8 not 0.80."""
    if isinstance(value, float):  # numpy's float64 too, whose repr would name its type
        return str(int(value)) if value.is_integer() else repr(float(value))
    return str(value)


@dataclass(frozen=True, order=True)
class MetricSpec:
    """One metric with all its parameters resolved; `str()` is the canonical name.

    Two spellings of the same metric (`MAP@100`, `ap(rel=1)@100`) give equal specs.
    """

    name: str
    params: tuple[tuple[str, ParamValue], ...] = ()
    k: int | None = None

    def __str__(self) -> str:
        defaults = {p.name: p.default for p in self.measure.params}
        shown = [f"{n}={format_value(v)}" for n, v in self.params if defaults.get(n) != v]
        text = self.name + (f"({','.join(shown)})" if shown else "")
        return text if self.k is None else f"{text}@{self.k}"

    @property
    def measure(self) -> Measure:
        """The registered definition this spec instantiates."""
        from retrieval_gate.metrics.measures import REGISTRY

        return REGISTRY[self.name]

    def param(self, name: str) -> ParamValue:
        """The value of parameter `name` (every parameter is resolved at parse time)."""
        return dict(self.params)[name]


def parse_metric(text: str | MetricSpec, *, dialect: str | None = None) -> MetricSpec:
    """The spec named by `text`, e.g. `NDCG@10`, `ndcg(gain=linear)@10`, `ap(rel=2)@100`.

    With `dialect` (trec_eval, ir_measures, ranx), or a `dialect:` prefix on `text`, a name
    of that tool is read with the tool's meaning: `trec_eval:ndcg_cut_10` is
    `ndcg(gain=linear)@10`. Without one, a name only another tool uses is refused with our
    spelling of it."""
    if isinstance(text, MetricSpec):
        return text
    if dialect is not None or ":" in text:
        from retrieval_gate.metrics.dialects import split_prefix, translate

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
        from retrieval_gate.metrics.dialects import foreign, possessive, refusal

        match = _SPEC.match(text)
        if match and _known(match["name"]):
            raise  # our name, wrongly written: our error says how
        found = foreign(text)
        if not found:
            refused = refusal(text)
            if refused is not None:
                raise refused from error
            raise
        ways = "; or ".join(
            f"{ours!r} (or declare `metrics_dialect: {tool}`, or write {tool}:{text.strip()})"
            for tool, ours in ((t, str(_parse(o))) for t, o in found)
        )
        tools = " and ".join(possessive(tool) for tool, _ in found)
        raise MetricError(f"{text.strip()!r} is {tools} name, not ours: write {ways}") from error


def _known(raw: str) -> bool:
    from retrieval_gate.metrics.measures import ALIASES, REGISTRY

    name = raw.lower().replace("-", "_")
    return name in REGISTRY or name in ALIASES


def _parse(text: str) -> MetricSpec:
    """`text` in our own spelling."""
    from retrieval_gate.metrics.measures import ALIASES, REGISTRY

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
    from retrieval_gate.metrics.measures import REGISTRY

    return ", ".join(
        m.name + (f" ({'/'.join(m.aliases)})" if m.aliases else "") for m in REGISTRY.values()
    )


def _suggest(name: str) -> str:
    from retrieval_gate.metrics.measures import ALIASES, REGISTRY

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
