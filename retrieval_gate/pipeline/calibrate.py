"""`calibrate`: the configured judge's labels against people's, pair by pair and by system."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from retrieval_gate.config.check_keys import ranking_keys
from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.ids import object_array
from retrieval_gate.core.judge_pleas import pleading_documents
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.datasets import assemble, load_labels
from retrieval_gate.errors import InputError
from retrieval_gate.gate.modes.assisted import card_of
from retrieval_gate.pipeline.judge_labels import judge_labels
from retrieval_gate.pipeline.judge_probes import ProbeReport, run_probes, write_verdict
from retrieval_gate.stats.calibration import CalibrationCard, system_agreement

if TYPE_CHECKING:
    from retrieval_gate.execution.cache import ResultCache


@dataclass(frozen=True)
class RunScores:
    """One run's mean of the metric under people's and the judge's labels."""

    name: str
    human: float
    judge: float


@dataclass(frozen=True)
class Calibration:
    """The card of one judge against a set of people's labels, and what decided its trust."""

    model: str
    prompt_sha256: str
    labels: str
    """Where people's labels came from."""
    card: CalibrationCard
    min_pairs: int
    min_kappa: float
    metric: str
    """The metric runs are ranked by (the config's first)."""
    runs: tuple[RunScores, ...]
    human_queries: int
    """Queries people judged: the runs are scored over them."""
    probes: ProbeReport | None = None
    """What `--probes` found (None: not probed)."""
    pleading: tuple[tuple[str, str], ...] | None = None
    """(doc id, pattern) of each corpus document that addresses a judge (None: no corpus)."""
    recorded: str = ""
    """Why the last recorded `--probes` run made this judge provisional ("" when none did)."""

    @property
    def why_not(self) -> str:
        """Why the gate would not trust this judge, "" when it would."""
        reasons = [self.card.distrust(self.min_pairs, self.min_kappa)]
        reasons.append(self.recorded if self.probes is None else self.probes.why_not)
        return "; ".join(reason for reason in reasons if reason)


def calibrate(
    config: GateConfig | str | Path,
    *,
    qrels: str | Path | None = None,
    runs: Sequence[str | Path] = (),
    probes: bool = False,
    store: ResultCache | None = None,
) -> Calibration:
    """The configured judge's layer against the dataset's qrels, or against `qrels` (held-back
    labels, say); with `runs` (run files), Kendall's tau-b between their rankings under both.

    InputError when the config has no judge block, the layer is missing or holds no or
    several prompts of the model, or people's grades are not 0-3."""
    config = config if isinstance(config, GateConfig) else load(config)
    if config.judge is None:
        raise InputError(
            "calibrate needs the judge: add a judge: block (model, base_url) to the config",
            source=str(config.path),
        )
    labels = load_labels(config.dataset, config.base_dir, judgments_required=qrels is None)
    dataset = assemble(labels, combine=config.dataset.annotators.combine, keep_unjudged=True)
    human = dataset.qrels
    if qrels is not None:
        from retrieval_gate.readers import read_qrels

        human = read_qrels(qrels)
    judged_ids = sorted({human.query_ids[q] for q in human.query[human.grade >= 0].tolist()})
    # Held-back labels may name queries the dataset lacks: the judge's rows of them count.
    judge = judge_labels(config, sorted({*(q.id for q in dataset.queries), *judged_ids}))
    card = card_of(human, judge.qrels)
    metric = ranking_keys(config.metrics)[0]
    scored = tuple(
        _run_scores(Path(path), metric, _only(human, judged_ids), _only(judge.qrels, judged_ids))
        for path in runs
    )
    if scored:
        card = dataclasses.replace(
            card,
            systems=system_agreement([r.human for r in scored], [r.judge for r in scored]),
        )
    probed = None
    if probes:
        from retrieval_gate.datasets.llm_layer import layer_path

        probed = run_probes(config, dataset, human, store=store)
        write_verdict(layer_path(config), judge.model, judge.prompt_sha256, probed)
    return Calibration(
        judge.model,
        judge.prompt_sha256,
        human.source,
        card,
        config.judge.trust.min_pairs,
        config.judge.trust.min_kappa,
        metric,
        scored,
        len(judged_ids),
        probed,
        None if dataset.corpus is None else pleading_documents(dataset.corpus),
        judge.probed,
    )


def _only(qrels: Qrels, query_ids: Sequence[str]) -> Qrels:
    """`qrels` over exactly `query_ids` (sorted): rows of other queries dropped."""
    ids = object_array(sorted(query_ids))
    position = {q: i for i, q in enumerate(ids.tolist())}
    names = qrels.query_ids.tolist()
    keep = [i for i, q in enumerate(qrels.query.tolist()) if names[q] in position]
    query = [position[names[qrels.query[i]]] for i in keep]
    return Qrels(
        ids,
        np.asarray(query, dtype=np.int64),
        qrels.docs[keep] if keep else object_array([]),
        qrels.grade[keep],
        qrels.source,
    )


def _run_scores(path: Path, metric: str, human: Qrels, judge: Qrels) -> RunScores:
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import read_run

    run = read_run(path)
    means = [
        float(evaluate(run, labels, [metric]).values[metric].mean()) for labels in (human, judge)
    ]
    return RunScores(path.name, *means)
