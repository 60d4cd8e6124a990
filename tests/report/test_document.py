"""A result is validated before it is rendered: counts, probabilities and per-query scores that
the gate could not have written are refused, naming their field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.builders import checked_tiny
from tests.helpers.cli import run_cli


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The result.json of a real check of configs/tiny."""
    tiny = checked_tiny(tmp_path_factory.mktemp("checked") / "tiny")
    path = tiny / ".retrieval-gate" / "tiny" / "result.json"
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _set(*path: str | int, value: object) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        *parents, last = path
        inner: Any = document
        for key in parents:
            inner = inner[key]
        inner[last] = value

    return change


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            _set("comparisons", 0, "n", value=-5),
            "comparisons: Value error, check 0 (ndcg@10 on all): n counts queries, so is 0 or "
            "more, not -5",
        ),
        (_set("comparisons", 0, "losses", value=-1), "losses counts queries, so is 0 or more"),
        (
            _set("comparisons", 0, "p_value", value=1.5),
            "check 0 (ndcg@10 on all): p_value is a probability within [0, 1], not 1.5",
        ),
        (_set("comparisons", 0, "level", value=-0.01), "level is a probability within [0, 1]"),
        (
            _set(
                "noise",
                value={"reference_runs": -2, "current_runs": 2, "queries": 9, "varying": []},
            ),
            "noise.reference_runs: Input should be greater than or equal to 0",
        ),
        (
            _set("current", "scores", "ndcg@10", 0, value=7.0),
            "current.scores: Value error, ndcg@10[0] (query '",
        ),
        (
            _set("baseline", "scores", "recall@10", 2, value=-3.0),
            "baseline.scores: Value error, recall@10[2]: -3.0 is outside [0, 1], the values "
            "recall@10 takes",
        ),
    ],
)
def test_comment_refuses_what_the_gate_never_writes(
    written: dict[str, Any],
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    says: str,
) -> None:
    document = json.loads(json.dumps(written))
    change(document)
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document), encoding="utf-8")
    code, _, err = run_cli("comment", forged, "--no-pr-comment", "--no-summary")
    assert code == 2, err
    assert f"{forged}: not a retrieval-gate result:" in err
    assert says in err
