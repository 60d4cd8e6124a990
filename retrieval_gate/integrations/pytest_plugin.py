"""A pytest plugin: the gate's checks as pytest test items, and a fixture for Python tests.

    pytest --retrieval-gate retrieval-gate.yaml [--retrieval-gate other.yaml ...]

runs the gate (`retrieval_gate.gate.check`, as `retrieval-gate check` does, reports aside)
once per config and collects one test item per gated (metric, slice) check, so pytest's
output and its JUnit XML (`--junitxml`) show each check:

- Item ids are ``retrieval-gate[NAME]::METRIC[SLICE]``, NAME being the config's gate name:
  ``retrieval-gate[example]::ndcg@10[all]``, ``retrieval-gate[example]::recall@10[segment=
  enterprise]``. In JUnit XML the classname is ``retrieval-gate[NAME]`` and the name
  ``METRIC[SLICE]``. ``-k enterprise`` and ``--deselect`` select among them as usual.
- A failing check fails; its failure message is its line of the console summary (the
  ``x ...`` line of `retrieval-gate check`), plus the label-hole note the summary gives
  under it, and no traceback.
- A check that passes, improved, or is inconclusive without failing the gate (the default
  ``on_inconclusive: pass``) passes: the gate passed it. An inconclusive one carries its
  warning line as a report section (shown by ``-rP`` / ``-rA``). Every item records its
  verdict as a JUnit property.
- Checks the gate does not judge -- report-only metrics and slices too small to gate -- are
  not items: nothing is decided there, and a skipped item would read as "not run".
- The gate runs during collection, so bad input (a `GateError`, exit 2 in the CLI: an
  invalid config, a missing or incomparable baseline, a failing retriever) is a collection
  error naming the config and the message, and pytest stops with exit code 2 (interrupted).
- After the run a ``retrieval-gate`` section of the terminal summary gives each config's
  headline and the gate's warnings; with ``-v``, the whole console summary.

Configs come from ``--retrieval-gate`` (relative to the directory pytest was invoked from,
as command-line paths are) or, when that option is not given, from the ini option
``retrieval_gate_configs`` (relative to the ini file's directory, as pytest's ``paths`` ini
options are), e.g. in pyproject.toml::

    [tool.pytest.ini_options]
    retrieval_gate_configs = ["retrieval-gate.yaml"]

``pytest --retrieval-gate CONFIG`` alone collects the gate's checks alone: the project's
own tests are not collected (nor imported) unless paths are given too, as in ``pytest tests
--retrieval-gate CONFIG``. Configs named by the ini option are gated beside the usual tests;
``-k retrieval-gate`` runs the gate's alone. The same config given twice is gated once;
two configs with the same gate name are a collection error (the name is the item id, as it
names the reports). The plugin writes no reports (the ``report:`` block is the CLI's);
``--junitxml`` is pytest's.
Answers are cached as by ``retrieval-gate check`` (the config's ``cache:``). Under
pytest-xdist every worker collects, so every worker runs the gate.

For Python tests, the session fixture ``retrieval_gate_check(config_path, **options)`` runs
`retrieval_gate.gate.check(config_path, **options)` and returns the `GateResult`, once per
session per (config, options); a relative path is relative to pytest's rootdir. The
collection shares that cache, so a config given to ``--retrieval-gate`` is not run again by
the fixture without options.

Registered through the ``pytest11`` entry point ``retrieval_gate``, so this module is
imported by every pytest run where retrieval-gate is installed: it imports nothing heavy
until a config is gated
(`python -X importtime -c "import retrieval_gate.integrations.pytest_plugin"`).
``-p no:retrieval_gate`` turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.gate.checks.compare import Comparison
    from retrieval_gate.gate.result import GateResult

OPTION = "--retrieval-gate"
INI = "retrieval_gate_configs"

_CacheKey = tuple[Path, tuple[tuple[str, Any], ...]]
_RESULTS = pytest.StashKey["dict[_CacheKey, GateResult]"]()
"""Per session: (resolved config path, sorted check options) -> result."""
_GATED = pytest.StashKey["list[GateResult]"]()
"""The results the collection gated, in order, for the terminal summary."""


class GateCheck(Protocol):
    """The `retrieval_gate_check` fixture: `gate.check` once per session per config."""

    def __call__(self, config_path: str | os.PathLike[str], **options: Any) -> GateResult: ...


class FailedCheckError(Exception):
    """A gated check that fails the gate; its message is the console summary's line."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("retrieval-gate", "retrieval-gate: gate retrieval quality")
    group.addoption(
        OPTION,
        action="append",
        dest="retrieval_gate",
        default=[],
        metavar="CONFIG",
        help="run the retrieval gate of CONFIG (a retrieval-gate.yaml; relative to the "
        "invocation directory) and collect one test per gated (metric, slice) check; "
        "may be given several times. Overrides the ini option " + INI,
    )
    parser.addini(
        INI,
        type="paths",
        default=[],
        help="retrieval-gate configs to gate when --retrieval-gate is not given (relative to "
        "the ini file's directory)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With --retrieval-gate and no paths, nothing but the gate's checks is collected."""
    given = config.getoption("retrieval_gate", None)
    if given and config.args_source != pytest.Config.ArgsSource.ARGS:
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before -k, -m, --deselect and --lf select among items
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    paths = _config_paths(config)
    if not paths:
        return
    gated = config.stash.setdefault(_GATED, [])
    names: dict[str, Path] = {}
    for path in paths:
        gate_config, error = _loaded(path)
        name = gate_config.name if gate_config is not None else path.name
        if gate_config is not None and name in names:
            error = (
                f"its gate name {name!r} is also the name of {names[name]}; give each gate "
                "a unique name"
            )
            name = path.name
        names.setdefault(name, path)
        collector = GateCollector.from_parent(
            session,
            name=f"retrieval-gate[{name}]",
            path=path,
            nodeid=f"retrieval-gate[{name}]",
            gate_config=gate_config,
            error=error,
            gated=gated,
        )
        # The standard collection protocol (collectstart, the collect report, itemcollected):
        # a failure is a collection error, counted like any other.
        items.extend(session.genitems(collector))


class GateCollector(pytest.Collector):
    """One config: runs the gate when collected, yields an item per gated check."""

    def __init__(
        self,
        *,
        gate_config: GateConfig | None,
        error: str | None,
        gated: list[GateResult],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.gate_config = gate_config
        self.error = error
        self.gated = gated

    def collect(self) -> Iterator[GateItem]:
        from retrieval_gate.errors import GateError

        if self.error is not None or self.gate_config is None:
            raise self.CollectError(f"{_shown(self.config, self.path)}: {self.error}")
        try:
            result = _checked(self.config, self.path, {}, self.gate_config)
        except GateError as error:
            raise self.CollectError(f"{_shown(self.config, self.path)}: {error}") from error
        self.gated.append(result)
        failure_lines, inconclusive_lines = _messages(result)
        for comparison in result.comparisons:
            if not comparison.gated or comparison.verdict is None:
                continue
            key = (comparison.metric, comparison.slice)
            name = f"{comparison.metric}[{comparison.slice}]"
            yield GateItem.from_parent(
                self,
                name=name,
                # Given as text, so pytest parses SLICE as the id's parameters, as it does
                # for a parametrized test's id (--lf and --deselect compare parsed ids).
                nodeid=f"{self.nodeid}::{name}",
                comparison=comparison,
                message=failure_lines.get(key) or inconclusive_lines.get(key),
            )


class GateItem(pytest.Item):
    """One gated (metric, slice) check: fails when it fails the gate."""

    def __init__(self, *, comparison: Comparison, message: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.comparison = comparison
        self.message = message or _composed(comparison)
        self.user_properties.append(("verdict", str(comparison.verdict)))

    def runtest(self) -> None:
        if self.comparison.failed:
            raise FailedCheckError(self.message)
        if self.comparison.verdict == "inconclusive":
            self.add_report_section("call", "retrieval-gate", self.message)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> Any:
        if isinstance(excinfo.value, FailedCheckError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid


@pytest.fixture(scope="session")
def retrieval_gate_check(pytestconfig: pytest.Config) -> GateCheck:
    """`retrieval_gate.gate.check(config_path, **options)`, once per session per (config,
    options); a relative `config_path` is relative to pytest's rootdir."""

    def check(config_path: str | os.PathLike[str], **options: Any) -> GateResult:
        return _checked(pytestconfig, pytestconfig.rootpath / config_path, options)

    return check


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    results = terminalreporter.config.stash.get(_GATED, [])
    if not results:
        return
    from retrieval_gate.report import summary_of, validate_result

    terminalreporter.write_sep("-", "retrieval-gate")
    verbose = terminalreporter.config.get_verbosity() > 0
    for result in results:
        summary = summary_of(validate_result(result.document()))
        shown = summary.rstrip("\n") if verbose else summary.splitlines()[0]
        terminalreporter.write_line(shown)
        for warning in result.warnings:
            terminalreporter.write_line(f"  warning: {warning}")


def _config_paths(config: pytest.Config) -> list[Path]:
    """The configs to gate, absolute and without repeats, in the order given."""
    given: list[str] = config.getoption("retrieval_gate") or []
    if given:
        base = config.invocation_params.dir
        paths = [base / path for path in given]
    else:
        paths = list(config.getini(INI))
    return list(dict.fromkeys(Path(os.path.abspath(path)) for path in paths))


def _loaded(path: Path) -> tuple[GateConfig | None, str | None]:
    """The validated config, or the GateError's message."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.errors import GateError

    try:
        return load(path), None
    except GateError as error:
        return None, str(error)


def _checked(
    config: pytest.Config,
    path: Path,
    options: Mapping[str, Any],
    gate_config: GateConfig | None = None,
) -> GateResult:
    """`gate.check` of the config at `path`, once per session per options."""
    from retrieval_gate.pipeline.check import check

    results = config.stash.setdefault(_RESULTS, {})
    key: _CacheKey = (Path(os.path.abspath(path)), tuple(sorted(options.items())))
    try:
        hash(key)
    except TypeError:  # an unhashable option value: run, do not cache
        return check(gate_config or path, **options)
    if key not in results:
        results[key] = check(gate_config or path, **options)
    return results[key]


def _messages(
    result: GateResult,
) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """(metric, slice) -> message: each failing check's line of the console summary (with the
    label-hole note under it, if any), and each passing inconclusive check's warning.

    Read off the project's own rendering, so the message is the line the CLI prints: the
    annotations (one error per failing check, in `result.failures` order, then one warning
    per passing inconclusive check) tie each line to its check whatever order or grouping
    the summary shows, and the summary's ``x`` line that matches it is taken. A failure
    without one gets its annotation; one without an annotation gets `_composed`.
    """
    from retrieval_gate.report import annotations_of, summary_of, validate_result

    record = validate_result(result.document())
    entries: dict[str, str] = {}
    current: list[str] | None = None
    for line in summary_of(record).splitlines():
        if line.startswith("  x "):
            current = [line.removeprefix("  x ")]
            entries[current[0]] = current[0]
        elif current is not None and line.startswith("    "):
            current.append(line.strip())
            entries[current[0]] = "\n".join(current)
        else:
            current = None
    notes = annotations_of(record)
    errors = [message for level, message in notes if level == "error"]
    failures: dict[tuple[str, str], str] = {}
    if len(errors) == len(result.failures):
        for c, message in zip(result.failures, errors, strict=True):
            # The annotation is the summary's line, but for an inconclusive check, followed
            # by ": VERDICT".
            verdict = str(c.verdict).replace("_", " ")
            line = message if c.verdict == "inconclusive" else message.removesuffix(f": {verdict}")
            failures[(c.metric, c.slice)] = entries.get(line, message)
    inconclusive = sorted(
        (c for c in result.comparisons if c.gated and c.verdict == "inconclusive" and not c.failed),
        key=lambda c: c.delta,
    )
    warnings = [message for level, message in notes if level == "warning"]
    tail = warnings[len(warnings) - len(inconclusive) :] if inconclusive else []
    passing = {
        (c.metric, c.slice): message
        for c, message in zip(inconclusive, tail, strict=False)
        if message.startswith(c.metric) and c.slice in message
    }
    return failures, passing


def _composed(c: Comparison) -> str:
    """A check's message from its fields, when the rendering did not give one."""
    where = f" on {c.slice}" if c.slice != "all" else ""
    moved = "fell" if c.delta < 0 else "rose"
    p = f", p = {c.p_value:.3g}" if c.p_value is not None else ""
    return f"{c.metric} {moved} {abs(c.delta) * 100:.1f} pt{where} ({c.verdict}{p})"


def _shown(config: pytest.Config, path: Path) -> str:
    """`path` relative to the invocation directory when inside it."""
    try:
        return path.relative_to(config.invocation_params.dir).as_posix()
    except ValueError:
        return str(path)
