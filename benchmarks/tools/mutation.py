"""Mutation score of the core modules: how many small wrong formulas their tests catch.

Each mutant (`mutants.py`) changes one thing in one module: a comparison flipped, + and -,
* and / swapped, a number moved by one, min and max swapped, `not` added to or taken from a
condition, and and or swapped, a numeric return value negated. A seeded sample of them per
module is run against the test files that exercise it (its own, named after it as the tests
are, then `EXTRA_TESTS`), in a copy of the repository (the working tree is never touched),
with `pytest -x`: a mutant is killed when a test fails or it runs past the timeout, and
survives when every test passes. Each run draws a new seed (printed) unless given one: the
score is measured on mutants no test was written against.

    python benchmarks/tools/mutation.py  # the core modules, a new sample
    python benchmarks/tools/mutation.py --modules gate,stats --seed 7  # every module of both
    python benchmarks/tools/mutation.py --modules stats/detectability.py --per-module 0  # all
    python benchmarks/tools/mutation.py --match critical_t  # these mutants only
    python benchmarks/tools/mutation.py --list  # the sample and its tests, not run

A survivor is either a gap in the tests or an equivalent mutant (no input can tell it from
the original): `mutation_equivalents.py` lists those judged so, with why, and the score leaves
them out: (killed + timed out) / (mutants - equivalent).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.tools.mutants import PACKAGE, Site, materialise, sample, sites
from benchmarks.tools.mutation_equivalents import EQUIVALENTS

ROOT = Path(__file__).resolve().parents[2]

MODULES = (
    "metrics/ranking.py",
    "metrics/measures.py",
    "gate/decide.py",
    "gate/checks/compare.py",
    "gate/checks/verdicts.py",
    "gate/checks/operational.py",
    "gate/checks/slicing.py",
    "stats/significance.py",
    "stats/detectability.py",
    "stats/quantile_tests.py",
    "stats/ppi.py",
    "gate/explain/label_holes.py",
    "history/drift.py",
    "core/redaction.py",
    "gate/baseline/record.py",
)
"""The default run: core modules, 10 mutants each. Paths under the package; one without
`.py` is a package, expanded into every module under it (`--modules gate,stats,history,
judging` covers those four). Those absent from the tree are skipped."""

EXTRA_TESTS: dict[str, tuple[str, ...]] = {
    # Which sides a decision compares, and the document view: both reached by the re-chunk's.
    "gate/baseline/compared_sides": ("tests/gate/baseline/test_rechunk.py",),
    "gate/baseline/document_level": ("tests/gate/baseline/test_rechunk.py",),
    "gate/baseline/comparable": ("tests/pipeline/test_check.py",),
    "gate/baseline/document": (
        "tests/gate/baseline/test_file.py",
        "tests/gate/baseline/test_file_limits.py",
    ),
    "gate/baseline/provenance": ("tests/gate/baseline/test_file.py",),
    # power's human+llm view is read through the example's judged fixture there.
    "gate/power/assisted_view": ("tests/gate/modes/test_assisted.py",),
    "gate/baseline/record": (
        "tests/gate/baseline/test_file.py",
        "tests/gate/baseline/test_file_operational.py",
    ),
    "gate/baseline/side_file": (
        "tests/gate/baseline/test_side_file_bytes.py",
        "tests/gate/baseline/test_file.py",
    ),
    # The rules' verdicts and the family's shares of alpha are tested through compare.
    "gate/checks/compare": (
        "tests/gate/checks/test_operational.py",
        "tests/gate/checks/test_slicing_validation.py",
        "tests/gate/baseline/test_repeats.py",
        "tests/gate/checks/test_verdicts.py",
        "tests/gate/checks/test_family.py",
    ),
    "gate/checks/compare_inputs": (
        "tests/gate/checks/test_compare_edges.py",
        "tests/gate/checks/test_compare.py",
    ),
    # The run noise moved out of compare: its tests are compare's.
    "gate/checks/run_noise": (
        "tests/gate/checks/test_compare_noise_values.py",
        "tests/gate/checks/test_operational.py",
    ),
    "gate/checks/policy": ("tests/config/test_columns.py", "tests/gate/test_decide.py"),
    "gate/checks/verdicts": ("tests/gate/checks/test_compare_edges.py",),
    # A chunked corpus's other level is decided here and tested with compared_sides.
    "gate/decide": (
        "tests/gate/modes/test_assisted.py",
        "tests/gate/baseline/test_compared_sides.py",
    ),
    # graded_blocks in more than one block: read through top_k_facts's.
    "gate/explain/diagnostics": ("tests/gate/explain/test_top_k_facts.py",),
    # The extremes are checked against brute force through label_holes's tests.
    "gate/explain/label_hole_extremes": ("tests/gate/explain/test_label_holes.py",),
    # power under gate.labels human+llm (the assisted view replaces the spread) is run there.
    "gate/power/estimate": ("tests/gate/modes/test_assisted.py",),
    # power's report is rendered by estimate's tests: its text, json and data sources.
    "gate/power/figures": (
        "tests/gate/power/test_estimate.py",
        "tests/gate/power/test_estimate_statements.py",
        "tests/gate/power/test_estimate_sources.py",
    ),
    "gate/result": ("tests/report/test_render.py",),
    "history/__init__": ("tests/cli/commands/test_history.py",),
    # Drift under gate.labels human+llm (the gate's own p-value) is run end to end there.
    "history/drift": ("tests/gate/modes/test_assisted.py",),
    "history/record": ("tests/history/test_store.py",),
    "history/trend": ("tests/report/test_trend.py",),
    "judging/calls": ("tests/pipeline/test_synthesize.py",),
    "judging/prompt": ("tests/judging/test_client.py", "tests/judging/test_grading.py"),
    "judging/spend": ("tests/judging/test_grading.py",),
    "judging/synthesis": ("tests/pipeline/test_synthesize.py",),
    "metrics/measures": ("tests/metrics/test_spec.py", "tests/oracles/test_trec_eval.py"),
    "metrics/ranking": (
        "tests/metrics/test_measures_textbook.py",
        "tests/oracles/test_trec_eval.py",
    ),
    "core/redaction": ("tests/core/test_wording.py",),
    "stats/detectability": ("tests/gate/power/test_estimate.py",),
}
"""Module (path under the package, without `.py`) -> test files (under tests/) that exercise
it beyond its own: a module's own tests are found by name (`own_tests`), as the tests are
named after the module they test; these are the few places a module is tested elsewhere,
or tested only there. Run after its own tests."""

EQUIVALENT = {entry[:5]: entry[5] for entry in EQUIVALENTS}
"""Mutant key -> why it is equivalent (`mutation_equivalents.py`)."""

_IGNORED = shutil.ignore_patterns(
    ".git", "__pycache__", "*.pyc", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)


@dataclass(frozen=True)
class Outcome:
    """What the tests did with one mutant."""

    mutant: str
    key: tuple[str, str, str, str, str]
    status: str
    """killed, survived, timeout."""
    seconds: float


class Workspace:
    """A copy of the repository (and `../shared` linked beside it, as the tests expect) in
    which one mutant at a time is written."""

    def __init__(self, root: Path, parent: Path) -> None:
        self.repo = parent / "repo"
        shutil.copytree(root, self.repo, ignore=_IGNORED, symlinks=True)
        shared = root.parent / "shared"
        if shared.exists():
            (parent / "shared").symlink_to(shared.resolve(), target_is_directory=True)
        where = subprocess.run(
            [sys.executable, "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
            cwd=self.repo,
            env=self._env(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not Path(where).resolve().is_relative_to(self.repo.resolve()):
            raise SystemExit(f"the tests would import {where}, not the copy: check PYTHONPATH")

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.repo), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        # Bytecode is never cached: a mutant of the same size written within the same second
        # as the one before would otherwise run the one before.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def run(self, tests: Sequence[str], timeout: float) -> tuple[str, float]:
        # One process a mutant: xdist's workers would each import and collect again, about
        # three times the CPU for a module's test files; `--jobs` runs mutants side by side.
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            *tests,
        ]
        started = time.monotonic()
        child = subprocess.Popen(
            command,
            cwd=self.repo,
            env=self._env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(child)
            return "timeout", time.monotonic() - started
        except BaseException:
            _kill(child)
            raise
        seconds = time.monotonic() - started
        if code == 0:
            return "survived", seconds
        if code in (1, 2, 3):  # failed, interrupted (an import error), internal error
            return "killed", seconds
        return f"error (pytest exit {code})", seconds


def _kill(child: subprocess.Popen[bytes]) -> None:
    """Stop the test process and whatever it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def units(names: Sequence[str], root: Path = ROOT) -> dict[str, list[str]]:
    """Unit name (a module's path under the package) -> its file, for every module named or
    under a package named; a module without a mutant (an empty `__init__.py`) is left out."""
    base = root / PACKAGE
    found: dict[str, list[str]] = {}
    for name in names:
        stem = name.strip("/").removesuffix(".py")
        if (base / f"{stem}.py").is_file():
            files = [f"{stem}.py"]
        elif (base / stem).is_dir():
            files = sorted(p.relative_to(base).as_posix() for p in (base / stem).rglob("*.py"))
        else:
            print(f"note: {name}: no such module under {PACKAGE}/, skipped", file=sys.stderr)
            continue
        for path in files:
            if sites(path, (base / path).read_text(encoding="utf-8")):
                found[path] = [path]
            elif len(files) == 1:
                print(f"note: {name}: no mutant to make, skipped", file=sys.stderr)
    return found


def own_tests(module: str, root: Path = ROOT) -> list[str]:
    """The test files named after `module` (a path under the package), as
    tests/test_architecture.py names them: tests/<path>/test_<name>.py and
    test_<name>_<aspect>.py, less those named after a longer module beside it
    (test_compare_inputs.py tests compare_inputs.py, not compare.py). A package's
    `__init__.py` is the package's: tests/<parent>/test_<package>*.py. Paths from `root`."""
    path = PurePosixPath(module.removesuffix(".py"))
    if path.name == "__init__":
        path = path.parent
    beside = root / PACKAGE / path.parent
    names = {p.stem for p in beside.glob("*.py")} | {
        p.name for p in beside.iterdir() if (p / "__init__.py").is_file()
    }
    names.discard("__init__")
    found = []
    for test in sorted((root / "tests" / path.parent).glob(f"test_{path.name}*.py")):
        stem = test.stem.removeprefix("test_")
        fits = [name for name in names if stem == name or stem.startswith(f"{name}_")]
        if max(fits, key=len, default=None) == path.name:
            found.append(test.relative_to(root).as_posix())
    return found


def tests_of(unit: str, overrides: dict[str, tuple[str, ...]], root: Path) -> list[str]:
    """The test files (relative to the repository at `root`) run against `unit`'s mutants:
    its own (`own_tests`), then its `EXTRA_TESTS`; or the `--tests` given for it (a path
    from the root, or a bare name found anywhere under tests/)."""
    stem = unit.removesuffix(".py")
    if stem in overrides:
        names: Sequence[str] = overrides[stem]
    else:
        names = [*own_tests(unit, root), *EXTRA_TESTS.get(stem, ())]
    found = []
    for name in names:
        if "/" in name:
            paths = [root / name] if (root / name).is_file() else []
        else:
            paths = sorted((root / "tests").rglob(name))
        if not paths:
            print(f"note: {unit}: test file {name} not found, skipped", file=sys.stderr)
        found += [p.relative_to(root).as_posix() for p in paths]
    return list(dict.fromkeys(found))


def _overrides(items: Sequence[str]) -> dict[str, tuple[str, ...]]:
    mapping = {}
    for item in items:
        unit, _, files = item.partition("=")
        if not files:
            raise SystemExit(f"--tests takes MODULE=FILE[,FILE...], got {item!r}")
        mapping[unit.removesuffix(".py")] = tuple(f for f in files.split(",") if f)
    return mapping


@dataclass
class Row:
    unit: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    timeout: int = 0
    equivalent: int = 0
    errors: int = 0
    note: str = ""

    @property
    def score(self) -> float | None:
        judged = self.mutants - self.equivalent - self.errors
        return (self.killed + self.timeout) / judged if judged > 0 else None


def chosen_sites(
    unit: str, texts: dict[str, str], args: argparse.Namespace
) -> tuple[int, list[Site]]:
    """How many mutants the files of `unit` (path -> text) have, and those sampled (or
    matched by --match)."""
    files = list(texts)
    found = [site for path in files for site in sites(path, texts[path])]
    if args.match:
        matched = [s for s in found if args.match in materialise(s, texts[s.path]).describe()]
        return len(found), matched
    return len(found), sample(found, args.per_module, args.seed, unit)


def run_unit(
    unit: str,
    files: Sequence[str],
    tests: Sequence[str],
    args: argparse.Namespace,
    pool: list[Workspace],
    lock: threading.Lock,
) -> tuple[Row, list[Outcome]]:
    """Run the sampled mutants of one unit; the tests must pass on the original first."""
    row = Row(unit)
    workspace = pool[0]
    # The copy's text: what was there when the run started, whatever happens to the tree.
    texts = {path: (workspace.repo / PACKAGE / path).read_text(encoding="utf-8") for path in files}
    found, chosen = chosen_sites(unit, texts, args)
    print(
        f"{unit}: {found} mutants, {len(chosen)} sampled; tests: {' '.join(tests)}",
        file=sys.stderr,
    )
    status, base_seconds = workspace.run(tests, timeout=args.base_timeout)
    if status != "survived":
        row.note = f"the tests do not pass unmutated ({status}): not run"
        return row, []
    timeout = args.timeout or max(30.0, 3.0 * base_seconds)

    def one(site: Site) -> Outcome:
        mutant = materialise(site, texts[site.path])
        with lock:
            space = pool.pop()
        try:
            target = space.repo / PACKAGE / site.path
            target.write_text(mutant.source, encoding="utf-8")
            try:
                status, seconds = space.run(tests, timeout)
            finally:
                target.write_text(texts[site.path], encoding="utf-8")
        finally:
            with lock:
                pool.append(space)
        print(f"  {status:9} {seconds:5.1f}s  {mutant.describe()}", file=sys.stderr)
        return Outcome(mutant.describe(), mutant.key, status, seconds)

    with ThreadPoolExecutor(max_workers=args.jobs) as executor:
        outcomes = list(executor.map(one, chosen))
    row.mutants = len(outcomes)
    for outcome in outcomes:
        if outcome.status == "survived" and outcome.key in EQUIVALENT:
            row.equivalent += 1
        elif outcome.status in ("killed", "survived", "timeout"):
            setattr(row, outcome.status, getattr(row, outcome.status) + 1)
        else:
            row.errors += 1
    return row, outcomes


def report(rows: Sequence[Row], outcomes: dict[str, list[Outcome]]) -> str:
    """The Markdown table of every unit, then each unit's survivors."""
    lines = [
        "| module | mutants | killed | timed out | survived | equivalent | score |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    total = Row("all")
    for row in rows:
        score = "-" if row.score is None else f"{row.score:.0%}"
        lines.append(
            f"| {row.unit} | {row.mutants} | {row.killed} | {row.timeout} | {row.survived} | "
            f"{row.equivalent} | {score} |" + (f" {row.note}" if row.note else "")
        )
        for name in ("mutants", "killed", "timeout", "survived", "equivalent", "errors"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
    if len(rows) > 1:
        score = "-" if total.score is None else f"{total.score:.0%}"
        lines.append(
            f"| all | {total.mutants} | {total.killed} | {total.timeout} | {total.survived} | "
            f"{total.equivalent} | {score} |"
        )
    lines.append("")
    lines.append("Score: (killed + timed out) / (mutants - equivalent).")
    for row in rows:
        left = [o for o in outcomes.get(row.unit, []) if o.status not in ("killed", "timeout")]
        if not left:
            continue
        lines += ["", f"Survivors of {row.unit}:"]
        for outcome in left:
            why = EQUIVALENT.get(outcome.key)
            mark = f"  [equivalent: {why}]" if outcome.status == "survived" and why else ""
            status = "" if outcome.status == "survived" else f"  [{outcome.status}]"
            lines.append(f"- {outcome.mutant}{mark}{status}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--modules", default=",".join(MODULES), help="paths under the package; a package: all"
    )
    parser.add_argument("--per-module", type=int, default=10, help="mutants per module (0: all)")
    parser.add_argument(
        "--seed", type=int, help="the sample's seed (default: a new one each run, printed)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    parser.add_argument(
        "--tests", action="append", default=[], help="MODULE=FILE[,FILE...]: its test files"
    )
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per mutant")
    parser.add_argument("--base-timeout", type=float, default=600.0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--match", help="only the mutants whose description holds this text (all, not sampled)"
    )
    parser.add_argument("--list", action="store_true", help="print the sample, run nothing")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    args = parser.parse_args(argv)
    if args.seed is None:
        # A sample no test was written against: a fixed seed's survivors get tests, and its
        # score then says little of the mutants nobody looked at.
        args.seed = random.SystemRandom().randrange(2, 1_000_000)
    print(f"seed {args.seed} (--seed {args.seed} draws this sample again)", file=sys.stderr)
    overrides = _overrides(args.tests)
    chosen_units = units([m.strip() for m in args.modules.split(",") if m.strip()])
    if args.list:
        for unit, files in chosen_units.items():
            texts = {path: (ROOT / PACKAGE / path).read_text(encoding="utf-8") for path in files}
            found, picked = chosen_sites(unit, texts, args)
            print(f"{unit}: {len(picked)} of {found}; tests: {tests_of(unit, overrides, ROOT)}")
            for site in picked:
                print("  " + materialise(site, texts[site.path]).describe())
        return 0
    started = time.monotonic()
    rows: list[Row] = []
    outcomes: dict[str, list[Outcome]] = {}
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="retrieval_gate_mutation_") as scratch:
        pool = []
        for job in range(max(1, args.jobs)):
            home = Path(scratch) / f"job{job}"
            home.mkdir()
            pool.append(Workspace(ROOT, home))
        for unit, files in chosen_units.items():
            tests = tests_of(unit, overrides, pool[0].repo)  # the copy: what was there at start
            if not tests:
                rows.append(Row(unit, note="no test files: not run"))
                continue
            row, found = run_unit(unit, files, tests, args, pool, lock)
            rows.append(row)
            outcomes[unit] = found
    print(report(rows, outcomes))
    print(f"\nseed {args.seed}, {args.per_module} per module, {time.monotonic() - started:.0f} s")
    if args.json:
        payload = {
            "seed": args.seed,
            "per_module": args.per_module,
            "outcomes": {unit: [asdict(o) for o in found] for unit, found in outcomes.items()},
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
