"""What a pull request's check shows of the main branch's history: the trend and the drift."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Any

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import InputError
from retrieval_gate.history.defaults import DEFAULT_BRANCH
from retrieval_gate.history.record import ResultEntry
from retrieval_gate.history.store import BranchSource, HistorySource, iter_history
from retrieval_gate.history.trend import trend_points

BRANCH_ENV = "RETRIEVAL_GATE_HISTORY_BRANCH"
"""Set by the Action's history fetch step on pull requests: the branch it fetched."""
TREND_POINTS = 100
"""Main's newest results shown; the reports average a longer trend into fewer bars."""


def history_source(given: str | None, config: GateConfig) -> tuple[HistorySource, bool]:
    """Where to read the history, and whether the user named it: `--history` (a .jsonl file
    or folder when one exists at that path, else a branch), $RETRIEVAL_GATE_HISTORY_BRANCH,
    else the default branch of the repository around the config, if it has one."""
    if given:
        path = Path(given)
        if path.exists():
            return path, True
        if path.suffix == ".jsonl":
            raise InputError(
                f"--history {given}: no such file; give a history file, folder or branch"
            )
        return BranchSource(repo=config.base_dir, branch=given), True
    # Named by the Action's fetch step: what it names must be readable, as an option's is.
    branch = os.environ.get(BRANCH_ENV, "").strip()
    return BranchSource(repo=config.base_dir, branch=branch or DEFAULT_BRANCH), bool(branch)


def with_history(
    document: dict[str, Any],
    config: GateConfig,
    source: HistorySource,
    *,
    named: bool,
    dataset: Dataset | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """`document` with main's trend of each overall metric attached, and warning lines naming
    a drift of main past `gate.drift` (the merges it came from). A history that cannot be
    read is an InputError when the user named it, else one warning: the gate's verdict
    does not depend on it."""
    from retrieval_gate.report.trend import with_trend

    try:
        results = (e for e in iter_history(source, config.name) if isinstance(e, ResultEntry))
        # Read one record at a time; without a drift budget only the trend's are kept.
        kept = None if config.gate.drift is not None else TREND_POINTS
        entries = list(deque(results, maxlen=kept))
    except InputError as error:
        if named:
            raise
        return document, [f"main's history not shown: {error}"]
    if not entries:
        return document, []
    metrics = [c["metric"] for c in document.get("comparisons", []) if c.get("slice") == "all"]
    trend = {metric: trend_points(entries[-TREND_POINTS:], metric) for metric in metrics}
    branch = source.branch if isinstance(source, BranchSource) else "main"
    warnings = _drift(entries, config, dataset) if config.gate.drift is not None else []
    return with_trend(document, trend, branch=_shown_branch(branch)), warnings


def _shown_branch(history_branch: str) -> str:
    # The trend is main's; the history branch is only where it is kept.
    return "main" if history_branch == DEFAULT_BRANCH else history_branch


def _drift(entries: list[ResultEntry], config: GateConfig, dataset: Dataset | None) -> list[str]:
    """The drift report's lines when main's newest result is past the budget, else none."""
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.history.drift import check_drift, describe, resolver
    from retrieval_gate.pipeline.judge_labels import gate_judge

    try:
        if dataset is None:  # the labelled set the check decided on, else read it
            dataset = load_dataset(
                config.dataset,
                config.base_dir,
                keep_unjudged=config.gate.uses_llm_labels,
            )
        report = check_drift(
            entries,
            config,
            dataset,
            resolve=resolver(config.base_dir),
            judge=gate_judge(config, dataset),
        )
    except InputError as error:
        return [f"main's drift not checked: {error}"]
    if not report.exit_code:
        return []
    # The merges the drift came from; the per-check table and the hint to accept it are for
    # the main branch's job.
    shown = [line for line in describe(report)[1:] if not line.startswith(("  ", "to accept"))]
    return [f"main's drift: {line}" for line in shown]
