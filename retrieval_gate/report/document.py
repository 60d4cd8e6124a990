"""The JSON result as a validated model: reports render only what passed validation.

Comparisons, query changes, unjudged counts and label-hole bounds validate into the gate's own
dataclasses; fields they do not declare are ignored. A result written before the decision rule
became one-sided (comparisons with `mde` and the `noise` verdict, without `p_bound`, `level`,
`detectable_drop`) is refused: its numbers mean something else, so it is not rendered as if
they did."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    PrivateAttr,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from retrieval_gate.config.schema import Labels
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import first_non_finite, parsed_json
from retrieval_gate.core.redaction import scrubbed
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.document import range_problem
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.gate.explain.diagnostics import QueryChange, Unjudged
from retrieval_gate.gate.explain.label_holes import LabelHole
from retrieval_gate.gate.explain.stage_losses import QueryLoss, StageLoss
from retrieval_gate.gate.modes.label_free import LabelFreeRun
from retrieval_gate.gate.result import Status
from retrieval_gate.stats.calibration import GradeBias, SystemAgreement
from retrieval_gate.stats.detectability import OPERATING


class _Model(BaseModel):
    # Results written by newer versions may carry more fields; rendering needs only these.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ConfigRecord(_Model):
    """The config the result was decided under."""

    file: str
    sha256: str
    k: int
    gate: dict[str, Any]


def _checked_range(
    scores: dict[str, list[float | None]], ids: list[str]
) -> dict[str, list[float | None]]:
    """Refuse a per-query value its metric cannot take, naming the query when `ids` do."""
    for metric, values in scores.items():
        found = range_problem(metric, values)
        if found is not None:
            at, what = found
            query = f" (query {ids[at]!r})" if at < len(ids) else ""
            raise ValueError(f"{metric}[{at}]{query}: {what}")
    return scores


class BaselineRecord(_Model):
    """The baseline's provenance and its per-query scores aligned with the current ids."""

    created_at: str
    git_commit: str | None
    git_dirty: bool | None
    tool_version: str
    fingerprints: dict[str, Any]
    scores: dict[str, list[float | None]] = Field(default_factory=dict)
    """null: the metric is undefined for that query (a one-class query's auc)."""
    source: str = ""
    """Where the reference came from: "baseline PATH" or "a run at REF (...)"."""

    @field_validator("scores")
    @classmethod
    def _in_range(cls, scores: dict[str, list[float | None]]) -> dict[str, list[float | None]]:
        return _checked_range(scores, [])


class CurrentRecord(_Model):
    """The current run's record (baseline form)."""

    git_commit: str | None
    git_dirty: bool | None
    fingerprints: dict[str, Any]
    query_ids: list[str]
    scores: dict[str, list[float | None]]

    @field_validator("scores")
    @classmethod
    def _in_range(
        cls, scores: dict[str, list[float | None]], info: ValidationInfo
    ) -> dict[str, list[float | None]]:
        return _checked_range(scores, info.data.get("query_ids", []))


class SequentialRecord(_Model):
    """gate.sequential: the queries spent, and the line the reports show."""

    stopped: bool
    queries_run: NonNegativeInt
    queries_total: NonNegativeInt
    looks: NonNegativeInt
    note: str


class ProbeRecord(_Model):
    """What the noise probe found (`repeats.Probe`): queries re-run, those whose top k
    changed, and the runs a side the check then made."""

    queries: NonNegativeInt
    changed: list[str]
    runs: PositiveInt


class NoiseRecord(_Model):
    """The repeats of both sides (`repeats.Noise`) and each gated metric's run-to-run sd;
    the noise probe's finding, or why it did not run (absent in results without it)."""

    reference_runs: NonNegativeInt
    current_runs: NonNegativeInt
    queries: NonNegativeInt
    varying: list[str]
    spread: dict[str, float] = Field(default_factory=dict)
    probe: ProbeRecord | None = None
    unprobed: str = ""


class TrendPointRecord(_Model):
    """One result of the main branch in a trend: its commit, the pull request that merged it
    (None when not known), its time (ISO 8601) and the metric's mean (None when missing)."""

    commit: str
    pr: StrictInt | None = None
    time: str = ""
    value: float | None = None
    """Not a finite number (NaN from a hand-written file, too) is shown as missing."""


class TrendSeriesRecord(_Model):
    """One metric's values on the main branch, oldest first."""

    metric: str
    points: list[TrendPointRecord] = Field(default_factory=list)


class TrendRecord(_Model):
    """The main branch's recent results (`report.trend.with_trend` adds them); absent in
    results without a history, which then show no trend."""

    branch: str = "main"
    series: list[TrendSeriesRecord] = Field(default_factory=list)


class AnsweredRecord(_Model):
    """A model that answered under the configured judge (null: not recorded), its
    fingerprint and settings, and how many of the pairs the checks scored it graded."""

    model: str | None = None
    system_fingerprint: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    logprobs: bool | None = None
    pairs: NonNegativeInt = 0


class JudgeRecord(_Model):
    """Which judge's labels: its model and prompt's sha256, the models that answered (absent
    in results of older versions), and whether they were several (`mixed`: the assisted
    checks are then inconclusive)."""

    model: str
    prompt_sha256: str
    answered_by: list[AnsweredRecord] = Field(default_factory=list)
    mixed: bool = False


class UnitRecord(_Model):
    """One check's judge against people in the metric's units (`stats.judge_units`)."""

    metric: str
    slice: str
    queries: NonNegativeInt
    bias: float
    low: float
    high: float
    decisive: NonNegativeInt
    agree: NonNegativeInt
    effective: NonNegativeFloat | None = None


class CalibrationRecord(_Model):
    """The judge against people on the pairs both graded (`stats.calibration`), and in the
    gate's units on the human-judged queries of each check."""

    pairs: NonNegativeInt
    kappa_quadratic: float | None
    alpha_ordinal: float | None
    confusion: list[list[int]]
    bias: list[GradeBias]
    systems: SystemAgreement | None = None
    units: list[UnitRecord] = Field(default_factory=list)
    same_family: list[str] = Field(default_factory=list)


_COUNTS = ("n", "wins", "ties", "losses", "excluded", "queries_needed")
_PROBABILITIES = ("p_value", "p_adjusted", "level", "p_excess", "p_within", "p_within_adjusted")


def _checked_comparisons(checks: list[Comparison]) -> list[Comparison]:
    """Refuse a check whose counts of queries are negative, whose p-values or level are not
    probabilities, or whose operating characteristic is not one probability per multiple of
    OPERATING: the reports print each as what it is."""
    for i, check in enumerate(checks):
        where = f"check {i} ({check.metric} on {check.slice})"
        for name in _COUNTS:
            count = getattr(check, name)
            if count is not None and count < 0:
                raise ValueError(f"{where}: {name} counts queries, so is 0 or more, not {count}")
        for name in _PROBABILITIES:
            p = getattr(check, name)
            if p is not None and not 0.0 <= p <= 1.0:
                raise ValueError(f"{where}: {name} is a probability within [0, 1], not {p!r}")
        chances = check.fail_chances
        if chances is None:
            continue
        if len(chances) != len(OPERATING) or not all(0.0 <= p <= 1.0 for p in chances):
            raise ValueError(
                f"{where}: fail_chances must be {len(OPERATING)} probabilities within [0, 1], "
                f"one per multiple of max_drop {list(OPERATING)}"
            )
    return checks


class JudgingRecord(_Model):
    """What `check` graded before deciding: the pool pairs new to the layer, the calls and
    their cost, and why any were left."""

    needed: NonNegativeInt
    graded: NonNegativeInt
    calls: NonNegativeInt
    cached: NonNegativeInt
    prompt_tokens: NonNegativeInt
    completion_tokens: NonNegativeInt
    cost: NonNegativeFloat
    skipped: str = ""


class LabelsRecord(_Model):
    """gate.labels human+llm: which labels decided, the calibration, both views' checks."""

    decided_by: Labels
    provisional_reason: str
    judge: JudgeRecord
    calibration: CalibrationRecord
    queries: NonNegativeInt
    human_queries: NonNegativeInt
    human_query_ids: list[str] = Field(default_factory=list)
    uncovered: list[str] = Field(default_factory=list)
    judging: JudgingRecord | None = None
    assisted: list[Comparison] = Field(default_factory=list)
    human_judged: list[int] = Field(default_factory=list)
    judge_weights: list[float | None] = Field(default_factory=list)
    human: list[Comparison] = Field(default_factory=list)

    @field_validator("assisted", "human")
    @classmethod
    def _in_range(cls, checks: list[Comparison]) -> list[Comparison]:
        return _checked_comparisons(checks)


class NotComparableRecord(_Model):
    """A query left out of every check, and which judged documents changed under it."""

    query_id: str
    reasons: list[str]


class CorpusRecord(_Model):
    """The corpus check: not done and why, or the queries it left out (absent: checked, no
    change)."""

    checked: bool
    reason: str = ""
    not_comparable: list[NotComparableRecord] = Field(default_factory=list)


class StageLossesRecord(_Model):
    """A two-stage retriever's lost relevant documents, by stage (`gate.stage_losses`)."""

    checks: list[StageLoss] = Field(default_factory=list)
    queries: list[QueryLoss] = Field(default_factory=list)
    query_count: NonNegativeInt = 0


class OtherLevelRecord(_Model):
    """A chunked corpus's checks at the level dataset.level does not name, and their bounds."""

    level: Literal["chunk", "document"]
    gating_level: Literal["chunk", "document"]
    gated: bool
    comparisons: list[Comparison] = Field(default_factory=list)
    label_holes: list[LabelHole] = Field(default_factory=list)

    @field_validator("comparisons")
    @classmethod
    def _in_range(cls, checks: list[Comparison]) -> list[Comparison]:
        return _checked_comparisons(checks)

    @model_validator(mode="after")
    def _two_levels(self) -> OtherLevelRecord:
        # The reports name each check's level from these: they must agree.
        if self.gating_level == self.level:
            raise ValueError(f"gating_level and level are both {self.level!r}: two levels differ")
        wrong = [c.view for c in self.comparisons if c.view != self.level]
        if wrong:
            raise ValueError(f"a check of level {self.level!r} has view {wrong[0]!r}")
        return self


class ResultRecord(_Model):
    """A whole result: a decided gate, or `status: error` with the reason it could not run."""

    schema_version: Literal[2]
    tool_version: str
    name: str
    status: Status
    error: str | None = None
    failures: list[Comparison] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    other_level: OtherLevelRecord | None = None
    """Present for a chunked corpus unless dataset.other_level is off."""
    query_changes: list[QueryChange] = Field(default_factory=list)
    hits_lost: list[str] = Field(default_factory=list)
    hits_gained: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    unjudged: Unjudged | None = None
    label_holes: list[LabelHole] = Field(default_factory=list)
    """Absent from results written before the bounds (their `labelling_gaps` are ignored)."""
    noise: NoiseRecord | None = None
    config: ConfigRecord | None = None
    baseline: BaselineRecord | None = None
    current: CurrentRecord | None = None
    trend: TrendRecord | None = None
    labels: LabelsRecord | None = None
    """Present when LLM labels took part (gate.labels: human+llm)."""
    sequential: SequentialRecord | None = None
    """Present when the check ran sequentially (gate.sequential)."""
    corpus: CorpusRecord | None = None
    """Present when the corpus was not checked, or its changes left queries out."""
    stage_losses: StageLossesRecord | None = None
    """Present when the current retriever gave first-stage candidates."""
    label_free: LabelFreeRun | None = None
    """Present when the config has label-free checks (`unlabelled:`)."""

    _document: Mapping[str, Any] = PrivateAttr(default_factory=dict)
    _context: dict[str, Any] | None = PrivateAttr(default=None)

    @field_validator("failures", "comparisons")
    @classmethod
    def _in_range(cls, checks: list[Comparison]) -> list[Comparison]:
        return _checked_comparisons(checks)

    @model_validator(mode="after")
    def _views(self) -> ResultRecord:
        # A check of the other level is marked with it; without one, no check is.
        other = self.other_level.level if self.other_level is not None else None
        if any(c.view for c in self.comparisons):
            raise ValueError("comparisons: the gating level's checks have no view")
        if any(c.view and c.view != other for c in self.failures):
            raise ValueError("failures: a check's view names no other_level of this result")
        return self

    """What the templates show (`report.context.report_context`), built on first use: every
    format of one record shares it."""

    @property
    def document(self) -> Mapping[str, Any]:
        """The JSON document this record was validated from, every field kept."""
        return self._document


def validate_result(document: Mapping[str, Any], source: str = "result") -> ResultRecord:
    """`document` checked field by field; an InputError names the first bad fields."""
    document = scrubbed(document)  # a result written before a secret was known to us, too
    try:
        record = ResultRecord.model_validate(document)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or '(top level)'}: {item['msg']}"
            for item in error.errors()[:5]
        ]
        what, fix = (
            "not a retrieval-gate result",
            "write one with `retrieval-gate check --json FILE`",
        )
        older = _older_shape(document)
        if older:
            what = f"a result of an older retrieval-gate ({older})"
            fix = "run `retrieval-gate check --json FILE` again with this version"
        raise InputError(
            what + ":\n  - " + "\n  - ".join(problems) + "\n" + fix, source=source
        ) from None
    # The gate writes no NaN or infinity; a trend's point may be one (shown as missing).
    broken = first_non_finite({key: value for key, value in document.items() if key != "trend"})
    if broken is not None:
        raise InputError(
            f"not a retrieval-gate result: {broken} is not a finite number (the gate writes "
            "none); write one with `retrieval-gate check --json FILE`",
            source=source,
        )
    record._document = document
    return record


def _older_shape(document: Mapping[str, Any]) -> str:
    """Why `document` looks written by a version before the one-sided rule, or ""."""
    if document.get("schema_version") == 1:
        return "schema_version 1, from before the one-sided decision rule"
    rows = [
        row
        for key in ("comparisons", "failures")
        if isinstance(document.get(key), list)
        for row in document[key]
        if isinstance(row, dict)
    ]
    if any("mde" in row for row in rows):
        return "its comparisons have `mde`, which became `detectable_drop`"
    if any(row.get("verdict") == "noise" for row in rows):
        return "its comparisons have the `noise` verdict, which became `inconclusive`"
    return ""


def read_result(path: Path) -> ResultRecord:
    """The result JSON at `path`, validated."""
    try:
        data = parsed_json(regular_file(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            "no such result file; `retrieval-gate check --json FILE` writes it", source=str(path)
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read it: {error}", source=str(path)) from None
    except RecursionError:
        raise InputError(
            "nested too deeply to be a retrieval-gate result; write one with "
            "`retrieval-gate check --json FILE`",
            source=str(path),
        ) from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"not JSON ({error.msg} at column {error.colno})", source=str(path), line=error.lineno
        ) from None
    if not isinstance(data, dict):
        raise InputError("not a retrieval-gate result: expected a JSON object", source=str(path))
    return validate_result(data, str(path))
