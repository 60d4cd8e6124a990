"""`retrieval-gate.yaml`'s schema: pydantic models of every section, and its JSON Schema."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from retrieval_gate.adapters import AdapterConfig
from retrieval_gate.config import DEFAULT_CONFIG
from retrieval_gate.config.drops import Drop, DropSpec
from retrieval_gate.config.evaluators import EvaluatorConfig
from retrieval_gate.config.judge import JudgeConfig
from retrieval_gate.config.unlabelled import UnlabelledConfig
from retrieval_gate.core.names import NAME_PATTERN, NAME_RULE, valid_name
from retrieval_gate.core.strict import TAKES_BOOL, StrictModel

Labels = Literal["human", "human+llm"]
"""Whose relevance labels decide (gate.labels, and a result's labels.decided_by): people's
alone, or an LLM judge's rectified by people's."""


def includes_llm(labels: Labels) -> bool:
    """Whether `labels` take an LLM judge's labels in."""
    return labels == "human+llm"


class MetricGate(StrictModel):
    """Thresholds of one check: the largest tolerated change for the worse and an absolute
    bound (max_drop and min where higher is better; max_increase and max where lower is)."""

    max_drop: DropSpec | None = Field(
        None,
        description="largest tolerated drop: 2pt (points), 0.02 (fraction) or 3% (relative); "
        "in its own units for a score off the 0-1 scale (0.5 stars)",
    )
    min: float | None = Field(None, description="absolute floor of the mean, e.g. 0.6")
    max_increase: DropSpec | None = Field(
        None,
        description="for a check where lower is better (latency, cost): the largest tolerated "
        "increase, 20% (relative) or in its units (50ms)",
    )
    max: float | None = Field(
        None, description="for a check where lower is better: absolute ceiling, e.g. 800 (ms)"
    )

    @property
    def worse_by(self) -> Drop | None:
        """The tolerated change for the worse, whichever way is worse."""
        return self.max_drop if self.max_drop is not None else self.max_increase

    @property
    def bound(self) -> float | None:
        """The absolute floor (min), or ceiling (max) of a lower-is-better check."""
        return self.min if self.min is not None else self.max


class AnnotatorsConfig(StrictModel):
    """Judgments by several annotators: how their grades combine, and how well they must agree."""

    combine: Literal["median", "mean", "max", "min"] = Field(
        "median",
        description="one grade per (query, doc) from several annotators': median (the lower "
        "one, so a grade somebody gave), mean, max or min",
    )
    min_agreement: float = Field(
        0.6,
        ge=-1,
        le=1,
        description="agreement floor for Krippendorff's alpha and each pair's Cohen's kappa; "
        "lint warns below it",
    )
    enforce: bool = Field(
        False, description="true: check refuses to gate when alpha is below min_agreement"
    )


def _other_level(raw: Any) -> Any:
    """YAML reads an unquoted `off` as false: it means off."""
    return "off" if raw is False else raw


class DatasetConfig(StrictModel):
    """Where the labelled set lives."""

    path: str | None = Field(
        None, description="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)"
    )
    queries: str | None = Field(
        None, description="queries: BEIR/JSONL .jsonl, TREC topics, or qid<TAB>text .tsv"
    )
    qrels: str | None = Field(None, description="qrels: TREC, BEIR .tsv or JSONL (.gz too)")
    subtopics: str | None = Field(
        None,
        description="subtopic (intent) qrels, 'topic subtopic docno judgment' lines as the TREC "
        "Web track's diversity qrels (.gz too); needed by the diversity metrics (alpha_ndcg@k, "
        "err_ia@k, ...)",
    )
    corpus: str | None = Field(None, description="corpus.jsonl (needed by the bm25 retriever)")
    documents: str | None = Field(
        None,
        description="a chunked corpus's source documents (corpus.jsonl layout): each chunk "
        "(metadata.source names its document) is found in its source's text when its "
        "metadata gives no start",
    )
    level: Literal["chunk", "document"] = Field(
        "chunk",
        description="document: a chunked corpus's results and labels rolled up to their source "
        "documents (a document ranks where its first chunk does; its grade is its judged "
        "chunks' highest) before scoring. The level the gate decides at: with a chunked "
        "corpus the other one is reported beside it (dataset.other_level)",
    )
    other_level: Annotated[
        Literal["report", "gate", "off"], BeforeValidator(_other_level), TAKES_BOOL
    ] = Field(
        "report",
        description="a chunked corpus's other level (document when dataset.level is chunk, "
        "chunk when it is document): report (its checks shown after the gating level's, "
        "never failing), gate (both levels gate, each at half of gate.alpha) or off",
    )
    ir_datasets: str | None = Field(
        None, description="an ir_datasets id (cranfield, beir/scifact/test) instead of files"
    )
    impressions: str | None = Field(
        None,
        description="an impression log (JSON Lines of query or user, item, score or rank, "
        "clicked) as the labelled set: clicked = grade 1; read the same file as the run with "
        "retriever {type: run_file, format: impressions}",
    )
    split: str = Field("test", description="BEIR qrels split: qrels/<split>.tsv")
    format: Literal["auto", "beir", "trec", "jsonl", "impressions"] = Field(
        "auto", description="layout of the labelled set; auto detects it"
    )
    query_field: str = Field("title", description="TREC topics: the field used as query text")
    annotators: AnnotatorsConfig = Field(default_factory=lambda: AnnotatorsConfig())


class QueryLengthBins(StrictModel):
    """Query-length buckets in tokens: bins [1, 3, 6] make 1-2, 3-5 and 6+."""

    bins: list[int] = Field(
        default=[1, 3, 6],
        min_length=1,
        description="lower bounds of the buckets in tokens: [1, 3, 6] makes 1-2, 3-5 and 6+",
    )

    @field_validator("bins")
    @classmethod
    def _increasing(cls, bins: list[int]) -> list[int]:
        if bins[0] < 1 or any(b <= a for a, b in itertools.pairwise(bins)):
            raise ValueError("bins must be positive and strictly increasing, e.g. [1, 3, 6]")
        return bins


class SlicesConfig(StrictModel):
    """How queries are grouped for per-slice gating."""

    by: list[str] = Field(
        default_factory=list, description="metadata fields, or query_length, to slice by"
    )
    combine: list[list[str]] = Field(
        default_factory=list, description="field combinations, e.g. [[intent, segment]]"
    )
    query_length: QueryLengthBins = Field(default_factory=lambda: QueryLengthBins())
    min_size: int = Field(30, ge=1, description="smaller slices are reported, not gated")
    overrides: dict[str, dict[str, MetricGate]] = Field(
        default_factory=dict,
        description="per-slice thresholds: {'intent=billing': {'ndcg@10': {max_drop: 4pt}}}",
    )


class DriftConfig(StrictModel):
    """The drift budget: how far the main branch may fall below a reference over many merges,
    each of which passed its own gate (`retrieval-gate history drift`)."""

    reference: str | None = Field(
        None,
        description="what the newest result of the main branch is compared with: a tag or "
        "commit in the history, or baseline (the committed baseline's commit); unset: the "
        "first record of the history. An acceptance (history accept) moves it forward",
    )
    max_drop: DropSpec = Field(
        description="largest tolerated drop of every gated metric since the reference: 3pt "
        "(points), 0.03 (fraction) or 5% (relative)"
    )
    horizon: int = Field(
        50,
        ge=1,
        le=100_000,
        description="merges within which a history without a change trips at most "
        "gate.alpha of the time: the drift's e-detector trips at an e-value of horizon / a "
        "check's share of gate.alpha",
    )


class SequentialConfig(StrictModel):
    """Early fail for a retriever that costs money per call: queries in a seeded random order,
    in batches, and a stop with FAIL once a test at a planned look shows a drop past max_drop."""

    batch: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="queries per batch; the gate tests at the first batch at or past 35, "
        "50, 65 and 80% of the queries. Unset: the retriever's concurrency "
        "(gate.sequential: true takes every default)",
    )
    alpha_share: float = Field(
        1.0,
        gt=0,
        le=1,
        description="share of gate.alpha the early fail spends, split across the gated "
        "checks as the gate splits alpha and over the planned looks: it fails early only with "
        "evidence both of a drop and of the drop over the labelled set past max_drop",
    )


class NoiseProbeConfig(StrictModel):
    """The noise probe of one run a side (`check`, `baseline`): a seeded sample of the labelled
    queries run a second time, bypassing the answer cache; a top k that differs makes that
    side run `repeats` times, and the test allow for the noise."""

    share: float = Field(
        0.04,
        gt=0,
        le=1,
        description="share of the labelled queries re-run (at least min_queries of them)",
    )
    min_queries: int = Field(
        10, ge=1, le=100_000, description="fewest queries re-run (all of them when fewer)"
    )
    repeats: int = Field(
        3,
        ge=2,
        le=100,
        description="runs made when a re-run query's top k differs (by `baseline`, of the "
        "baseline; by `check`, of the current side, and with --against of the reference "
        "too): the test then allows for the run-to-run noise, as gate.repeats does",
    )


class LatencyConfig(StrictModel):
    """How latency checks are measured: `check --against` runs both commits' queries in
    interleaved turns, a coin deciding which side goes first in each."""

    batch: int = Field(
        1,
        ge=1,
        le=1000,
        description="queries per interleaving turn; 1 gives the test the most power (the "
        "queries of one turn swap together in it)",
    )
    warmup: int = Field(
        5,
        ge=0,
        le=10_000,
        description="queries run first on each side whose latency is left out (counted in "
        "the report): cold caches and connection set-up",
    )
    source: Literal["client", "retriever"] = Field(
        "client",
        description="the latency gated: client (wall time around each call, as a user waits) "
        "or retriever (what the service reports: retriever.latency, a python retriever's "
        "Reported)",
    )


def _noise_probe(raw: Any) -> Any:
    """`noise_probe: true` is the defaults, `false` none."""
    if raw is True:
        return {}
    return None if raw is False else raw


def _sequential(raw: Any) -> Any:
    """`sequential: true` is the defaults, `false` none."""
    if raw is True:
        return {}
    return None if raw is False else raw


class GateSettings(StrictModel):
    """The statistics of the gate."""

    alpha: float = Field(0.05, gt=0, lt=1, description="significance level")
    correction: Literal["holm", "bh", "none"] = Field(
        "holm",
        description="multiple-comparison correction across the gated checks: weighted "
        "Holm (family-wise), weighted Benjamini-Hochberg (false discovery rate) or none",
    )
    test: Literal["randomization", "t"] = Field(
        "randomization", description="paired test: sign-flip randomization or paired t"
    )
    resamples: int = Field(
        10_000, ge=1000, description="most sign-flip draws per check (most stop far sooner)"
    )
    seed: int = Field(0, description="seed of every resampling")
    require_significance: bool = Field(
        True, description="false: a drop past max_drop fails whatever its p-value"
    )
    rule: Literal["significant-drop", "evidence-of-excess", "non-inferiority"] = Field(
        "significant-drop",
        description="how a check is decided: significant-drop fails when the mean drop is "
        "past max_drop and a paired test shows a drop; evidence-of-excess fails only with "
        "evidence that the drop is past max_drop (fewer false alarms near the threshold, "
        "fewer catches); non-inferiority passes only with evidence that the drop is within "
        "max_drop, else the check is inconclusive (on_inconclusive: fail makes it strict)",
    )
    on_inconclusive: Literal["pass", "fail"] = Field(
        "pass",
        description="a check past its threshold whose test leans towards the drop without "
        "the evidence to fail it (adjusted p within 2x alpha), or under non-inferiority one "
        "not shown within max_drop: pass (the default; the report lists it) or fail the gate",
    )
    overall_share: float = Field(
        0.5,
        gt=0,
        lt=1,
        description="share of alpha for the overall checks of the gated metrics when slices "
        "are gated too; the slice checks share the rest",
    )
    min_coverage: float = Field(
        0.9,
        gt=0,
        le=1,
        description="share of the labelled queries a saved run (check --run, run_file) must "
        "answer, and that must stay comparable when judged documents changed in the corpus; "
        "less is bad input (exit 2), not a regression",
    )
    error_budget: float = Field(
        0.01, ge=0, le=1, description="fraction of queries the retriever may fail on"
    )
    repeats: int = Field(
        1,
        ge=1,
        le=100,
        description="runs of the retriever per side (check --repeats, baseline --repeats): 2 "
        "or more measure its run-to-run noise, which the test then allows for; the record "
        "compared is the mean of the runs",
    )
    drift: DriftConfig | None = Field(
        None,
        description="drift budget over many merges, checked against the history branch: "
        "{reference: v2.3, max_drop: 3pt}; unset: no drift check",
    )
    sequential: Annotated[SequentialConfig | None, BeforeValidator(_sequential), TAKES_BOOL] = (
        Field(
            None,
            description="run the labelled queries in a seeded random order, in batches, and stop "
            "with FAIL once a gated check's drop is shown past its max_drop: true, or {batch: 20, "
            "alpha_share: 1}; never passes early (check --sequential)",
        )
    )
    noise_probe: Annotated[NoiseProbeConfig | None, BeforeValidator(_noise_probe), TAKES_BOOL] = (
        Field(
            default_factory=lambda: NoiseProbeConfig(),
            description="with one run a side, re-run a seeded sample of the queries on the current "
            "side and, when a top k differs, run it gate.noise_probe.repeats times and allow for "
            "the noise: true (the default), false (off; check --no-noise-probe), or {share: 0.04, "
            "min_queries: 10, repeats: 3}",
        )
    )
    latency: LatencyConfig = Field(
        default_factory=lambda: LatencyConfig(),
        description="how latency checks (latency_p95, ...) are measured: {batch: 1, warmup: 5, "
        "source: client}",
    )
    labels: Labels = Field(
        "human",
        description="human: gate on people's judgments alone; human+llm: prediction-powered "
        "estimates from the judge's labels (judge:) rectified on the queries people judged, "
        "once the judge passes judge.trust",
    )

    @property
    def uses_llm_labels(self) -> bool:
        """Whether the judge's labels take part (human+llm): the labelled set then keeps the
        queries people have not judged yet."""
        return includes_llm(self.labels)


class ReportConfig(StrictModel):
    """Report files written by `check` and `compare`. Without this block: result.json,
    report.md and report.html in .retrieval-gate/<name>/ beside the config; with it, exactly
    the paths given."""

    markdown: str | None = Field(None, description="the Markdown report")
    json_path: str | None = Field(
        None, alias="json", description="the JSON result, read by `compare` and `comment`"
    )
    junit: str | None = Field(None, description="JUnit XML, one testcase per check")
    html: str | None = Field(None, description="a self-contained HTML report")


class LintConfig(StrictModel):
    """`retrieval-gate lint`: findings to leave out."""

    ignore: list[str] = Field(
        default_factory=list,
        description="codes of warning and info findings to leave out, e.g. [no-recall-metric]; "
        "errors cannot be ignored",
    )


class GateConfig(StrictModel):
    """A whole `retrieval-gate.yaml`."""

    version: Literal[1] = Field(description="schema version of this file")
    name: str = Field(
        "retrieval-gate",
        description="names the PR comment, report folders and files; keep it unique. "
        f"A short slug: {NAME_RULE}",
        json_schema_extra={"pattern": f"^{NAME_PATTERN}$"},
    )
    dataset: DatasetConfig
    retriever: AdapterConfig
    k: int = Field(10, ge=1, le=100_000, description="how many results to ask the retriever for")
    metrics: dict[str, MetricGate] = Field(
        min_length=1, description="canonical metric -> thresholds, e.g. ndcg@10: {max_drop: 2pt}"
    )
    metrics_dialect: Literal["trec_eval", "ir_measures", "ranx"] | None = Field(
        None,
        description="read the metrics keys as this tool names them, with its meaning (trec_eval: "
        "ndcg_cut_10 is ndcg(gain=linear)@10); reports use our names. One key can say it "
        "instead: trec_eval:ndcg_cut_10. `retrieval-gate metrics --dialect NAME` lists them",
    )
    slices: SlicesConfig = Field(default_factory=lambda: SlicesConfig())
    gate: GateSettings = Field(default_factory=lambda: GateSettings())
    baseline: str = Field(".retrieval-gate/baseline.json", description="baseline file")
    cache: str = Field(".retrieval-gate/cache.sqlite", description="retriever result cache")
    report: ReportConfig = Field(default_factory=lambda: ReportConfig())
    lint: LintConfig = Field(default_factory=lambda: LintConfig())
    judge: JudgeConfig | None = Field(
        None, description="an LLM judge for `retrieval-gate judge` and gate.labels: human+llm"
    )
    evaluators: dict[str, EvaluatorConfig] = Field(
        default_factory=dict,
        description="other tools' per-query scores (Ragas, DeepEval, promptfoo, JSONL), "
        "gated as metrics keys <evaluator>:<score>, e.g. ragas:faithfulness: {max_drop: 3pt}",
    )
    unlabelled: UnlabelledConfig | None = Field(
        None,
        description="production queries without labels and the label-free checks on them: "
        "top-k overlap with the reference, and an ANN index's recall against exact search",
    )

    _path: Path = PrivateAttr(default=Path(DEFAULT_CONFIG))
    _notes: tuple[str, ...] = PrivateAttr(default=())

    @field_validator("name")
    @classmethod
    def _slug(cls, name: str) -> str:
        if not valid_name(name):
            raise PydanticCustomError(
                "name_not_slug",
                "the name names folders, files and the PR comment, so it must be a short "
                "slug: {rule}, e.g. support-search",
                {"rule": NAME_RULE},
            )
        return name

    @model_validator(mode="after")
    def _judge_for_llm_labels(self) -> GateConfig:
        if self.gate.uses_llm_labels and self.judge is None:
            raise PydanticCustomError(
                "judge_missing",
                "gate.labels: human+llm gates on an LLM judge's labels: add a judge: block "
                "(base_url, model) naming the judge that wrote them",
            )
        if self.gate.uses_llm_labels and self.gate.rule != "significant-drop":
            raise PydanticCustomError(
                "rule_unsupported",
                "gate.rule: {rule} is not available with gate.labels: human+llm yet (its "
                "prediction-powered tests are against no change): use significant-drop",
                {"rule": self.gate.rule},
            )
        return self

    @property
    def path(self) -> Path:
        """The file this config was loaded from."""
        return self._path

    @property
    def notes(self) -> tuple[str, ...]:
        """What to know about the metric names as written (deprecated, or read differently
        by other tools), for `config validate`; not errors."""
        return self._notes

    @property
    def base_dir(self) -> Path:
        """Relative paths in the config resolve against the config file's folder."""
        return self._path.parent

    def resolve(self, path: str) -> Path:
        """`path` made absolute against the config file's folder."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.base_dir / candidate


def json_schema() -> dict[str, Any]:
    """The JSON Schema of `retrieval-gate.yaml`, for editor completion."""
    schema = GateConfig.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = DEFAULT_CONFIG
    return schema
