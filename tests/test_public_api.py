"""The names `retrieval_gate` promises a Python user, and what importing it costs."""

from __future__ import annotations

import subprocess
import sys

import pytest

import retrieval_gate
from tests.helpers.paths import REPO


@pytest.mark.parametrize("name", retrieval_gate.__all__)
def test_every_promised_name_resolves(name: str) -> None:
    assert getattr(retrieval_gate, name) is not None


def test_the_promised_names_are_the_modules_own() -> None:
    from retrieval_gate.config.loader import load
    from retrieval_gate.gate.result import GateResult
    from retrieval_gate.pipeline.check import check

    assert retrieval_gate.check is check
    assert retrieval_gate.load_config is load
    assert retrieval_gate.GateResult is GateResult
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = retrieval_gate.nothing  # type: ignore[attr-defined]


def test_a_python_user_checks_the_example_with_the_public_names() -> None:
    config = retrieval_gate.load_config(REPO / "configs" / "example.yaml")
    assert isinstance(config, retrieval_gate.GateConfig)
    result = retrieval_gate.check(config, cache=False)
    assert isinstance(result, retrieval_gate.GateResult)
    assert result.status == "pass"
    assert all(isinstance(c, retrieval_gate.Comparison) for c in result.comparisons)


def test_importing_the_package_loads_nothing_heavy() -> None:
    code = (
        "import sys, retrieval_gate; "
        "print(sorted(m for m in ('numpy', 'pydantic', 'jinja2', 'yaml') if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert shown.stdout.strip() == "[]"
