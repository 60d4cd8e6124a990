"""An integer literal past Python's 4,300 digits, in any JSON or YAML the gate reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.core.json_parse import parsed_json
from tests.helpers.builders import checked_tiny
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

HUGE = "9" * 5000


def test_ordinary_json_parses_as_json_does() -> None:
    text = '{"a": [1, -2, 3.5e2, null, "x"], "b": {"c": true}}'
    assert parsed_json(text) == json.loads(text)
    assert parsed_json(text.encode()) == json.loads(text)


@pytest.mark.parametrize("sign", ["", "-"])
def test_a_huge_integer_is_invalid_json_at_its_line_and_column(sign: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        parsed_json(f'{{"a": 1,\n  "n": {sign}{HUGE}}}'.encode())
    assert (caught.value.lineno, caught.value.colno) == (2, 8)
    assert "an integer of 5000 digits (at most 4300 are read)" in caught.value.msg


def test_a_long_float_is_not_refused() -> None:
    assert parsed_json(f"[{HUGE}.5]") == [float(f"{HUGE}.5")]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """configs/tiny copied, with its baseline and a result written by a real check."""
    return checked_tiny(tmp_path / "tiny")


def _spoil_first_line(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0][:-1] + f', "n": {HUGE}}}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _spoil(path: Path, old: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, old.split(":")[0] + f": {HUGE}", 1), encoding="utf-8")


@pytest.mark.parametrize(
    ("surface", "file", "line"),
    [
        ("config", "retrieval-gate.yaml", 10),
        ("queries", "queries.jsonl", 1),
        ("corpus", "corpus.jsonl", 1),
        ("baseline", ".retrieval-gate/baseline.json", None),
    ],
)
def test_check_names_the_file_and_line_and_exits_2(
    tiny: Path, surface: str, file: str, line: int | None
) -> None:
    path = tiny / file
    if surface == "config":
        _spoil(path, "k: 10")
    elif surface == "baseline":
        _spoil(path, '"k": 10')
    else:
        _spoil_first_line(path)
    code, _, err = run_cli("check", "-c", tiny / "retrieval-gate.yaml")
    assert code == 2, err
    assert "internal error" not in err
    assert file.rsplit("/", 1)[-1] in err
    assert "5000 digits" in err
    if line is not None:
        assert f":{line}:" in err


@pytest.mark.parametrize("command", ["compare", "comment"])
def test_a_result_with_a_huge_integer_is_exit_2(tiny: Path, command: str) -> None:
    result = tiny / ".retrieval-gate" / "tiny" / "result.json"
    _spoil(result, '"n": 5')
    baseline, config = tiny / ".retrieval-gate" / "baseline.json", tiny / "retrieval-gate.yaml"
    if command == "compare":
        code, _, err = run_cli("compare", baseline, result, "-c", config, "--no-reports")
    else:
        code, _, err = run_cli("comment", "--no-pr-comment", result)
    assert code == 2, err
    assert "result.json" in err
    assert "5000 digits" in err


def test_a_json_run_file_with_a_huge_score_is_exit_2(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(f'{{"reset-password": {{"kb-101": {HUGE}}}}}', encoding="utf-8")
    code, _, err = run_cli("evaluate", CONFIGS / "tiny" / "qrels.txt", run)
    assert code == 2, err
    assert "run.json:1:" in err
    assert "5000 digits" in err
