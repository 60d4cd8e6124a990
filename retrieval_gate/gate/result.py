"""The gate's result: every check's verdict and what explains it, as one canonical document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from retrieval_gate.core.version import __version__
from retrieval_gate.core.wording import json_text
from retrieval_gate.datasets import Dataset
from retrieval_gate.gate.baseline.corpus_changes import CorpusCheck
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.baseline.repeats import Noise, noise_document
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings
from retrieval_gate.gate.checks.slicing import ALL
from retrieval_gate.gate.explain.diagnostics import QueryChange, Unjudged
from retrieval_gate.gate.explain.label_holes import LabelHole
from retrieval_gate.gate.explain.stage_losses import StageLosses
from retrieval_gate.gate.modes.assisted import Assisted
from retrieval_gate.gate.modes.label_free import LabelFreeRun
from retrieval_gate.gate.modes.sequential import SequentialRun, stop_line

RESULT_SCHEMA_VERSION = 2
"""2: the one-sided rule (inconclusive, detectable_drop, level, p_bound, failed per check)."""

Status = Literal["pass", "fail", "error"]


@dataclass(frozen=True, kw_only=True)
class GateContext:
    """What the result was decided under, for the report footer."""

    config_file: str
    config_sha256: str
    """sha256 of the validated config as canonical JSON."""
    k: int
    settings: ComparisonSettings
    reference: str = ""
    """Where the reference record came from: "baseline PATH", "a run at REF (...)"; "" when
    the caller did not say (compare)."""


@dataclass(frozen=True, kw_only=True)
class OtherLevelChecks:
    """A chunked corpus's checks at the level dataset.level does not name
    (dataset.other_level): each marked with its level (`Comparison.view`)."""

    level: Literal["chunk", "document"]
    gated: bool
    """dataset.other_level gate: its failing checks fail the gate too (both levels then at
    half of alpha each)."""
    comparisons: tuple[Comparison, ...]
    label_holes: tuple[LabelHole, ...] = ()
    """The bounds of each check that fails or would fail were the level gated."""

    @property
    def gating_level(self) -> Literal["chunk", "document"]:
        """The level the result's own comparisons are at."""
        return "chunk" if self.level == "document" else "document"


@dataclass(frozen=True, eq=False, kw_only=True)
class GateResult:
    """Everything `check` decided; nothing in it prints. `document()` is the canonical JSON."""

    name: str
    comparisons: tuple[Comparison, ...]
    query_changes: tuple[QueryChange, ...]
    hits_lost: tuple[str, ...]
    hits_gained: tuple[str, ...]
    warnings: tuple[str, ...]
    failed_queries: tuple[str, ...]
    """Queries the retriever failed on (scored 0, within the error budget)."""
    unjudged: Unjudged
    label_holes: tuple[LabelHole, ...]
    """Each failing or inconclusive check re-decided with its unjudged documents at both
    extremes (`label_holes`), in check order."""
    context: GateContext
    baseline: Baseline
    current: Baseline
    noise: Noise
    """The repeats of both sides: without them, the retriever's own noise is not measured."""
    dataset: Dataset | None = None
    """The labelled set it was decided on, for what reads it again (main's drift); not part
    of the document."""
    assisted: Assisted | None = None
    """gate.labels human+llm: the judge's calibration, the prediction-powered and the
    human-only checks, and which decided (`comparisons` holds those)."""
    sequential: SequentialRun | None = None
    """gate.sequential: the looks taken and, when it stopped early, the checks that showed
    the drop (`comparisons` are then on the queries run)."""
    corpus: CorpusCheck | None = None
    """Whether the judged documents were checked for changes since the baseline, and the
    queries left out of every check for one (`baseline` and `current` keep them)."""
    stage_losses: StageLosses | None = None
    """A two-stage retriever's lost relevant documents by the stage that lost them; None when
    the current record has no candidates."""
    label_free: LabelFreeRun | None = None
    """The label-free checks' queries and reference, when the config has them (their
    comparisons are in `comparisons`, named `unlabelled:...`)."""
    other_level: OtherLevelChecks | None = None
    """A chunked corpus's other level's checks; None when the corpus is not chunked or
    dataset.other_level is off."""

    @property
    def failures(self) -> tuple[Comparison, ...]:
        """Every failing (metric, slice), regressions first; the other level's too when it
        gates (its checks fail only then)."""
        other = self.other_level.comparisons if self.other_level is not None else ()
        return failing_checks((*self.comparisons, *other))

    @property
    def status(self) -> Status:
        """`fail` when any gated (metric, slice) regressed or fell below its floor."""
        return "fail" if self.failures else "pass"

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression or floor breached (DESIGN's exit codes)."""
        return 1 if self.failures else 0

    def document(self, *, compact: bool = False) -> dict[str, Any]:
        """The canonical record: stable key order, no clock, so equal inputs give equal bytes.
        `compact`: the current top k as the record holds it (`baseline_document`)."""
        from retrieval_gate.gate.baseline.document import baseline_document

        return {
            "schema_version": RESULT_SCHEMA_VERSION,
            "tool_version": __version__,
            "name": self.name,
            "status": self.status,
            "failures": [_comparison(c) for c in self.failures],
            "comparisons": [_comparison(c) for c in self.comparisons],
            **_other_level_block(self.other_level),
            "query_changes": [
                {**asdict(change), "delta": change.delta} for change in self.query_changes
            ],
            "hits_lost": list(self.hits_lost),
            "hits_gained": list(self.hits_gained),
            **({"labels": assisted_document(self.assisted)} if self.assisted else {}),
            **({"sequential": sequential_document(self.sequential)} if self.sequential else {}),
            **(
                {"stage_losses": stage_losses_document(self.stage_losses)}
                if self.stage_losses
                else {}
            ),
            **({"label_free": asdict(self.label_free)} if self.label_free else {}),
            "warnings": list(self.warnings),
            "failed_queries": list(self.failed_queries),
            **_corpus_block(self.corpus),
            "unjudged": asdict(self.unjudged),
            "label_holes": [asdict(hole) for hole in self.label_holes],
            "noise": {
                **noise_document(self.noise),
                "spread": {
                    c.metric: c.run_sd for c in self.comparisons if c.slice == ALL and c.run_sd
                },
            },
            "config": {
                "file": self.context.config_file,
                "sha256": self.context.config_sha256,
                "k": self.context.k,
                "gate": asdict(self.context.settings),
            },
            "baseline": {
                "source": self.context.reference,
                "created_at": self.baseline.created_at,
                "git_commit": self.baseline.git_commit,
                "git_dirty": self.baseline.git_dirty,
                "tool_version": self.baseline.tool_version,
                "retriever": dict(self.baseline.retriever),
                "fingerprints": asdict(self.baseline.fingerprints),
                "scores": _aligned_scores(self.baseline, self.current.query_ids),
                **({"runs": len(self.baseline.repeats.runs)} if self.baseline.repeats else {}),
            },
            "current": baseline_document(self.current, clock=False, compact=compact),
        }

    def to_json(self) -> str:
        """`document()` as indented JSON, one trailing newline."""
        return canonical_json(self.document())


def failing_checks(comparisons: Sequence[Comparison]) -> tuple[Comparison, ...]:
    """The failing checks, regressions first, each kind by its delta (the worst first)."""
    failed = [c for c in comparisons if c.failed]
    return tuple(sorted(failed, key=lambda c: (c.verdict != "regressed", c.verdict, c.delta)))


def canonical_json(document: dict[str, Any]) -> str:
    """A result document as the JSON report: indented, key order as built, one newline."""
    return json_text(document) + "\n"


def error_document(name: str, message: str) -> dict[str, Any]:
    """The result of a check that could not decide (exit 2), so reports can say why."""
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "tool_version": __version__,
        "name": name,
        "status": "error",
        "error": message,
    }


def _aligned_scores(baseline: Baseline, query_ids: Sequence[str]) -> dict[str, list[float | None]]:
    """The baseline's per-query scores in `query_ids` order (comparable records share them);
    null where the metric is undefined for the query (JSON has no NaN)."""
    position = {query_id: i for i, query_id in enumerate(baseline.query_ids)}
    order = [position[query_id] for query_id in query_ids]
    return {
        metric: [None if v != v else v for v in values[order].tolist()]
        for metric, values in baseline.scores.items()
    }


def _other_level_block(other: OtherLevelChecks | None) -> dict[str, Any]:
    """`{"other_level": ...}` for a chunked corpus; nothing otherwise, so a result of an
    unchunked one is byte for byte one made before the other level."""
    if other is None:
        return {}
    return {
        "other_level": {
            "level": other.level,
            "gating_level": other.gating_level,
            "gated": other.gated,
            "comparisons": [_comparison(c) for c in other.comparisons],
            "label_holes": [asdict(hole) for hole in other.label_holes],
        }
    }


def _comparison(comparison: Comparison) -> dict[str, Any]:
    document = asdict(comparison)
    # Absent means higher is better on the [0, 1] scale with every query defined, at the
    # gating level, as in results made before them.
    for field, default in (("direction", "higher"), ("unit", ""), ("excluded", 0), ("view", "")):
        if document[field] == default:
            del document[field]
    return document


def corpus_document(corpus: CorpusCheck) -> dict[str, Any]:
    """The corpus block: not checked and why, or the queries left out and why."""
    if not corpus.checked:
        return {"checked": False, "reason": corpus.reason}
    return {
        "checked": True,
        "not_comparable": [
            {"query_id": q.query_id, "reasons": list(q.reasons)} for q in corpus.not_comparable
        ],
    }


def _corpus_block(corpus: CorpusCheck | None) -> dict[str, Any]:
    """`{"corpus": ...}` when there is something to say; a checked, unchanged corpus adds
    nothing, so its result is byte for byte one made before the check."""
    if corpus is None or (corpus.checked and not corpus.not_comparable):
        return {}
    return {"corpus": corpus_document(corpus)}


def stage_losses_document(losses: StageLosses) -> dict[str, Any]:
    """The stage_losses block: per check and slice, and the queries that lost most."""
    return {
        "checks": [asdict(loss) for loss in losses.checks],
        "queries": [asdict(loss) for loss in losses.queries],
        "query_count": losses.query_count,
    }


def sequential_document(run: SequentialRun) -> dict[str, Any]:
    """The sequential block: how many queries were spent, and why it stopped if it did."""
    return {
        "stopped": run.stopped,
        "queries_run": run.queries_run,
        "queries_total": run.queries_total,
        "looks": run.looks,
        "batch": run.batch,
        "alpha": run.alpha,
        "stopped_by": [asdict(crossing) for crossing in run.stopped_by],
        "untested": list(run.untested),
        "note": stop_line(run),
    }


def assisted_document(assisted: Assisted) -> dict[str, Any]:
    """The labels block of an LLM-assisted result: who decided, the card, both views."""
    card = assisted.card
    return {
        "decided_by": assisted.decided_by,
        "provisional_reason": assisted.why_not,
        "judge": {
            "model": assisted.model,
            "prompt_sha256": assisted.prompt_sha256,
            "answered_by": [
                {
                    "model": who.answered_by or None,
                    "system_fingerprint": who.system_fingerprint or None,
                    "temperature": who.temperature,
                    "max_tokens": who.max_tokens,
                    "logprobs": who.logprobs,
                    "pairs": pairs,
                }
                for who, pairs in assisted.judges
            ],
            "mixed": assisted.mixed,
        },
        "calibration": {
            "pairs": card.pairs,
            "kappa_quadratic": card.kappa,
            "alpha_ordinal": card.alpha,
            "confusion": [list(row) for row in card.confusion],
            "bias": [asdict(bias) for bias in card.bias],
            "systems": asdict(card.systems) if card.systems else None,
            "units": [asdict(unit) for unit in assisted.units],
            "same_family": list(assisted.same_family),
        },
        "queries": assisted.queries,
        "human_queries": assisted.human_queries,
        "human_query_ids": list(assisted.human_ids),
        "uncovered": list(assisted.uncovered),
        **({"judging": asdict(assisted.calls)} if assisted.calls is not None else {}),
        "assisted": [_comparison(c) for c in assisted.assisted],
        "human_judged": list(assisted.human_judged),
        "judge_weights": list(assisted.weights),
        "human": [_comparison(c) for c in assisted.human],
    }
