"""The pytest plugin: one test item per gated check, collection errors, the fixture."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml

from retrieval_gate.gate.result import GateResult
from retrieval_gate.pipeline.check import check
from retrieval_gate.report import summary_of, validate_result
from tests.helpers.paths import CONFIGS

pytest_plugins = ["pytester"]

PLUGIN = "retrieval_gate.integrations.pytest_plugin"
# Once the pytest11 entry point is installed pytest loads the plugin itself, and loading the
# module again under its module name with -p would register it twice.
LOAD = () if any(ep.value == PLUGIN for ep in entry_points(group="pytest11")) else ("-p", PLUGIN)


def _copy_config(name: str, target: Path) -> Path:
    """configs/NAME.yaml without its report: block (nothing written beside the tests)."""
    document = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))
    document.pop("report", None)
    path = target / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def workspace(pytester: pytest.Pytester) -> Path:
    """The example gate's configs, labelled set and committed baseline in pytester's folder."""
    root = pytester.path
    shutil.copytree(CONFIGS / "example", root / "example")
    baseline = CONFIGS / ".retrieval-gate" / "example" / "baseline.json"
    (root / ".retrieval-gate" / "example").mkdir(parents=True)
    shutil.copy(baseline, root / ".retrieval-gate" / "example" / "baseline.json")
    _copy_config("example", root)
    _copy_config("example-regressed", root)
    return root


@pytest.fixture(scope="module")
def results() -> dict[str, GateResult]:
    """The example gates' results, computed without the plugin (with no cache, nothing is
    written beside the configs)."""
    return {
        name: check(CONFIGS / f"{name}.yaml", cache=False)
        for name in ("example", "example-regressed")
    }


def _gated(result: GateResult) -> list[str]:
    """The item names the plugin should collect: one per gated check with a verdict."""
    return [
        f"{c.metric}[{c.slice}]" for c in result.comparisons if c.gated and c.verdict is not None
    ]


def _testcases(path: Path) -> dict[tuple[str, str], ET.Element]:
    cases = ET.parse(path).getroot().iter("testcase")
    return {(case.attrib["classname"], case.attrib["name"]): case for case in cases}


def test_passing_config_collects_one_passing_item_per_gated_check(
    pytester: pytest.Pytester, workspace: Path, results: dict[str, GateResult]
) -> None:
    config = workspace / "example.yaml"
    expected = _gated(results["example"])
    assert expected  # the example gates every metric with a threshold on 12 slices
    junit = workspace / "junit.xml"

    outcome = pytester.runpytest(*LOAD, "--retrieval-gate", str(config), f"--junitxml={junit}")

    outcome.assert_outcomes(passed=len(expected))
    assert outcome.ret == pytest.ExitCode.OK
    cases = _testcases(junit)
    assert sorted(cases) == sorted(("retrieval-gate[example]", name) for name in expected)
    assert not any(case.find("failure") is not None for case in cases.values())
    outcome.stdout.fnmatch_lines(["*- retrieval-gate -*", "retrieval-gate example: PASS; *"])


def test_failing_checks_fail_with_the_console_summary_line(
    pytester: pytest.Pytester, workspace: Path, results: dict[str, GateResult]
) -> None:
    config = workspace / "example-regressed.yaml"
    result = results["example-regressed"]
    assert result.failures
    lines = summary_of(validate_result(result.document())).splitlines()
    line = next(
        text.removeprefix("  x ")
        for text in lines
        if text.startswith("  x ") and "recall@10" in text and "segment=enterprise" in text
    )
    assert line.startswith("recall@10 fell ")
    junit = workspace / "junit.xml"

    outcome = pytester.runpytest(*LOAD, "--retrieval-gate", str(config), f"--junitxml={junit}")

    outcome.assert_outcomes(
        failed=len(result.failures), passed=len(_gated(result)) - len(result.failures)
    )
    assert outcome.ret == pytest.ExitCode.TESTS_FAILED
    outcome.stdout.fnmatch_lines(
        ["*_ retrieval-gate[[]example-regressed[]]::recall@10[[]segment=enterprise[]] _*", line]
    )
    outcome.stdout.no_fnmatch_line("*Traceback*")
    outcome.stdout.no_fnmatch_line("*FailedCheckError*")
    cases = _testcases(junit)
    failure = cases[("retrieval-gate[example-regressed]", "recall@10[segment=enterprise]")]
    element = failure.find("failure")
    assert element is not None
    # The console's note under the line (the check's label-hole bounds) comes with it.
    note = lines[lines.index(f"  x {line}") + 1]
    assert note.startswith("    depends on ")
    assert element.attrib["message"] == f"{line}\n{note.strip()}"
    failing = {name for (_, name), case in cases.items() if case.find("failure") is not None}
    assert failing == {f"{c.metric}[{c.slice}]" for c in result.failures}


def test_inconclusive_checks_pass_and_say_so(
    pytester: pytest.Pytester, workspace: Path, results: dict[str, GateResult]
) -> None:
    config = workspace / "example-regressed.yaml"
    result = results["example-regressed"]
    passing = [c for c in result.comparisons if c.gated and c.verdict == "inconclusive"]
    assert passing
    assert not any(c.failed for c in passing)  # on_inconclusive: pass, the default
    c = passing[0]

    outcome = pytester.runpytest(*LOAD, "--retrieval-gate", str(config), "-rP")

    outcome.assert_outcomes(
        failed=len(result.failures), passed=len(_gated(result)) - len(result.failures)
    )
    outcome.stdout.fnmatch_lines([f"{c.metric} * {c.slice} *: inconclusive, past the threshold*"])


def test_bad_config_is_a_collection_error(pytester: pytest.Pytester, workspace: Path) -> None:
    good = workspace / "example.yaml"
    broken = workspace / "broken.yaml"
    broken.write_text(good.read_text(encoding="utf-8") + "bogus: 1\n", encoding="utf-8")
    junit = workspace / "junit.xml"

    outcome = pytester.runpytest(*LOAD, "--retrieval-gate", "broken.yaml", f"--junitxml={junit}")

    assert outcome.ret == pytest.ExitCode.INTERRUPTED
    outcome.assert_outcomes(errors=1)
    outcome.stdout.fnmatch_lines(
        [
            "*ERROR collecting retrieval-gate[[]broken.yaml[]]*",
            "broken.yaml: invalid config:",
            "*bogus: unknown key*",
            "*Interrupted: 1 error during collection*",
        ]
    )
    errors = [case.find("error") for case in _testcases(junit).values()]
    assert len(errors) == 1
    assert errors[0] is not None
    assert "bogus: unknown key" in (errors[0].text or "")


def test_missing_baseline_is_a_collection_error(pytester: pytest.Pytester, workspace: Path) -> None:
    (workspace / ".retrieval-gate" / "example" / "baseline.json").unlink()

    outcome = pytester.runpytest(*LOAD, "--retrieval-gate", "example.yaml")

    assert outcome.ret == pytest.ExitCode.INTERRUPTED
    outcome.stdout.fnmatch_lines(
        ["*ERROR collecting retrieval-gate[[]example[]]*", "example.yaml: *baseline*"]
    )


def test_two_configs_at_once(
    pytester: pytest.Pytester, workspace: Path, results: dict[str, GateResult]
) -> None:
    configs = [workspace / "example.yaml", workspace / "example-regressed.yaml"]
    junit = workspace / "junit.xml"

    outcome = pytester.runpytest(
        *LOAD,
        "--retrieval-gate",
        str(configs[0]),
        "--retrieval-gate",
        "example-regressed.yaml",
        "--retrieval-gate",
        "example.yaml",  # the same config again: gated once
        f"--junitxml={junit}",
    )

    failed = sum(len(result.failures) for result in results.values())
    total = sum(len(_gated(result)) for result in results.values())
    outcome.assert_outcomes(failed=failed, passed=total - failed)
    assert {classname for classname, _ in _testcases(junit)} == {
        "retrieval-gate[example]",
        "retrieval-gate[example-regressed]",
    }
    outcome.stdout.fnmatch_lines(
        [
            "*- retrieval-gate -*",
            "retrieval-gate example: PASS; *",
            "retrieval-gate example-regressed: FAIL; *",
        ]
    )


def test_ini_option_names_the_configs(
    pytester: pytest.Pytester, workspace: Path, results: dict[str, GateResult]
) -> None:
    expected = _gated(results["example"])
    pytester.makeini("[pytest]\nretrieval_gate_configs = example.yaml\n")
    (workspace / "sub").mkdir()

    outcome = pytester.runpytest(*LOAD, "sub", "--collect-only", "-q")

    assert outcome.ret == pytest.ExitCode.OK
    outcome.stdout.fnmatch_lines([f"*{len(expected)} tests collected*"])


def test_same_gate_name_twice_is_a_collection_error(
    pytester: pytest.Pytester, workspace: Path
) -> None:
    (workspace / "copy").mkdir()
    shutil.copy(workspace / "example.yaml", workspace / "copy" / "example.yaml")

    outcome = pytester.runpytest(
        *LOAD, "--retrieval-gate", "example.yaml", "--retrieval-gate", "copy/example.yaml"
    )

    assert outcome.ret == pytest.ExitCode.INTERRUPTED
    outcome.stdout.fnmatch_lines(["copy/example.yaml: its gate name 'example' is also *"])


def test_fixture_returns_the_gate_result_once_per_session(
    pytester: pytest.Pytester, workspace: Path
) -> None:
    pytester.makepyfile(
        """
        from retrieval_gate.gate.result import GateResult


        def test_result(retrieval_gate_check):
            result = retrieval_gate_check("example.yaml")
            assert isinstance(result, GateResult)
            assert result.name == "example"
            assert result.status == "pass"
            assert result.exit_code == 0
            assert retrieval_gate_check("example.yaml") is result
            assert retrieval_gate_check("example.yaml", cache=False) is not result


        def test_regressed(retrieval_gate_check):
            result = retrieval_gate_check("example-regressed.yaml")
            assert result.status == "fail"
            assert result.failures
        """
    )

    outcome = pytester.runpytest(*LOAD)

    outcome.assert_outcomes(passed=2)


def test_plugin_module_imports_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, retrieval_gate.integrations.pytest_plugin; "
        "heavy = {'numpy', 'scipy', 'pydantic', 'jinja2', 'yaml', 'retrieval_gate.gate'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"


def test_the_option_alone_collects_only_the_gate_checks(
    pytester: pytest.Pytester, workspace: Path, results: dict[str, GateResult]
) -> None:
    # From a project's root, `pytest --retrieval-gate CONFIG` gated and also collected (and
    # imported) every test of the project; its own tests run only when paths are given too.
    pytester.makepyfile(test_project="def test_project():\n    assert True\n")
    pytester.makepyfile(test_broken="raise ImportError('never imported')\n")
    alone = pytester.runpytest(*LOAD, "--retrieval-gate", "example.yaml")
    alone.assert_outcomes(passed=len(_gated(results["example"])))
    assert "test_project" not in alone.stdout.str()
    both = pytester.runpytest(*LOAD, "test_project.py", "--retrieval-gate", "example.yaml")
    both.assert_outcomes(passed=len(_gated(results["example"])) + 1)
