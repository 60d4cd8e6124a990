"""`baseline --if-improved`: the ratchet replaces the baseline only on a proven improvement."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from retrieval_gate.cli.commands.baseline import ratchet
from retrieval_gate.gate.checks.compare import Comparison
from tests.helpers.builders import comparison
from tests.helpers.cli import run_cli
from tests.helpers.generated_project import (
    QUERIES,
    make_project,
    write_config,
    write_retriever,
)
from tests.helpers.paths import CONFIGS


def baseline_of(root: Path) -> Path:
    return root / ".retrieval-gate" / "baseline.json"


def scores(path: Path) -> dict[str, Any]:
    """The baseline's per-query scores (its bytes also hold the time it was made)."""
    return dict(json.loads(path.read_text(encoding="utf-8"))["scores"])


def ratchet_with(root: Path, target: str) -> tuple[int, str, str]:
    config = write_config(root, target, name=f"{target}.yaml")
    return run_cli("baseline", "-c", str(config), "--if-improved", "--quiet")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """make_project's set and retrievers, its baseline made by the worse retriever."""
    root = make_project(tmp_path)
    code, _, err = run_cli("baseline", "-c", str(write_config(root, "worse_search")), "--quiet")
    assert code == 0, err
    return root


def test_a_better_retriever_replaces_the_baseline_and_names_what_improved(project: Path) -> None:
    before = scores(baseline_of(project))
    code, out, err = ratchet_with(project, "good_search")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"wrote {baseline_of(project)}: {QUERIES} queries")
    assert lines[1].startswith("improved (")
    assert "ndcg@10 on intent=billing +" in lines[1]
    assert "(threshold 2 pt)" in lines[1]
    after = scores(baseline_of(project))
    assert after != before
    code, out, _ = run_cli("check", "-c", str(project / "good_search.yaml"), "--quiet")
    assert code == 0, out  # the new baseline is the better retriever's


@pytest.mark.parametrize("target", ["worse_search", "good_search"])
def test_a_worse_or_equal_retriever_keeps_the_baseline_byte_for_byte(
    tmp_path: Path, target: str
) -> None:
    root = make_project(tmp_path)  # the baseline of good_search
    path = baseline_of(root)
    before = path.read_bytes()
    code, out, err = ratchet_with(root, target)
    assert code == 0, err
    assert out.startswith(f"kept {path}: ")
    assert out.count("\n") == 1
    assert path.read_bytes() == before
    if target == "worse_search":
        assert "gated checks fail: " in out
        assert "ndcg@10 on intent=billing -" in out
        assert ", regressed" in out
    else:
        assert "no gated check improved past its threshold with evidence (closest: " in out
    assert not list(path.parent.glob(".*.tmp"))  # no temporary file left behind


def test_better_on_one_slice_and_worse_on_another_keeps_the_baseline(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    write_retriever(root, "howto_broken", broken=60, where="how-to")
    write_retriever(root, "billing_broken", broken=60, where="billing")
    config = write_config(root, "howto_broken", name="howto_broken.yaml")
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    path = baseline_of(root)
    before = path.read_bytes()
    code, out, err = ratchet_with(root, "billing_broken")
    assert code == 0, err
    assert out.startswith(f"kept {path}: ")
    assert "ndcg@10 on intent=billing -" in out
    # What improved is said too, so the trade-off is visible.
    assert "; improved: " in out
    assert "ndcg@10 on intent=how-to +" in out.split("; improved: ")[1]
    assert path.read_bytes() == before


def test_the_decision_and_its_words_are_deterministic(project: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    first = ratchet_with(project, "good_search")
    second = ratchet_with(copy, "good_search")
    assert first[0] == second[0] == 0
    assert first[1].replace(str(project), "ROOT") == second[1].replace(str(copy), "ROOT")
    written = [json.loads(baseline_of(root).read_text()) for root in (project, copy)]
    for document in written:
        document.pop("created_at")
    assert written[0] == written[1]
    kept = [ratchet_with(root, "good_search")[1] for root in (project, project)]
    assert kept[0] == kept[1]
    assert kept[0].startswith("kept ")


def test_without_a_baseline_the_run_is_written_as_usual(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    baseline_of(root).unlink()
    code, out, err = ratchet_with(root, "worse_search")
    assert code == 0, err
    assert out.startswith(f"wrote {baseline_of(root)}: ")
    assert "no baseline to improve on: written as is" in out
    assert baseline_of(root).exists()


def test_force_and_if_improved_exclude_each_other(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    config = root / "gate.yaml"
    code, _, err = run_cli("baseline", "-c", str(config), "--force", "--if-improved")
    assert code == 2
    assert "not allowed with argument" in err


def test_an_unlike_baseline_is_kept_with_exit_2(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    before = baseline_of(root).read_bytes()
    config = write_config(root, "good_search", k=20, name="k20.yaml")
    code, _, err = run_cli("baseline", "-c", str(config), "--if-improved", "--quiet")
    assert code == 2
    assert "is kept: the baseline cannot be compared" in err
    assert baseline_of(root).read_bytes() == before


def test_the_bundled_example_ratchets_up_and_not_back_down(tmp_path: Path) -> None:
    for name in ("example", "example.yaml", "example-regressed.yaml"):
        source = CONFIGS / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name)
        else:
            shutil.copy(source, tmp_path / name)
    path = tmp_path / ".retrieval-gate" / "example" / "baseline.json"
    worse, better = str(tmp_path / "example-regressed.yaml"), str(tmp_path / "example.yaml")
    assert run_cli("baseline", "-c", worse, "--quiet")[0] == 0
    code, out, err = run_cli("baseline", "-c", better, "--if-improved", "--quiet")
    assert code == 0, err
    assert out.startswith(f"wrote {path}: 131 queries")
    assert "\nimproved (" in out
    assert "ndcg@10 +" in out
    replaced = path.read_bytes()
    code, out, err = run_cli("baseline", "-c", worse, "--if-improved", "--quiet")
    assert code == 0, err
    assert out.startswith(f"kept {path}: ")
    assert ", regressed" in out
    assert path.read_bytes() == replaced


def _check(verdict: str | None, *, failed: bool = False, delta: float = 0.05) -> Comparison:
    return comparison(
        slice=f"intent={verdict}", current_mean=0.5 + delta, delta=delta, ci_low=delta - 0.02,
        ci_high=delta + 0.02, wins=20, ties=10, level=0.01, verdict=verdict, failed=failed,
    )  # fmt: skip


def test_an_inconclusive_drop_keeps_the_baseline_even_when_the_gate_passes_it() -> None:
    improved = _check("improved")
    doubtful = dataclasses.replace(_check("inconclusive", delta=-0.04), slice="intent=b")
    improved_list, reason = ratchet(SimpleNamespace(comparisons=(improved, doubtful)))  # type: ignore[arg-type]
    assert improved_list == [improved]
    assert reason.startswith(
        "1 gated check dropped past the threshold without enough evidence (inconclusive): "
        "ndcg@10 on intent=b -4.0 pt [-6.0, -2.0], inconclusive; improved: "
    )
    assert ratchet(SimpleNamespace(comparisons=(improved,))) == ([improved], "")  # type: ignore[arg-type]
    # Not gated (a small slice) or report only: neither counts either way.
    ungated = dataclasses.replace(doubtful, gated=False)
    assert ratchet(SimpleNamespace(comparisons=(improved, ungated)))[1] == ""  # type: ignore[arg-type]
