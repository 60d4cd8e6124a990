"""Run the user-facing commands on the bundled examples and keep every output, for a diff.

A refactor must not change what users see. This script copies `configs/` into a scratch
git repository, runs each command there (as a real subprocess of the installed
`retrieval-gate`), and writes every command's exit code, stdout and stderr, and every file
the commands wrote, into one folder, with the run's clock readings masked. Run it before
and after a change and compare:

    python benchmarks/tools/behaviour_snapshot.py --out /tmp/before
    # ... the change ...
    python benchmarks/tools/behaviour_snapshot.py --out /tmp/after --compare /tmp/before

`--compare` prints each file that differs and exits 1 if any does. The commands run as
`python -m retrieval_gate`, so another checkout is snapshotted by putting it first on
PYTHONPATH (a git worktree of the commit before the change, say).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# (name, arguments): run in order, in one scratch folder, so later commands read what
# earlier ones wrote (the baseline `compare` re-decides, the result `comment` renders).
COMMANDS: list[tuple[str, list[str]]] = [
    ("check-example", ["check", "-c", "example.yaml"]),
    ("check-regressed", ["check", "-c", "example-regressed.yaml"]),
    ("check-regressed-sequential", ["check", "-c", "example-regressed.yaml", "--sequential"]),
    ("check-evaluators", ["check", "-c", "example-evaluators.yaml"]),
    ("check-two-stage", ["check", "-c", "example-two-stage.yaml"]),
    ("check-hybrid", ["check", "-c", "example-hybrid.yaml"]),
    ("baseline-noisy-repeats", ["baseline", "-c", "example-noisy.yaml", "--repeats", "2"]),
    ("check-noisy-repeats", ["check", "-c", "example-noisy.yaml", "--repeats", "2"]),
    ("check-evaluators-sequential", ["check", "-c", "example-evaluators.yaml", "--sequential"]),
    ("check-against-head", ["check", "-c", "example-regressed.yaml", "--against", "HEAD"]),
    ("check-tiny", ["check", "-c", "tiny/retrieval-gate.yaml"]),
    (
        "compare",
        [
            "compare",
            ".retrieval-gate/example/baseline.json",
            ".retrieval-gate/example-regressed/result.json",
            "-c",
            "example.yaml",
            "--json",
            "compare-result.json",
            "--markdown",
            "compare-report.md",
        ],
    ),
    ("run-tiny", ["run", "-c", "tiny/retrieval-gate.yaml", "-o", "tiny-run.trec"]),
    ("evaluate-tiny", ["evaluate", "tiny/qrels.txt", "tiny/run.txt"]),
    ("power", ["power", "-c", "example.yaml"]),
    ("power-json", ["power", "-c", "example.yaml", "--format", "json"]),
    ("power-claim", ["power", "--claim", "0.02", "--n", "131", "-c", "example.yaml"]),
    ("lint", ["lint", "-c", "example.yaml"]),
    ("label-queue", ["label-queue", "-c", "example.yaml", "--sample", "5", "-o", "queue.jsonl"]),
    (
        "label-queue-run",
        [
            "label-queue",
            "-c",
            "example-regressed.yaml",
            "--run",
            ".retrieval-gate/example-regressed/result.json",
            "-o",
            "queue-run.csv",
            "--format",
            "csv",
        ],
    ),
    ("metrics", ["metrics"]),
    ("config-validate", ["config", "validate", "-c", "example.yaml"]),
    ("config-reference", ["config", "reference"]),
    ("baseline-tiny", ["baseline", "-c", "tiny/retrieval-gate.yaml", "--force"]),
    ("comment-no-pr", ["comment", "--no-pr-comment", ".retrieval-gate/example/result.json"]),
]

# A run's clock readings and scratch paths, which differ between any two runs.
_MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"in \d+(?:\.\d+)?s\b"), "in <s>s"),
    (re.compile(r'"(seconds|elapsed|wall|duration)[a-z_]*": [0-9.e+-]+'), r'"\1": <s>'),
    (re.compile(r"\b[0-9a-f]{40}\b"), "<commit>"),
]


def _masked(text: str, scratch: str) -> str:
    text = text.replace(scratch, "<scratch>")
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


def snapshot(out: Path) -> None:
    """Run every command in a scratch copy of configs/ and write what it showed into out."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    exe = [sys.executable, "-m", "retrieval_gate"]  # the package PYTHONPATH or the venv gives
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "repo"
        listed = subprocess.run(
            ["git", "ls-files", "-z", "configs"], cwd=REPO, capture_output=True, check=True
        ).stdout.decode("utf-8")
        for name in filter(None, listed.split("\0")):  # tracked files only: no local leftovers
            target = scratch / Path(name).relative_to("configs")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "RETRIEVAL_GATE_"))
        }
        env.update(
            GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
            GIT_COMMITTER_DATE="2026-01-01T00:00:00Z",
            GIT_AUTHOR_NAME="snapshot",
            GIT_AUTHOR_EMAIL="snapshot@example.invalid",
            GIT_COMMITTER_NAME="snapshot",
            GIT_COMMITTER_EMAIL="snapshot@example.invalid",
            NO_COLOR="1",
            NOISY_BM25_SEED="7",
            COLUMNS="100",
        )
        for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "x"]):
            subprocess.run(["git", *argv], cwd=scratch, env=env, check=True)
        for name, args in COMMANDS:
            done = subprocess.run(
                [*exe, *args],
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                check=False,
            )
            (out / f"{name}.console").write_text(
                f"exit {done.returncode}\n--- stdout\n{_masked(done.stdout, str(scratch))}"
                f"--- stderr\n{_masked(done.stderr, str(scratch))}",
                encoding="utf-8",
            )
        tracked = set(
            subprocess.run(
                ["git", "ls-files"], cwd=scratch, capture_output=True, text=True, check=True
            ).stdout.split()
        )
        for path in sorted(scratch.rglob("*")):
            relative = path.relative_to(scratch).as_posix()
            if not path.is_file() or relative.startswith(".git/") or "__pycache__" in relative:
                continue
            if path.suffix == ".sqlite":  # the answer cache and Qdrant's store: not output
                continue
            if relative in tracked and (REPO / "configs" / relative).read_bytes() == (
                path.read_bytes()
            ):
                continue
            target = out / "files" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            try:
                target.write_text(_masked(data.decode("utf-8"), str(scratch)), encoding="utf-8")
            except UnicodeDecodeError:
                target.write_bytes(data)


def differences(before: Path, after: Path) -> list[str]:
    """The relative paths that differ between two snapshots, with a short unified diff."""
    lines: list[str] = []
    names = {p.relative_to(before).as_posix() for p in before.rglob("*") if p.is_file()}
    names |= {p.relative_to(after).as_posix() for p in after.rglob("*") if p.is_file()}
    for name in sorted(names):
        a, b = before / name, after / name
        if not a.exists() or not b.exists():
            lines.append(f"{name}: only {'after' if b.exists() else 'before'}")
            continue
        if a.read_bytes() == b.read_bytes():
            continue
        lines.append(f"{name}: differs")
        try:
            diff = difflib.unified_diff(
                a.read_text(encoding="utf-8").splitlines(),
                b.read_text(encoding="utf-8").splitlines(),
                lineterm="",
                n=1,
            )
            lines.extend(f"    {line}" for line in list(diff)[:20])
        except UnicodeDecodeError:
            pass
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write (replaced)")
    parser.add_argument("--compare", type=Path, help="an earlier snapshot to diff against")
    args = parser.parse_args(argv)
    snapshot(args.out)
    files = sum(1 for p in args.out.rglob("*") if p.is_file())
    print(f"behaviour_snapshot: {len(COMMANDS)} commands, {files} files in {args.out}")
    if args.compare is None:
        return 0
    lines = differences(args.compare, args.out)
    for line in lines:
        print(line)
    changed = sum(1 for line in lines if not line.startswith("    "))
    print(f"behaviour_snapshot: {changed} of {files} files differ from {args.compare}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
