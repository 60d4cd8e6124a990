"""Reading a large history: streamed (memory that does not grow), output as before, BOM taken."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.core.wording import aligned, console_text, excerpt, json_text, one_line
from retrieval_gate.history.record import (
    AcceptEntry,
    Entry,
    entry_summary,
    parse_entry,
    result_entry,
)
from tests.helpers.git import git
from tests.helpers.paths import REPO

RECORDS = 8_000
"""Records of the history whose reading must take no more memory than a tenth of it: kept
whole, the other 7,200 would take about 120 MB, three times the growth allowed."""
COMPARED = 2_000
"""Records of the history printed both ways: every variation of `varied_lines` many times
over, about 35 MB (each of the seven commands reads all of it)."""


def cli(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    """`retrieval-gate ARGV` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "retrieval_gate", *argv],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
        timeout=600,
    )


def sha(n: int) -> str:
    return hashlib.sha1(str(n).encode()).hexdigest()


@pytest.fixture(scope="module")
def one_record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A history line of configs/tiny (a real `check` result), parsed."""
    folder = tmp_path_factory.mktemp("tiny") / "tiny"
    shutil.copytree(REPO / "configs" / "tiny", folder)
    config = str(folder / "retrieval-gate.yaml")
    done = cli("baseline", "-c", config, "--quiet", "--force")
    assert done.returncode == 0, done.stderr.decode()
    result = folder / "result.json"
    done = cli("check", "-c", config, "--quiet", "--no-cache", "--json", str(result))
    assert done.returncode == 0, done.stderr.decode()
    entry = result_entry(
        json.loads(result.read_text(encoding="utf-8")),
        str(result),
        commit=sha(0),
        time="2026-01-01T00:00:00Z",
        ref="refs/heads/main",
        subject="Merge pull request #5 from a/b",
    )
    from retrieval_gate.history.record import entry_line

    line: dict[str, Any] = json.loads(entry_line(entry))
    return line


def varied_lines(record: dict[str, Any], count: int, seed: int = 7) -> list[str]:
    """`count` history lines made from `record`: acceptances, other configs, results without
    a pull request, with a metric missing or an extra one, long statuses, negative means."""
    rng = random.Random(seed)
    lines = []
    for n in range(count):
        if n % 7 == 3:
            reason = "a trade-off " * rng.randint(1, 12)
            accept = {"kind": "accept", "config": "tiny", "commit": sha(n), "reason": reason}
            lines.append(
                json.dumps({"history_schema": 1, **accept, "time": "2026-02-01T00:00:00Z"})
            )
            continue
        line = json.loads(json.dumps(record))
        line["commit"] = sha(n)
        line["pr"] = None if n % 5 == 0 else n
        means = line["means"]
        if n % 11 == 0:
            means.pop("rr@10")
        if n % 13 == 0:
            means[f"extra@{n % 3}"] = rng.random() * 100
        if n % 23 == 0:
            line["means"] = {name: -value for name, value in means.items()}
        if n % 17 == 0:
            line["status"] = "x" * rng.randint(1, 120)
        if n % 19 == 0:
            line["config"] = "other"
        lines.append(json.dumps(line, separators=(",", ":")))
    return lines


def read_all(path: Path) -> list[Entry]:
    """Every record of a history file, as the reader before streaming took them: the whole
    text split into lines, each parsed (kept without its per-query record: only the summary
    is compared)."""
    entries: list[Entry] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if line.strip():
            entry = parse_entry(line, str(path), number)
            if not isinstance(entry, AcceptEntry):
                entry = dataclasses.replace(entry, record=None)  # type: ignore[arg-type]
            entries.append(entry)
    return entries


def old_list(entries: list[Entry]) -> str:
    """`history list` as it printed before it streamed (the same code, on a list)."""
    if not entries:
        return "no records\n"
    metrics = list(dict.fromkeys(m for e in entries if not isinstance(e, AcceptEntry)
                                 for m in e.means))[:4]  # fmt: skip
    rows = [["config", "commit", "time", "pr", "status", *metrics]]
    for entry in entries:
        pr = "" if isinstance(entry, AcceptEntry) or entry.pr is None else f"#{entry.pr}"
        head = [entry.config, entry.commit[:12], entry.time, pr]
        if isinstance(entry, AcceptEntry):
            rows.append([*head, f"accepted: {excerpt(entry.reason, 80)}", *[""] * len(metrics)])
        else:
            means = [f"{entry.means[m]:.4f}" if m in entry.means else "-" for m in metrics]
            rows.append([*head, excerpt(entry.status, 80), *means])
    return "".join(line + "\n" for line in aligned(rows))


def cell(value: str) -> str:
    text = console_text(one_line(value))
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def old_export_csv(entries: list[Entry]) -> str:
    """`history export --format csv` as it wrote before it streamed (the same code)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["config", "kind", "commit", "time", "ref", "pr", "status", "metric",
                     "slice", "value", "reason"])  # fmt: skip
    for entry in entries:
        head = [entry.config, entry.kind, entry.commit, entry.time]
        if isinstance(entry, AcceptEntry):
            writer.writerow([*head, "", "", "", "", "", "", cell(entry.reason)])
            continue
        common = [*head, cell(entry.ref), entry.pr or "", cell(entry.status)]
        for metric, mean in entry.means.items():
            writer.writerow([*common, cell(metric), "all", repr(mean), ""])
        for name, means in entry.slices.items():
            for metric, mean in means.items():
                writer.writerow([*common, cell(metric), cell(name), repr(mean), ""])
    return buffer.getvalue()


def test_a_large_history_prints_what_the_whole_file_reader_printed(
    one_record: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(varied_lines(one_record, COMPARED)) + "\n", encoding="utf-8")
    entries = read_all(path)
    assert len(entries) == COMPARED
    for name in (None, "tiny", "other", "nobody"):
        chosen = [e for e in entries if name is None or e.config == name]
        option = ["--name", name] if name else []
        done = cli("history", "list", "--from", str(path), *option)
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode("utf-8") == old_list(chosen)
    done = cli("history", "export", "--format", "json", "--from", str(path))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == json_text([entry_summary(e) for e in entries]) + "\n"
    done = cli("history", "export", "--format", "csv", "--from", str(path), "--name", "nobody")
    assert done.stdout.decode("utf-8") == old_export_csv([])
    done = cli("history", "export", "--format", "csv", "--from", str(path))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == old_export_csv(entries)


def test_a_metric_first_seen_late_and_acceptances_first_keep_the_columns(
    one_record: dict[str, Any], tmp_path: Path
) -> None:
    lines = varied_lines(one_record, 40)
    accepts = [line for line in lines if '"accept"' in line]
    results = [line for line in lines if '"accept"' not in line]
    first = json.loads(results[0])
    first["means"] = {}  # a result with no metric at all, then the metrics arrive
    path = tmp_path / "history.jsonl"
    text = "\n".join([*accepts, json.dumps(first), *results[1:]]) + "\n"
    path.write_text(text, encoding="utf-8")
    done = cli("history", "list", "--from", str(path))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == old_list(read_all(path))


def test_a_bad_line_at_the_end_is_an_error_before_anything_is_printed(
    one_record: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    lines = varied_lines(one_record, 200)
    path.write_text("\n".join([*lines, '{"history_schema": 1, cut sh']) + "\n", encoding="utf-8")
    for action in (["list"], ["export", "--format", "csv"], ["export", "--format", "json"]):
        done = cli("history", *action, "--from", str(path))
        assert done.returncode == 2
        assert done.stdout == b""
        assert f"history.jsonl:{len(lines) + 1}: not valid JSON" in done.stderr.decode()


# Run by a small process of its own: on Linux a child's peak RSS starts at its parent's
# size, and this test process has held large histories.
MEASURE = """\
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss(*argv: str) -> int:
    """The peak resident memory (bytes) of `retrieval-gate ARGV`, its own process only."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "retrieval_gate", *argv],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        check=False,
        timeout=600,
    )
    code, peak = done.stdout.split()
    assert int(code) == 0, done.stderr.decode()
    return int(peak) * (1 if sys.platform == "darwin" else 1024)


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="needs os.wait4 for a child's own peak")
def test_memory_does_not_grow_with_the_history(one_record: dict[str, Any], tmp_path: Path) -> None:
    lines = varied_lines(one_record, RECORDS)
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_text("\n".join(lines[: RECORDS // 10]) + "\n", encoding="utf-8")
    large.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # Whole records kept in memory took about 17 kB each: 120 MB more for the larger file.
    for action in (["list"], ["export", "--format", "csv"], ["show", sha(1)[:10]]):
        grown = peak_rss("history", *action, "--from", str(large)) - peak_rss(
            "history", *action, "--from", str(small)
        )
        assert grown < 40 * 2**20, (action, grown)


def test_a_byte_order_mark_on_a_history_file_or_line_is_accepted(
    one_record: dict[str, Any], tmp_path: Path
) -> None:
    lines = varied_lines(one_record, 6)
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = cli("history", "list", "--from", str(plain))
    assert expected.returncode == 0, expected.stderr.decode()
    # A file an editor saved with a BOM, and two such files concatenated (`cat a b > c`).
    folder = tmp_path / "folder"
    folder.mkdir()
    saved = folder / "tiny.jsonl"
    saved.write_text("\ufeff" + "\n".join(lines[:3]) + "\n\ufeff" + "\n".join(lines[3:]) + "\n",
                     encoding="utf-8")  # fmt: skip
    for source in (saved, folder):
        done = cli("history", "list", "--from", str(source))
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout == expected.stdout
    done = cli("history", "export", "--from", str(saved))
    assert done.returncode == 0, done.stderr.decode()
    assert len(json.loads(done.stdout)) == 6


def test_a_byte_order_mark_on_the_history_branch_is_accepted(
    one_record: dict[str, Any], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "start")
    git(repo, "checkout", "-q", "--orphan", "retrieval-gate-history")
    lines = varied_lines(one_record, 4)
    (repo / "tiny.jsonl").write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8"))
    git(repo, "add", "tiny.jsonl")
    git(repo, "commit", "-qm", "a history edited on Windows")
    git(repo, "checkout", "-q", "main")
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = cli("history", "list", "--from", str(plain))
    done = cli("history", "list", "--repo", str(repo))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == expected.stdout
    done = cli("history", "show", sha(1)[:8], "--repo", str(repo))
    assert done.returncode == 0, done.stderr.decode()
    assert f"result tiny {sha(1)} (line 2)" in done.stdout.decode()
