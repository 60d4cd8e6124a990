"""What the report tests share: the golden files, the elements of markup, a pinned trend."""

from __future__ import annotations

import dataclasses
import html.parser
import os
import re
from pathlib import Path
from typing import Any

from retrieval_gate.config.loader import load
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.history.record import TrendPoint
from retrieval_gate.pipeline.record import CurrentRun, record_current
from retrieval_gate.report.trend import with_trend
from tests.helpers.paths import REPO

GOLDEN = REPO / "tests" / "golden" / "report"
UPDATE = os.environ.get("RETRIEVAL_GATE_UPDATE_GOLDEN") == "1"


class Elements(html.parser.HTMLParser):
    """Every tag in order, each table row's cells as text, and the tags found inside cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.cell_tags: list[str] = []
        self.cells: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if self._cell is not None:
            self.cell_tags.append(tag)
        if tag == "tr":
            self.cells.append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def elements(markup: str) -> Elements:
    """The tags and table cells of `markup`."""
    parser = Elements()
    parser.feed(markup)
    parser.close()
    return parser


def trend_points(count: int, *, start: float = 0.86, step: float = 0.0013) -> list[Any]:
    """`count` main-branch points of a metric drifting around `start`, deterministic, the
    fourth one without a value; commits and PR numbers follow the index."""
    return [
        TrendPoint(
            commit=f"{i:04x}" + "c0ffee" * 6,
            pr=300 + i if i % 7 else None,
            time=f"2026-10-{1 + i % 30:02d}T12:00:00Z",
            value=float("nan") if i == 3 else start + step * ((i * 37) % 11 - 5) + 0.004 * (i / 10),
        )
        for i in range(count)
    ]


def with_golden_trend(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with 30 merges of ndcg@10 and recall@10 and 1 of rr@10 on main."""
    return with_trend(
        document,
        {
            "ndcg@10": trend_points(30),
            "recall@10": trend_points(30, start=0.64, step=0.002),
            "rr@10": trend_points(1, start=0.97),
        },
    )


def check_golden(name: str, text: str) -> None:
    """`text` equals the golden file byte for byte (RETRIEVAL_GATE_UPDATE_GOLDEN=1 rewrites)."""
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
    assert path.read_text(encoding="utf-8") == text, f"{name} differs from its golden file"


def pinned_records(
    root: Path, config: str, retriever: str, module: str
) -> tuple[Baseline, dict[str, CurrentRun]]:
    """The baseline and current records of a pinned report: `retriever` (a python module's
    text, after a `MODE = "baseline"` or `"current"` line, in the module `module` names with
    `{mode}`) run by `config` (with `@MODULE@` for the module) in `root`, the baseline
    stamped with a fixed time and commit."""
    records = {}
    for mode in ("baseline", "current"):
        name = module.format(mode=mode)
        (root / f"{name}.py").write_text(f"MODE = {mode!r}\n" + retriever)
        path = root / f"{mode}.yaml"
        path.write_text(config.replace("@MODULE@", name))
        records[mode] = record_current(load(path), cache=False, repo_dir=root)
    baseline = dataclasses.replace(
        records["baseline"].record,
        created_at="2026-11-20T09:30:00Z",
        git_commit="0123456789abcdef0123456789abcdef01234567",
        git_dirty=False,
    )
    return baseline, records


def first_screen(report: str) -> str:
    """A Markdown or HTML report as read before opening or hovering anything: each closed
    <details> block reduced to its summary, no title attribute (a tooltip)."""
    folded = re.sub(
        r"<details>(?:<summary>(.*?)</summary>)?.*?</details>", r"\1", report, flags=re.S
    )
    return re.sub(r' title="[^"]*"', "", folded)
