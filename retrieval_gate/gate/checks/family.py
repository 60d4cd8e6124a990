"""The family of tested checks: each one's share of alpha, and the blind ones that leave it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.gate.checks.slicing import ALL
from retrieval_gate.stats.detectability import detectable_drop
from retrieval_gate.stats.significance import smallest_p, t_tail


class FamilySettings(Protocol):
    """What the family reads of `compare.ComparisonSettings`."""

    @property
    def alpha(self) -> float: ...
    @property
    def correction(self) -> str: ...
    @property
    def test(self) -> str: ...
    @property
    def resamples(self) -> int: ...
    @property
    def require_significance(self) -> bool: ...
    @property
    def power(self) -> float: ...
    @property
    def overall_share(self) -> float: ...


CONCENTRATED_SHARE = 0.3
"""An overall check must be able to fail on a drop carried by this share of its queries (all
moving alike). Real regressions are often concentrated (a shard lost, one language's
tokenizer broken): a check that needs most of its queries to move together before its test
can reach its level passes them all. 0.3 leaves room for the uneven drops of real queries: a
drop that empties 40% of the queries' top 10 (each query losing what it had) gives the test
what an even drop of 30% gives when the losses vary by up to 0.6 of their mean squared
(the sign-flip test's Hoeffding bound: exp(-m / (2 (1 + cv^2))))."""
_MOST_RESAMPLES = 1_000_000
"""More resamples than this are not advised: a level that needs them needs more queries."""


@dataclass(frozen=True, kw_only=True)
class Member:
    """A check that may regress, as the family sees it."""

    slice: str
    n: int
    """Queries in the slice."""
    max_drop: float | None = None
    """The tolerated drop in points; with `sd` and `baseline_mean`, what the range test needs."""
    sd: float | None = None
    """The sd of the baseline's per-query scores on the slice: the sd of the differences
    before a change, as `power` and `lint` take it (exact when the runs correlate at 0.5)."""
    baseline_mean: float | None = None
    """The most a metric on [0, 1] can lose."""

    @classmethod
    def of(
        cls,
        name: str,
        baseline: FloatArray,
        resolve: Callable[[float], float | None],
        *,
        bounded: bool = True,
    ) -> Member:
        """A check of slice `name` whose baseline scores are `baseline`, its max_drop resolved
        against their mean by `resolve` (`compare.Threshold.resolve`). Only a `bounded` column
        (higher is better, on [0, 1]) has its mean as the most it can lose."""
        if baseline.size < 2:
            return cls(slice=name, n=int(baseline.size))
        mean = float(baseline.mean())
        sd = float(baseline.std(ddof=1))
        return cls(
            slice=name,
            n=int(baseline.size),
            max_drop=resolve(mean),
            sd=sd,
            baseline_mean=mean if bounded else None,
        )


@dataclass(frozen=True, kw_only=True)
class Family:
    """The tested checks' levels, and the checks that left the family: why, and at what
    level they were found blind."""

    levels: dict[int, float]
    reasons: dict[int, str]
    left_at: dict[int, float]


def family_levels(
    cells: Sequence[Member | tuple[str, int]], settings: FamilySettings
) -> tuple[dict[int, float], dict[int, str]]:
    """The level each tested check gets when it alone moves, and why the others were left out
    (`family_of`)."""
    found = family_of(cells, settings)
    return found.levels, found.reasons


def family_of(cells: Sequence[Member | tuple[str, int]], settings: FamilySettings) -> Family:
    """The family of `cells`, the checks that may regress (a max_drop, gated).

    The overall checks share `overall_share` of alpha and the slice checks the rest, equally,
    when both exist. A check leaves the family (its share goes to the others) when it is blind
    at its level (`blind_reason`): too few queries to reach it, unable (overall) to fail on a
    drop carried by CONCENTRATED_SHARE of its queries, or unable to catch with the gate's power any
    drop the metric can make. A blind overall check is the caller's to refuse.
    """
    members = {
        i: cell if isinstance(cell, Member) else Member(slice=cell[0], n=cell[1])
        for i, cell in enumerate(cells)
    }
    reasons: dict[int, str] = {}
    left_at: dict[int, float] = {}
    while True:
        levels = _levels(members, settings)
        if not settings.require_significance:
            break  # the drop alone decides: every size can fail
        blind = {i: blind_reason(members[i], level, settings) for i, level in levels.items()}
        blind = {i: why for i, why in blind.items() if why}
        if not blind:
            break
        for i, why in blind.items():
            members.pop(i)
            reasons[i] = why
            left_at[i] = levels[i]
    return Family(levels=levels, reasons=reasons, left_at=left_at)


def widest_level(level: float, levels: Sequence[float], settings: FamilySettings) -> float:
    """The largest level the correction can test a check of `level` at, in a family of
    `levels`: with every other check rejected first. Weighted Holm's last step is at alpha;
    weighted Benjamini-Hochberg's at alpha m w (w the check's share of the weight); without
    correction every check is at its own level."""
    if settings.correction == "holm":
        return settings.alpha
    if settings.correction == "bh" and levels:
        return min(settings.alpha * len(levels) * level / sum(levels), 0.999)
    return level


def _levels(members: Mapping[int, Member], settings: FamilySettings) -> dict[int, float]:
    if settings.correction == "none":
        return dict.fromkeys(members, settings.alpha)
    overall = [i for i, member in members.items() if member.slice == ALL]
    others = [i for i, member in members.items() if member.slice != ALL]
    share = settings.overall_share if overall and others else 1.0 if overall else 0.0
    levels = {i: settings.alpha * share / len(overall) for i in overall}
    levels.update({i: settings.alpha * (1.0 - share) / len(others) for i in others})
    return levels


def concentrated_p(m: int, n: int, *, resamples: int, t_test: bool = False) -> float:
    """The smallest p-value the gate's test gives when `m` of `n` queries drop by one amount
    and the others do not move: the sign-flip test sees only the moved ones (`smallest_p`),
    the t-test all n, t = sqrt(m (n - 1) / (n - m))."""
    if m < 1 or n < 1:
        return 1.0
    if not t_test:
        return smallest_p(m, resamples=resamples)
    if n < 2:
        return 1.0
    if m >= n:
        return 0.0
    return t_tail(math.sqrt(m * (n - 1) / (n - m)), n - 1)


def blind_reason(member: Member, level: float, settings: FamilySettings) -> str:
    """Why a check tested at `level` could not fail on a drop worth catching, or ""."""
    t_test = settings.test == "t"
    n = member.n
    floor = smallest_p(n, resamples=settings.resamples, t_test=t_test)
    if floor > level:
        return (
            f"{n} queries cannot give p <= {level:.2g}, this check's level "
            f"(the smallest p they can give is {floor:.2g})"
        )
    carried = max(1, math.floor(CONCENTRATED_SHARE * n))
    # A slice check is there for a drop on its slice, which moves most of its queries: the
    # concentrated drop is the overall check's to catch, wherever it falls.
    if member.slice == ALL and carried < n:
        floor = concentrated_p(carried, n, resamples=settings.resamples, t_test=t_test)
        if floor > level:
            return (
                f"a drop carried by {carried} of its {n} queries cannot give p <= {level:.2g}, "
                f"this check's level (the smallest p it can give is {floor:.2g})"
            )
    if member.max_drop is None or member.baseline_mean is None or not (member.sd or 0) > 0:
        return ""
    drop = detectable_drop(
        sd=float(member.sd or 0),
        n=n,
        level=level,
        max_drop=member.max_drop,
        resamples=settings.resamples,
        t_test=t_test,
        power=settings.power,
    )
    if drop is None or drop > member.baseline_mean:
        seen = "none" if drop is None else f"{drop * 100:.1f} pt"
        return (
            f"at level {level:.2g} it catches with {settings.power:.0%} power only a drop of "
            f"{seen}, more than the {member.baseline_mean * 100:.1f} pt the baseline has to lose"
        )
    return ""


def refusal_advice(member: Member, level: float, settings: FamilySettings, gated: int) -> str:
    """What to change when an overall check is blind: the settings that would help, in the
    order they cost least."""
    advice = []
    if settings.test != "t" and level * (settings.resamples + 1) < 1 <= level * _MOST_RESAMPLES:
        advice.append(f"raise gate.resamples to {math.ceil(1 / level)} or more")
    if settings.alpha < 0.05:
        advice.append("raise gate.alpha")
    if settings.overall_share < 0.5:
        advice.append("raise gate.overall_share")
    if gated > 1:
        advice.append(f"give fewer of the {gated} gated metrics a max_drop")
    advice.append("label more queries")
    advice.append("or set gate.require_significance: false")
    return ", ".join(advice)
