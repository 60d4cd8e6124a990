"""Simulate the noise probe (gate.noise_probe, on by default) with the example nondeterministic
retriever (configs/noisy_bm25.py, each run losing 0-8% of the corpus) on seeded synthetic sets
of 200, 500 and 1,000 queries, one run a side: P(an unchanged retriever fails) with the probe
off (before) and on (after), the power at a real 5 pt ndcg@10 drop, the detectable drop
compare() states, and what the probe costs a deterministic retriever. Run by
`bench_noise.py --probe`."""

from __future__ import annotations

import os

# One BLAS thread per process: the workers already use every core.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NamedTuple  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "configs"))

from noisy_bm25 import NoisyBM25  # noqa: E402

from benchmarks.common.tables import table, wilson  # noqa: E402
from benchmarks.simulations.bench_noise import (  # noqa: E402
    DOCS,
    GATED,
    SET_SEED,
    SETTINGS,
    THRESHOLDS,
    Calibration,
    Hits,
    K,
    State,
    build_state,
    calibrate_noisy,
    degrade,
    mean_of,
    pt,
    score,
    top_k,
)
from benchmarks.tools.synthetic_set import write_synthetic_set  # noqa: E402
from retrieval_gate.config.schema import NoiseProbeConfig  # noqa: E402
from retrieval_gate.core.ids import FloatArray, IntArray  # noqa: E402
from retrieval_gate.gate.baseline.repeats import changed_queries, probe_sample  # noqa: E402
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, compare  # noqa: E402

Scores = dict[str, FloatArray]
SIZES = (200, 500, 1000)
SETTING = 2
"""SETTINGS[2] of bench_noise.py: lost 0-8% per run, jitter 5% (configs/example-noisy.yaml)."""
PROBE = NoiseProbeConfig()
"""The probe's defaults: what `check` does unless told otherwise."""
GATE_SEED = 0
"""gate.seed's default: the probe's sample is the same in every check of a config."""
DROP = 0.05
STATED_POWER = ComparisonSettings().power
"""The power compare()'s detectable drop is stated at (0.8)."""
STATED_TOLERANCE = 0.05
"""The power at the stated detectable drop (probed baseline) may not fall below STATED_POWER
by more than this: a stated drop that is caught less often would be optimistic."""

_STATES: dict[int, State] = {}


def init_worker(folders: Mapping[int, str]) -> None:
    for size, folder in folders.items():
        _STATES[size] = build_state(folder)


class Task(NamedTuple):
    size: int
    trial: int
    seed: int
    broken: int
    resamples: int
    alpha: float


class Outcome(NamedTuple):
    failed: bool
    regressed: bool
    detectable: float | None


class Trial(NamedTuple):
    off: tuple[Outcome, Outcome]
    """gate.noise_probe: false: (A/A, -5 pt)."""
    old_baseline: tuple[Outcome, Outcome]
    """The probe in check only, against a baseline of one run (made before it existed)."""
    probed_baseline: tuple[Outcome, Outcome]
    """The default flow: `baseline` probed too, so a noisy retriever's baseline is the mean
    of PROBE.repeats runs."""
    probed: int
    """Queries the probe re-ran."""
    fired: tuple[bool, bool, bool]
    """Whether the probe found a changed top k: at baseline, in the A/A check, in the -5 pt
    check."""
    deterministic_fired: bool
    """Whether the probe fired on the deterministic retriever (plain BM25): it never may."""


def outcome(found: Sequence[Comparison]) -> Outcome:
    check = next(c for c in found if c.metric == GATED and c.slice == "all")
    return Outcome(
        any(c.failed for c in found), check.verdict == "regressed", check.detectable_drop
    )


def run_trial(task: Task) -> Trial:
    """One pull request as the gate runs it: the baseline (one run, or with the probe run at
    baseline time PROBE.repeats when it found noise) and the check's current run; the check's
    probe re-runs its sample with a fresh retriever and, when a top k differs, the current
    side runs PROBE.repeats times in all. The -5 pt rows degrade every current run (the
    probe's re-run too) on the same random queries; common random numbers throughout."""
    st = _STATES[task.size]
    setting = SETTINGS[SETTING]
    rng = np.random.default_rng([task.seed, task.size, task.trial])
    seeds = rng.integers(0, 2**62, size=2 * (1 + PROBE.repeats)).tolist()
    broken = set(rng.choice(len(st.query_ids), size=task.broken, replace=False).tolist())
    sample = probe_sample(st.query_ids, PROBE.share, PROBE.min_queries, GATE_SEED)
    where = {q: i for i, q in enumerate(st.query_ids)}
    rows = [where[q] for q in sample]

    def run(seed: int, texts: Sequence[str] = st.texts) -> list[Hits]:
        retriever = NoisyBM25(seed=seed, jitter=setting.jitter, lost=setting.lost, index=st.index)
        return retriever.search_batch(list(texts), K + 1)

    def fired(first: Sequence[Hits], rerun: Sequence[Hits]) -> bool:
        """The probe's finding: `rerun` answers the sample, `first` every query."""
        tops = {st.query_ids[i]: top_k(first[i]) for i in rows}
        again = {q: top_k(hits) for q, hits in zip(sample, rerun, strict=True)}
        return bool(changed_queries(tops, again))

    def side(offset: int) -> tuple[list[list[Hits]], list[Hits]]:
        """A side's runs (the first, then the probe's extra ones) and the probe's re-run."""
        runs = [run(seed) for seed in seeds[offset : offset + PROBE.repeats]]
        return runs, run(seeds[offset + PROBE.repeats], [st.texts[i] for i in rows])

    (ref_runs, ref_again), (cur_runs, cur_again) = side(0), side(1 + PROBE.repeats)
    slices: dict[str, IntArray] = {"all": np.arange(len(st.query_ids), dtype=np.int64)}
    settings = ComparisonSettings(alpha=task.alpha, resamples=task.resamples, seed=task.trial)

    def gate(base: Sequence[Scores], cur: Sequence[Scores]) -> Outcome:
        if len(base) == 1 and len(cur) == 1:
            return outcome(compare(base[0], cur[0], slices, THRESHOLDS, {}, settings))
        runs = (list(base), list(cur))
        found = compare(mean_of(base), mean_of(cur), slices, THRESHOLDS, {}, settings, runs=runs)
        return outcome(found)

    reference = [score([h[:K] for h in hits], st) for hits in ref_runs]
    plain = [score([h[:K] for h in hits], st) for hits in cur_runs]
    worse_hits = [degrade(hits, broken, st) for hits in cur_runs]
    worse = [score(hits, st) for hits in worse_hits]
    spread: list[Hits] = [[] for _ in st.query_ids]  # the probe's answers where they belong
    for i, hits in zip(rows, cur_again, strict=True):
        spread[i] = hits
    cur_again_worse = [degrade(spread, broken, st)[i] for i in rows]
    at_baseline = fired(ref_runs[0], ref_again)
    aa, drop = fired(cur_runs[0], cur_again), fired(worse_hits[0], cur_again_worse)
    base = reference if at_baseline else reference[:1]
    plain_now = plain if aa else plain[:1]
    worse_now = worse if drop else worse[:1]
    index = st.index.candidates_batch(st.texts, K + 1)
    exact = st.index.candidates_batch([st.texts[i] for i in rows], K + 1)
    return Trial(
        off=(gate(reference[:1], plain[:1]), gate(reference[:1], worse[:1])),
        old_baseline=(gate(reference[:1], plain_now), gate(reference[:1], worse_now)),
        probed_baseline=(gate(base, plain_now), gate(base, worse_now)),
        probed=len(sample),
        fired=(at_baseline, aa, drop),
        deterministic_fired=fired(index, exact),
    )


def rate(hits: int, trials: int) -> str:
    low, high = wilson(hits, trials)
    return f"{hits / trials:.3f} [{low:.3f}, {high:.3f}]"


def median_pt(values: Sequence[float | None]) -> str:
    found = [v for v in values if v is not None]
    return pt(float(np.median(found))) if found else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=500, help="simulated PRs per size")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 60 trials, 2,000 resamples"
    )
    parser.add_argument(
        "--power-trials",
        type=int,
        default=200,
        help="trials per size at the stated detectable drop (they reuse the first trials' runs)",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args(argv)
    if args.quick:
        args.trials, args.power_trials, args.resamples = 60, 60, 2_000
    args.power_trials = min(args.power_trials, args.trials)
    start = time.perf_counter()
    setting = SETTINGS[SETTING]
    print(
        f"seed {args.seed}, {args.trials} trials per size, alpha {args.alpha:g}, "
        f"{args.resamples:,} resamples, {args.jobs} worker processes.\n"
        f"Synthetic sets of {', '.join(map(str, args.sizes))} queries, {DOCS:,} documents "
        f"(seed {SET_SEED}), k {K}; ndcg@10 gated at 2 pt, recall@10 at 5 pt, no slices. "
        f"The retriever: NoisyBM25 ({setting.label}), one run a side unless the probe says "
        "otherwise. Before: gate.noise_probe: false. After: its defaults "
        f"(share {PROBE.share:g}, min_queries {PROBE.min_queries}, repeats {PROBE.repeats}): "
        "the probe re-runs its seeded sample with a fresh retriever and, when a top 10 "
        f"differs, that side runs {PROBE.repeats} times and compare() gets the runs."
    )
    with tempfile.TemporaryDirectory(prefix="bench_noise_probe_") as tmp:
        folders = {
            n: str(write_synthetic_set(Path(tmp) / f"set{n}", queries=n, docs=DOCS))
            for n in args.sizes
        }
        calibrations: dict[int, Calibration] = {}
        for n, folder in folders.items():
            calibrations[n] = calibrate_noisy(build_state(folder), SETTING, args.seed)
        tasks = [
            Task(n, trial, args.seed, calibrations[n].broken, args.resamples, args.alpha)
            for n in args.sizes
            for trial in range(args.trials)
        ]
        with ProcessPoolExecutor(
            max_workers=args.jobs, initializer=init_worker, initargs=(folders,)
        ) as pool:
            found = list(pool.map(run_trial, tasks, chunksize=4))
            by_size = {
                n: found[i * args.trials : (i + 1) * args.trials] for i, n in enumerate(args.sizes)
            }
            # Phase 2: a drop of the detectable drop stated with a probed baseline (median).
            stated = {
                n: float(
                    np.median(
                        [
                            x.probed_baseline[0].detectable
                            for x in trials
                            if x.probed_baseline[0].detectable is not None
                        ]
                    )
                )
                for n, trials in by_size.items()
            }
            aimed = {n: calibrations[n].to(stated[n]) for n in args.sizes}
            power_tasks = [
                Task(n, trial, args.seed, aimed[n].broken, args.resamples, args.alpha)
                for n in args.sizes
                for trial in range(args.power_trials)
            ]
            powered = list(pool.map(run_trial, power_tasks, chunksize=4))
    at_stated = {
        n: powered[i * args.power_trials : (i + 1) * args.power_trials]
        for i, n in enumerate(args.sizes)
    }
    failures: list[str] = []
    body = []
    for n, trials in by_size.items():
        t = len(trials)
        off = sum(x.off[0].failed for x in trials)
        old = sum(x.old_baseline[0].failed for x in trials)
        new = sum(x.probed_baseline[0].failed for x in trials)
        for label, hits in (("one-run baseline", old), ("probed baseline", new)):
            if wilson(hits, t)[0] > args.alpha:
                failures.append(f"{n} queries, {label}: A/A with the probe {hits / t:.3f}")
        caught = sum(x.probed_baseline[1].regressed for x in at_stated[n])
        if caught / len(at_stated[n]) < STATED_POWER - STATED_TOLERANCE:
            failures.append(f"{n} queries: power at the stated drop {caught / len(at_stated[n])}")
        if any(x.deterministic_fired for x in trials):
            failures.append(f"{n} queries: the probe fired on the deterministic retriever")
        runs = 1 + sum(x.fired[1] for x in trials) / t * (PROBE.repeats - 1)
        body.append(
            [
                str(n),
                rate(off, t),
                rate(old, t),
                rate(new, t),
                f"{sum(x.fired[1] for x in trials) / t:.3f}",
                f"{runs:.2f} + {trials[0].probed}",
                "; ".join(
                    f"{sum(getattr(x, view)[1].failed for x in trials) / t:.3f}"
                    for view in ("off", "old_baseline", "probed_baseline")
                ),
                "; ".join(
                    median_pt([getattr(x, view)[0].detectable for x in trials])
                    for view in ("off", "old_baseline", "probed_baseline")
                ),
                f"{pt(stated[n])}: {rate(caught, len(at_stated[n]))}",
                f"{trials[0].probed} ({trials[0].probed / n:.1%}); "
                f"{sum(x.deterministic_fired for x in trials)} of {t}",
            ]
        )
    header = [
        "queries",
        "A/A P(fail): probe off [95% MC]",
        "probe on, one-run baseline",
        "probe on, probed baseline",
        "probe found noise",
        "current runs + queries re-run",
        "-5 pt P(fail): off; one-run; probed",
        "detectable drop pt (median): off; one-run; probed",
        "probed: ndcg@10 regressed at its stated drop",
        "deterministic BM25: re-run (share); probe fired",
    ]
    print(
        "\nP(the gate fails) (any check failed) with its Wilson 95% Monte Carlo interval; "
        "'one-run baseline' is a baseline made without the probe (or before it existed), "
        "'probed baseline' the default flow, where `baseline` probed too. Claims: with the "
        f"probe, the A/A rate at most alpha {args.alpha:g} (fails only when the whole interval "
        "is above it); with a probed baseline, the ndcg@10 check regresses at the detectable "
        f"drop compare() states (median over the A/A trials; {args.power_trials} trials a "
        "size, the worse retriever calibrated to it as in bench_noise.py) at least "
        f"{STATED_POWER - STATED_TOLERANCE:.2f} of the time (the power it is stated at is "
        f"{STATED_POWER:g}); a deterministic retriever is never repeated and pays the re-run "
        "sample alone:\n"
    )
    print(table(header, body, right=set(range(len(header)))))
    elapsed = time.perf_counter() - start
    print(f"\n{elapsed:.0f} s in all ({elapsed / 60:.1f} min)")
    for failure in failures:
        print(f"FAILED: {failure}")
    if failures:
        return 1
    print("every claim holds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
