"""Markdown tables and the Wilson intervals of simulated rates, as every benchmark prints them."""

from __future__ import annotations

import math
from collections.abc import Sequence

Z_95 = 1.959963984540054


def wilson(hits: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion."""
    if trials == 0:
        return 0.0, 1.0
    rate = hits / trials
    centre = (rate + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials))
    half /= 1 + z * z / trials
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(hits: int, trials: int) -> str:
    """A share of trials and its Wilson 95% interval (the Monte Carlo error), formatted."""
    low, high = wilson(hits, trials)
    return f"{hits / trials:.3f} [{low:.3f}, {high:.3f}]"


def table(header: Sequence[str], body: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def render(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    cells = [("-" * (w + 1) + ":") if i in right else "-" * (w + 2) for i, w in enumerate(widths)]
    rule = "|" + "|".join(cells) + "|"
    return "\n".join([render(header), rule, *(render(line) for line in body)])
