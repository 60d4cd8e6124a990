"""`calibrate --probes`: the judge grades probes of people's pairs beside their originals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.core.qrels import Qrels, is_judged
from retrieval_gate.core.wording import excerpt, one_line
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.judging.grading import Task, tasks_of
from retrieval_gate.judging.pool import Pair, passage_text
from retrieval_gate.judging.probes import (
    CUT,
    STUFFED,
    Probe,
    ProbeRate,
    overall,
    probes_of,
    rates_of,
)

if TYPE_CHECKING:
    from retrieval_gate.datasets.llm_layer import LlmJudgment
    from retrieval_gate.execution.cache import ResultCache


@dataclass(frozen=True)
class ReAsked:
    """Originals graded again, the cache bypassed: how many, how many got another grade, and
    the sum of |first - second| over them."""

    pairs: int
    differ: int
    moved: int

    @property
    def share(self) -> float | None:
        return self.differ / self.pairs if self.pairs else None

    @property
    def mean_moved(self) -> float | None:
        return self.moved / self.pairs if self.pairs else None


@dataclass(frozen=True)
class ProbeReport:
    """What probing the judge found: flips per kind, the calls spent, who answered."""

    rates: tuple[ProbeRate, ...]
    """Per kind: CUT, then STUFFED."""
    max_flip_rate: float
    calls: int
    failed: int
    """Probes or originals the judge did not grade (errors, the budget)."""
    judges: tuple[JudgeIdentity, ...]
    """The judges that answered (one, unless the endpoint switched models)."""
    reasked: ReAsked = field(default_factory=lambda: ReAsked(0, 0, 0))

    @property
    def total(self) -> ProbeRate:
        return overall(self.rates)

    @property
    def why_not(self) -> str:
        """Why the probes make the judge's labels provisional, "" when they do not: a kind
        of probe flipping more often than judge.probes.max_flip_rate (each kind tests its own
        weakness, so one kind's many probes do not dilute another's flips)."""
        over = [r for r in self.rates if r.rate is not None and r.rate > self.max_flip_rate]
        return "; ".join(
            f"{r.flipped} of {r.graded} {r.kind} robustness probes flipped (rate "
            f"{r.rate:.2f}, above judge.probes.max_flip_rate {self.max_flip_rate:g})"
            for r in over
            if r.rate is not None
        )


PROBES_SUFFIX = ".probes.json"
REASON_KEPT = 500
"""Characters of a recorded reason a report shows: ours are under 200."""


def probes_path(layer: Path) -> Path:
    """Where `calibrate --probes` leaves its verdict: beside the judge's layer."""
    return layer.with_name(layer.name + PROBES_SUFFIX)


def write_verdict(layer: Path, model: str, prompt_sha256: str, report: ProbeReport) -> Path:
    """Record, beside the layer, the judge the probes tested and why they make its labels
    provisional ("" when they do not): `check` reads it (`read_verdict`)."""
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.core.wording import json_text

    path = probes_path(layer)
    total = report.total
    document = {
        "model": model,
        "prompt_sha256": prompt_sha256,
        "provisional_reason": report.why_not,
        "graded": total.graded,
        "flipped": total.flipped,
    }
    write_text_atomic(path, json_text(document) + "\n")
    return path


def read_verdict(layer: Path, model: str, prompt_sha256: str) -> str:
    """Why the last probing of this judge (model, prompt) made its labels provisional: ""
    when it did not, when no probing was recorded, or when it tested another judge.
    InputError naming the file when it is not such a record."""
    from retrieval_gate.core.json_parse import parsed_json

    path = probes_path(layer)
    if not path.is_file():
        return ""
    fix = "run `retrieval-gate calibrate --probes` again to rewrite it, or delete it"
    try:
        document = parsed_json(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"not JSON ({error}); {fix}", source=str(path)) from None
    except RecursionError:
        raise InputError(f"JSON nested too deeply to read; {fix}", source=str(path)) from None
    fields = ("model", "prompt_sha256", "provisional_reason")
    if not isinstance(document, dict) or not all(
        isinstance(document.get(name), str) for name in fields
    ):
        raise InputError(
            f"not a probing record: an object with string fields {', '.join(fields)}; {fix}",
            source=str(path),
        )
    if (document["model"], document["prompt_sha256"]) != (model, prompt_sha256):
        return ""
    # A file in the repository reaches every report: on one line, no control character.
    return excerpt(document["provisional_reason"], REASON_KEPT)


def known_pairs(dataset: Dataset, human: Qrels) -> list[tuple[Pair, str]]:
    """Every pair of `human` (people's grades) whose query has text in `dataset` and whose
    document has text in its corpus, with that text: what probes are made of."""
    texts = {query.id: query.text for query in dataset.queries}
    found = []
    for query_id, grades in sorted(human.to_dict().items()):
        if query_id not in texts:
            continue
        for doc in sorted(grades):
            if not is_judged(grades, doc):
                continue
            passage = passage_text(doc, dataset.corpus, {})
            if passage is not None:
                found.append((Pair(query_id, texts[query_id], doc, grades[doc]), passage))
    return found


def run_probes(
    config: GateConfig,
    dataset: Dataset,
    human: Qrels,
    *,
    store: ResultCache | None = None,
    environ: Mapping[str, str] | None = None,
) -> ProbeReport:
    """Grade judge.probes.max_calls / 2 probes of people's pairs (`human`) and their
    originals with the configured judge, through the runner and the cache `judge` uses,
    within judge.probes.max_calls calls. The probes never reach the layer.

    InputError when people's labels give no pair to probe."""
    from retrieval_gate.datasets.llm_layer import identities_of
    from retrieval_gate.judging.calls import settings_of
    from retrieval_gate.judging.client import ChatClient
    from retrieval_gate.judging.grading import JudgeRetriever, grade_tasks
    from retrieval_gate.judging.prompt import load_prompt
    from retrieval_gate.judging.spend import Budget, Ledger

    judge = config.judge
    assert judge is not None  # calibrate refuses a config without one
    limits = judge.probes
    seed = judge.seed or 0
    reasks = min(limits.reasks, limits.max_calls - 2)
    probes = probes_of(known_pairs(dataset, human), (limits.max_calls - reasks) // 2, seed)
    if not probes:
        raise InputError(
            "no pair to probe the judge with: probes need pairs people graded 0 or 2 and above "
            "whose document has text in dataset.corpus",
            source=str(config.path),
        )
    prompt = load_prompt(config.resolve(judge.rubric) if judge.rubric else None)
    ledger = Ledger(judge.prices, Budget(calls=limits.max_calls), judge.max_tokens)
    retriever = JudgeRetriever(ChatClient(judge, environ), prompt, ledger, logprobs=judge.logprobs)
    settings = settings_of(judge)
    grades: dict[tuple[str, str, str], int] = {}
    rows: list[LlmJudgment] = []
    failed = 0
    try:
        # Originals first: `judge` has usually graded them, so the cache answers at no cost.
        for label, tasks in (
            ("original", tasks_of([(p.pair, p.original) for p in probes])),
            *_by_kind(probes),
        ):
            graded = grade_tasks(retriever, tasks, settings, cache=store)
            if graded.interrupted:
                raise KeyboardInterrupt
            if graded.stopped:
                # A probing the endpoint cut short must not clear an earlier verdict.
                raise GateError(
                    f"{one_line(graded.stopped)}; the probes' verdict is not recorded: fix the "
                    "cause and run `retrieval-gate calibrate --probes` again"
                )
            failed += len(tasks) - len(graded.rows)
            rows += graded.rows
            grades.update({(label, row.query, row.doc): row.grade for row in graded.rows})
        again = _reask_sample(probes, grades, reasks, seed)
        # The cache bypassed: its answer is the first draw, and a re-ask must call again.
        graded = grade_tasks(retriever, again, settings, cache=None)
        rows += graded.rows
        failed += len(again) - len(graded.rows)
        reasked = reasked_of(grades, graded.rows)
    finally:
        retriever.close()
    return ProbeReport(
        rates_of(probes, grades),
        limits.max_flip_rate,
        ledger.calls,
        failed,
        tuple(identities_of(rows)),
        reasked,
    )


def _reask_sample(
    probes: Sequence[Probe], grades: Mapping[tuple[str, str, str], int], size: int, seed: int
) -> list[Task]:
    """`size` of the probes' graded originals, drawn with `seed`, as tasks."""
    import random

    graded = [p for p in probes if ("original", p.pair.query_id, p.pair.doc) in grades]
    chosen = random.Random(seed).sample(graded, min(size, len(graded)))
    return tasks_of(
        [(p.pair, p.original) for p in sorted(chosen, key=lambda p: (p.pair.query_id, p.pair.doc))]
    )


def reasked_of(grades: Mapping[tuple[str, str, str], int], again: Sequence[LlmJudgment]) -> ReAsked:
    """The spread between the originals' `grades` and their grades `again`."""
    firsts = [grades["original", row.query, row.doc] for row in again]
    moves = [abs(first - row.grade) for first, row in zip(firsts, again, strict=True)]
    return ReAsked(len(moves), sum(move > 0 for move in moves), sum(moves))


def _by_kind(probes: Sequence[Probe]) -> list[tuple[str, list[Task]]]:
    """The probes' tasks, one list per kind."""
    return [
        (kind, tasks_of([(p.pair, p.probe) for p in probes if p.kind == kind]))
        for kind in (CUT, STUFFED)
    ]
