"""Metric specs, small hashable values with a canonical string, and the registry of measures.

The two live together: a spec's canonical string leaves out the parameters at their measure's
defaults, and a measure computes from a spec. Each measure module registers its measures with
`@measure`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.errors import MetricError
from retrieval_gate.metrics.ranking import RankedJudgments

ParamValue = int | float | str
Cutoff = Literal["required", "optional", "none"]


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
        return REGISTRY[self.name]

    def param(self, name: str) -> ParamValue:
        """The value of parameter `name` (every parameter is resolved at parse time)."""
        return dict(self.params)[name]

    @property
    def bounds(self) -> Bounds:
        """The lowest and highest value it takes for a query: its measure's, unbounded below
        when `gains` gives a grade a negative gain (as trec_eval allows), which can take a
        DCG, and so an nDCG, below 0."""
        low, high = self.measure.bounds
        gains = dict(self.params).get("gains")
        if gains and min(parse_gains(gains).values()) < 0:
            return -math.inf, high
        return low, high


Compute = Callable[[MetricSpec, RankedJudgments], FloatArray]
Bounds = tuple[float, float]
UNIT: Bounds = (0.0, 1.0)
NONNEGATIVE: Bounds = (0.0, math.inf)
"""Counts, and the measures that exceed 1 (DCG, ndeval's greedy-normalised ones)."""
UNBOUNDED: Bounds = (-math.inf, math.inf)
Shape = Literal["gain_sum", "first_relevant"]
"""How a measure reads one query's top k, when that shape makes its lowest and highest value
over unknown grades exact to find (gate/explain's label-hole bounds): "gain_sum", a sum of
per-document gains times rank weights over a denominator that the multiset of grades alone
fixes (the ideal DCG, R, k or 1); "first_relevant", a function of the first relevant rank."""


@dataclass(frozen=True, kw_only=True)
class Measure:
    """A registered measure: its parameters, cutoff rule and per-query computation."""

    name: str
    help: str
    compute: Compute
    params: tuple[Param, ...] = ()
    cutoff: Cutoff = "optional"
    aliases: tuple[str, ...] = ()
    integer: bool = False
    example: str = ""
    full_list: bool = False
    """Needs every retrieved rank even when a cutoff is given."""
    undefined: bool = False
    """May be undefined (NaN) for a query, which means are then taken without (`auc`)."""
    needs_scores: bool = False
    """Reads the run's scores, not only its ranking (`RankedJudgments.scores`)."""
    shape: Shape | None = None
    """Its `Shape`, when it reads the top k in one of theirs."""
    bounds: Bounds = UNBOUNDED
    """The lowest and highest value it takes for any query (`MetricSpec.bounds` adds what
    the parameters change): a value outside them, read back from a file, was not its."""

    @property
    def binary(self) -> bool:
        """Whether it sees a grade only as >= its `rel` parameter or not (every measure with
        one does): grades 0 and the top then tell every grading apart."""
        return any(param.name == "rel" for param in self.params)


REGISTRY: dict[str, Measure] = {}
ALIASES: dict[str, str] = {}


def measure(
    name: str,
    help: str,
    *,
    params: tuple[Param, ...] = (),
    cutoff: Cutoff = "optional",
    aliases: tuple[str, ...] = (),
    integer: bool = False,
    example: str = "",
    full_list: bool = False,
    undefined: bool = False,
    needs_scores: bool = False,
    shape: Shape | None = None,
    bounds: Bounds = UNBOUNDED,
) -> Callable[[Compute], Compute]:
    """Register the decorated function as measure `name`."""

    def register(compute: Compute) -> Compute:
        REGISTRY[name] = Measure(
            name=name,
            help=help,
            compute=compute,
            params=params,
            cutoff=cutoff,
            aliases=aliases,
            integer=integer,
            example=example or name,
            full_list=full_list,
            undefined=undefined,
            needs_scores=needs_scores,
            shape=shape,
            bounds=bounds,
        )
        for alias in aliases:
            ALIASES[alias] = name
        return compute

    return register
