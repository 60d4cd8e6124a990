"""`retrieval-gate power --claim`: what a claimed mean change over n queries can show."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import InputError
from retrieval_gate.gate.checks.compare import ComparisonSettings
from retrieval_gate.stats.detectability import detectable_drop
from retrieval_gate.stats.significance import smallest_p, t_tail

SCHEMA = "retrieval-gate/claim"
SCHEMA_VERSION = 1
MAX_QUERIES = 10**9
"""Past this many queries a claim is not about a labelled query set."""
_CHANGE = re.compile(r"^\s*([+-]?)\s*([0-9]*\.?[0-9]+)\s*(pt|pts|point|points)?\s*$", re.I)


def parse_change(text: str) -> float:
    """A signed change on the 0-1 scale: `-2pt` -> -0.02, `+1.5pt` -> 0.015, `-0.02` -> -0.02
    (a bare number is a fraction, as max_drop reads it). InputError naming --claim otherwise."""
    match = _CHANGE.match(text)
    if not match:
        raise InputError(
            f"--claim: {one_line(text)[:60]!r} is not a change; write points like -2pt or "
            "+1.5pt, or a fraction of the 0-1 scale like -0.02"
        )
    value = float(match[2]) / (100 if match[3] else 1)
    if value > 1:
        raise InputError(
            f"--claim: {one_line(text)[:60]} is past the whole 0-1 scale; a bare number is a "
            "fraction (-0.02), points take pt (-2pt)"
        )
    return -value if match[1] == "-" else value


def check_n(n: int) -> int:
    """`n` when it is a number of queries a claim can rest on; InputError naming --n."""
    if not 2 <= n <= MAX_QUERIES:
        raise InputError(f"--n: {n} is not a query count a paired test takes: 2 to {MAX_QUERIES:,}")
    return n


def check_sd(sd: float) -> float:
    """`sd` when it is a usable per-query spread; InputError naming --sd."""
    if not math.isfinite(sd) or sd < 0 or sd > 1:
        raise InputError(
            f"--sd: {sd:g} is not a per-query sd of a 0-1 metric's changes; give one in [0, 1]"
        )
    return sd


@dataclass(frozen=True, kw_only=True)
class Claim:
    """What a mean change over n queries can show under the gate's settings."""

    change: float
    """The claimed mean change (0-1 scale; negative: a drop)."""
    n: int
    sd: float | None
    """Per-query sd of the paired changes; None when there is none to go by."""
    sd_source: str
    """Where `sd` comes from: "--sd", "history:METRIC" or "run:METRIC" (the sd of measured
    differences of METRIC), "baseline:METRIC" (its per-query sd), or ""."""
    sd_from: str = ""
    """What measured differences `sd` rests on ("2 pairs of consecutive records of main");
    "" unless it is measured."""
    settings: ComparisonSettings
    smallest_p: float
    """The smallest one-sided p-value the gate's sign-flip test can give on n queries, whatever
    their spread (`smallest_p`): every change the same, or at least the same sign when every
    sign vector is drawn."""
    t_p: float | None
    """One-sided paired t p-value of the change with `sd` (in the change's direction)."""
    detectable: float | None
    """The change (points, unsigned) a single check at alpha catches with the gate's power."""

    @property
    def within(self) -> bool | None:
        """Whether the claimed change is at least the detectable one; None without a spread."""
        if self.detectable is None:
            return None if self.sd is None else False
        if self.detectable == 0:  # no spread: caught when it is a change at all
            return self.change != 0
        return abs(self.change) >= self.detectable

    def document(self) -> dict[str, Any]:
        """The JSON document: the claim, the settings and each figure."""
        s = self.settings
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "change": self.change,
            "n": self.n,
            "sd": self.sd,
            "sd_source": self.sd_source,
            "sd_from": self.sd_from,
            "alpha": s.alpha,
            "test": s.test,
            "resamples": s.resamples,
            "power": s.power,
            "smallest_p_sign_flip": self.smallest_p,
            "t_p": self.t_p,
            "detectable_change": self.detectable,
            "within_detectable": self.within,
        }

    def to_json(self) -> str:
        """The document as indented JSON."""
        return json.dumps(self.document(), indent=2, sort_keys=True) + "\n"

    def to_text(self) -> str:
        """A few lines, each figure with what it assumes."""
        s = self.settings
        way = "drop" if self.change < 0 else "rise"
        lines = [
            f"claim: mean change {self.change * 100:+.4g}pt over {self.n:,} queries "
            f"(one-sided, a {way}; alpha {s.alpha:g}, power {s.power:.0%})",
            f"sign-flip test ({s.resamples} resamples): p >= {self.smallest_p:.3g} whatever the "
            "spread (every query moved the same way by the same amount)",
        ]
        if self.sd is None:
            lines += [
                "paired t-test: no lower bound without a spread (equal changes give p = 0); "
                "give --sd, or -c CONFIG with a baseline",
                "detectable change: unknown without a spread",
            ]
            return "\n".join(lines) + "\n"
        kind, _, metric = self.sd_source.partition(":")
        if self.sd_source == "--sd":
            assumed = f"per-query sd {self.sd:.4g} (--sd)"
        elif kind in ("history", "run"):
            assumed = f"per-query sd {self.sd:.4g} of {metric}'s differences on {self.sd_from}"
        else:
            assumed = (
                f"per-query sd {self.sd:.4g}, the baseline's {self.sd_source.partition(':')[2]} "
                "(exact when the runs correlate at 0.5)"
            )
        lines.append(f"paired t-test: p = {self.t_p:.3g} for this mean with {assumed}")
        test = "paired t-test" if s.test == "t" else "sign-flip test"
        if self.detectable is None:
            lines.append(f"detectable change: none; {self.n} queries cannot reach alpha")
        elif self.detectable == 0:
            lines.append(
                "detectable change: any above 0 (sd 0: every query moves by the mean change, "
                f"and {self.n:,} queries reach alpha)"
            )
        else:
            claimed = f"{abs(self.change) * 100:.2f}pt"
            verdict = (
                f"the claimed {claimed} is at or past it"
                if self.within
                else f"the claimed {claimed} is below it: {self.n:,} queries catch a true "
                f"change that small less than {s.power:.0%} of the time"
            )
            lines.append(
                f"detectable change: {_up(self.detectable)}pt at {s.power:.0%} power "
                f"({test}, one check at alpha {s.alpha:g}, same sd); {verdict}"
            )
        return "\n".join(lines) + "\n"


def _up(change: float) -> str:
    """Points to 0.01, rounded up: a detectable change is never printed below a claim it is
    past."""
    return f"{math.ceil(round(change * 10_000, 6)) / 100:.2f}"


def audit(
    change: float,
    n: int,
    sd: float | None,
    sd_source: str,
    settings: ComparisonSettings,
    sd_from: str = "",
) -> Claim:
    """The figures of a claimed change over `n` queries with per-query sd `sd` (None: unknown)."""
    check_n(n)
    floor = smallest_p(n, resamples=settings.resamples)
    if sd is None:
        return Claim(
            change=change,
            n=n,
            sd=None,
            sd_source="",
            settings=settings,
            smallest_p=floor,
            t_p=None,
            detectable=None,
        )
    check_sd(sd)
    if sd == 0:
        t_p = 0.0 if change != 0 else 1.0
    else:
        t = abs(change) / (sd / math.sqrt(n)) if change != 0 else 0.0
        t_p = t_tail(t, n - 1)
    if sd == 0:
        # No spread: every query moves by the mean change, so any change is caught wherever
        # the test can reach alpha at all (the t-test's p is then 0).
        reaches = settings.test == "t" or floor <= settings.alpha
        detectable: float | None = 0.0 if reaches else None
    else:
        detectable = detectable_drop(
            sd=sd, n=n, level=settings.alpha, max_drop=0.0, resamples=settings.resamples,
            t_test=settings.test == "t", power=settings.power,
        )  # fmt: skip
    return Claim(
        change=change,
        n=n,
        sd=sd,
        sd_source=sd_source,
        sd_from=sd_from,
        settings=settings,
        smallest_p=floor,
        t_p=t_p,
        detectable=detectable,
    )
