"""Simulate the gate on GAUC over users: two models scoring one seeded impression log, the
per-user `gauc` column compared by the gate's paired test. How often it shows a drop, and
fails, when nothing changed, and when the new model ranks worse.

The data: USERS users, each shown 2 + Poisson(8) items (so the weights of GAUC vary), with a
click rate drawn per user from Beta(1.5, 6); users without a click, or with clicks only, are
undefined and left out. An item's model score is its latent relevance (1 clicked, 0 not) plus
Gaussian noise: the baseline's sd is 1.0, the current model's `sd` in the table. Both sides
score the same impressions, so each user's weight is the same on both sides."""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table  # noqa: E402
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare  # noqa: E402
from retrieval_gate.metrics import evaluate  # noqa: E402

USERS = 500
MAX_DROP = 0.01
"""The threshold the gate is given: 1 point of GAUC."""
SCENARIOS = (
    ("no change", 1.0),
    ("noisier model", 1.02),
    ("noisier model", 1.05),
    ("noisier model", 1.1),
)
METRICS = ("gauc", "gauc(weight=uniform)")


def _log(rng: np.random.Generator) -> tuple[dict[str, dict[str, int]], list[np.ndarray]]:
    """Clicks per user, and each user's latent relevance in item order."""
    qrels: dict[str, dict[str, int]] = {}
    latent: list[np.ndarray] = []
    for u in range(USERS):
        shown = 2 + int(rng.poisson(8))
        clicks = (rng.random(shown) < rng.beta(1.5, 6.0)).astype(int)
        qrels[f"u{u:04d}"] = {f"i{i}": int(c) for i, c in enumerate(clicks)}
        latent.append(clicks.astype(np.float64))
    return qrels, latent


def _scores(
    rng: np.random.Generator, latent: list[np.ndarray], sd: float
) -> dict[str, dict[str, float]]:
    """One model's scores of every impression, rounded to 2 decimals (ties happen)."""
    run: dict[str, dict[str, float]] = {}
    for u, relevance in enumerate(latent):
        noisy = np.round(relevance + rng.normal(0.0, sd, relevance.size), 2)
        run[f"u{u:04d}"] = {f"i{i}": float(s) for i, s in enumerate(noisy)}
    return run


def simulate(trials: int, seed: int) -> str:
    """The table of every scenario over `trials` seeded logs each."""
    settings = ComparisonSettings(resamples=2_000, seed=seed)
    thresholds = {metric: Threshold(max_drop=MAX_DROP) for metric in METRICS}
    body = []
    for s, (name, sd) in enumerate(SCENARIOS):
        rng = np.random.default_rng([seed, s])
        shown = dict.fromkeys(METRICS, 0)
        failed = dict.fromkeys(METRICS, 0)
        deltas: dict[str, list[float]] = {m: [] for m in METRICS}
        defined: list[int] = []
        for _ in range(trials):
            qrels, latent = _log(rng)
            before = evaluate(_scores(rng, latent, 1.0), qrels, METRICS)
            after = evaluate(_scores(rng, latent, sd), qrels, METRICS)
            found = compare(
                before.values,
                after.values,
                {"all": np.arange(len(before.query_ids))},
                thresholds,
                {},
                settings,
            )
            for c in found:
                shown[c.metric] += int(c.p_value is not None and c.p_value < settings.alpha)
                failed[c.metric] += int(c.failed)
                deltas[c.metric].append(after.mean()[c.metric] - before.mean()[c.metric])
            defined.append(found[0].n)
        for metric in METRICS:
            body.append(
                [
                    name,
                    f"{sd:g}",
                    metric,
                    f"{np.mean(defined):.0f}",
                    f"{np.mean(deltas[metric]) * 100:+.2f}",
                    rate(shown[metric], trials),
                    rate(failed[metric], trials),
                ]
            )
    header = [
        "scenario",
        "current sd",
        "metric",
        "users compared",
        "mean change (pt)",
        f"P(p < {settings.alpha:g})",
        f"P(fail), max_drop {MAX_DROP * 100:g}pt",
    ]
    return table(header, body, right={3, 4, 5, 6})


def main() -> None:
    """Print the table; `--trials` per scenario (default 2,000: about five minutes)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    start = time.perf_counter()
    print(
        f"{USERS} users, 2 + Poisson(8) impressions each, click rate ~ Beta(1.5, 6); "
        f"{args.trials} seeded logs per scenario, seed {args.seed}; one-sided paired "
        "randomization test (2,000 draws), alpha 0.05; Wilson 95% intervals"
    )
    print()
    print(simulate(args.trials, args.seed))
    print()
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
