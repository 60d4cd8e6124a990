"""Simulate the drift budget's trip rule and check docs/history.md's statement of its lag.

Seeded per-query scores of one metric; each merge moves every query by its own random change
whose mean is a fixed loss per merge (1.25 points by default). The drift check after merge m
is the rule `history drift` applies: `compare()` of the reference record with the newest one,
max_drop = the budget, the gate's default test. For each labelled-set size it runs many
trials and reports, per size:

- the lag: merges from the one whose true cumulative loss first passes the budget (the
  crossing) to the one the drift trips at; its median against the prediction below;
- the margin: (detectable drop printed at the crossing - budget) / loss per merge. The
  detectable drop always exceeds the budget (the budget plus the test's margin at 80% power);
- docs/history.md's statement: the drift trips within the margin (rounded up) after the
  crossing in at least three trials of four, and typically by about 0.66 of it (the one-sided
  test's cut-off, z(0.95) / (z(0.95) + z(0.8))): the median lag is at most that, rounded up.

    python benchmarks/bench_drift.py                    # 60 trials per size: about 2 minutes
    python benchmarks/bench_drift.py --trials 500 --sizes 40,150,600,2000 --spread 0.15
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Sequence

import numpy as np

from retrieval_gate.gate.compare import ComparisonSettings, Threshold, compare

METRIC = "ndcg@10"
SHARE = 1.6448536269514722 / (1.6448536269514722 + 0.8416212335729143)
"""z(1 - alpha) / (z(1 - alpha) + z(power)) at alpha 0.05, power 0.8: the part of the
detectable drop's margin past the budget that the one-sided test's cut-off takes. The drift
trips about when the mean loss passes the budget by that cut-off, half the time earlier."""


def trip(
    rng: np.random.Generator, n: int, loss: float, spread: float, budget: float, merges: int
) -> tuple[int | None, list[float], list[float]]:
    """The merge the drift first trips at (None: not within `merges`), and at each merge the
    detectable drop `history drift` prints and the true cumulative loss of the mean."""
    reference = rng.beta(2.0, 2.0, n)
    current = reference.copy()
    slices = {"all": np.arange(n, dtype=np.int64)}
    thresholds = {METRIC: Threshold(max_drop=budget)}
    settings = ComparisonSettings(resamples=2000)
    tripped, detectable, lost = None, [], []
    for merge in range(1, merges + 1):
        current = np.clip(current + rng.normal(-loss, spread, n), 0.0, 1.0)
        (check,) = compare({METRIC: reference}, {METRIC: current}, slices, thresholds, {}, settings)
        detectable.append(check.detectable_drop or math.nan)
        lost.append(float(reference.mean() - current.mean()))
        if check.failed and tripped is None:
            tripped = merge
    return tripped, detectable, lost


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="40,150,600,2000")
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--loss", type=float, default=0.0125, help="mean loss per merge")
    parser.add_argument("--spread", type=float, default=0.12, help="sd of a query's change")
    parser.add_argument("--budget", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    merges = 20
    print(
        f"drift budget {args.budget * 100:g} pt, loss {args.loss * 100:g} pt per merge, "
        f"per-query change sd {args.spread:g}, {args.trials} trials per size, seed {args.seed}"
    )
    print()
    print(
        "| queries | median lag (merges) | 0.66 x margin (bound on the median) "
        "| lag within the margin | median margin (merges) | never tripped in 20 |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    ok = True
    for n in (int(size) for size in args.sizes.split(",")):
        rng = np.random.default_rng([args.seed, n])
        lags, predicted, slack, never = [], [], [], 0
        for _ in range(args.trials):
            tripped, detectable, lost = trip(rng, n, args.loss, args.spread, args.budget, merges)
            crossing = next((m for m, x in enumerate(lost, 1) if x > args.budget), None)
            if tripped is None or crossing is None:
                never += 1
                continue
            lags.append(tripped - crossing)
            # The margin past the budget, in merges, at the drop `history drift` calls
            # detectable when the drift reaches the budget: the doc's bound on the lag.
            margin = (detectable[crossing - 1] - args.budget) / args.loss
            slack.append(margin)
            predicted.append(SHARE * margin)
        median_lag = statistics.median(lags) if lags else math.nan
        median_predicted = statistics.median(predicted) if predicted else math.nan
        within = sum(1 for lag, m in zip(lags, slack, strict=True) if lag <= math.ceil(m))
        share_within = within / max(len(lags), 1)
        print(
            f"| {n:,} | {median_lag:.1f} | {median_predicted:.1f} | {share_within:.2f} "
            f"| {statistics.median(slack):.1f} | {never} |"
        )
        ok &= median_lag <= math.ceil(median_predicted) and share_within >= 0.75
    print()
    print(
        "docs/history.md's lag statement "
        + ("holds." if ok else "does NOT hold: correct the document or the rule.")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
