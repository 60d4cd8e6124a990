"""The label queue of a config's current top k: from the retriever, or from a saved result."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TextIO

from retrieval_gate.config.check_keys import ranking_keys
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.datasets import Dataset
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.datasets.llm_layer import LlmJudgment, judges_of, layer_path, read_layer
from retrieval_gate.errors import InputError, NotComparableError
from retrieval_gate.gate.baseline.comparable import comparable_baseline
from retrieval_gate.gate.baseline.document import record_of
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.labels.draw import UNSURE, active_draw, query_doubt, targeted, uniform_draw
from retrieval_gate.labels.queue import (
    LabelQueue,
    judge_disagreements,
    judge_unsure_first,
    unjudged_items,
)
from retrieval_gate.metrics import parse_metric
from retrieval_gate.metrics.parse import may_be_undefined
from retrieval_gate.pipeline.record import record_current


def make_queue(
    config: GateConfig,
    *,
    result_path: str | Path | None = None,
    cache: bool = True,
    refresh_cache: bool = False,
    progress: TextIO | None = None,
    order: QueueOrder = "impact",
    sample: int | None = None,
    active: int | None = None,
) -> LabelQueue:
    """The label queue of `config`'s current top k: from the retriever (cached as `check`
    caches it), or from `result_path`: a `check` JSON result, a baseline file, or a run file
    (TREC, JSONL or BEIR results JSON, read as `check --run` reads it).

    `new` compares with the config's baseline file when it exists. `delta` comes from the
    result's baseline scores when `result_path` is a `check` result, else from the config's
    baseline file. No printing; problems that do not stop the queue are in `warnings`.

    `sample` keeps whole queries only: that many drawn at random (seeded with gate.seed) from
    those people have judged nothing of, every unjudged pair of each (of the current top k
    and the baseline's, so that people's delta of each drawn query is whole). gate.labels: human+llm
    needs the human-judged queries to be a random sample of the set; queries picked by where
    the judge doubts, or by impact, are not, and would bias its estimates.

    `active` also keeps whole queries, drawn independently with probability rising with the
    judge's doubt of each one's metric difference (`labels.draw`), that many on average;
    every row records its probability, which the gate's estimate weights by. Without either,
    the rows are a targeted draw (their probability unknown): `qrels merge` records that, and
    the gate keeps them out of the estimate's correction.
    """

    metric = str(parse_metric(ranking_keys(config.metrics)[0]))
    warnings: list[str] = []
    deltas: dict[str, float] | None = None
    document = None if result_path is None else _record_document(Path(result_path))
    if document is None:
        current = record_current(
            config,
            run_path=result_path,
            cache=cache,
            refresh_cache=refresh_cache,
            progress=progress,
        )
        record, dataset = current.record, current.dataset
        warnings += current.warnings
    else:
        source = str(result_path)
        record = record_of(document, source)
        dataset = load_dataset(config.dataset, config.base_dir)
        warnings += [str(warning) for warning in dataset.warnings]
        if record.fingerprints.dataset != dataset.fingerprint:
            warnings.append(
                f"{source} was made with another labelled set than {config.path}'s; "
                "the queue lists what the current judgments leave unjudged"
            )
        baseline_scores = _result_baseline_scores(document, source)
        if baseline_scores is not None:
            deltas = _result_deltas(source, record, baseline_scores, metric, warnings)
    baseline_path = config.resolve(config.baseline)
    baseline = read_baseline(baseline_path) if baseline_path.exists() else None
    if baseline is not None:
        if baseline.fingerprints.k != config.k:
            warnings.append(
                f"{baseline_path} holds each query's top {baseline.fingerprints.k}, not the top "
                f"{config.k}: `new` compares with that"
            )
        if deltas is None:
            try:  # as check compares: re-scored when only the judgments changed
                compared, note = comparable_baseline(baseline, record, dataset)
                warnings += [note] if note else []
            except NotComparableError as error:
                compared = baseline
                warnings.append(
                    f"{baseline_path}: {str(error).splitlines()[0]}; `delta` compares with "
                    "its scores anyway"
                )
            deltas = _record_deltas(compared, record, metric)
            if deltas is None:
                warnings.append(f"{baseline_path} has no {metric} scores; `delta` is empty")
    earlier = None if baseline is None else baseline.top_k
    if order == "judge-disagrees":
        grades = judge_grades(config)
        items = judge_disagreements(
            dataset, record.top_k, grades, k=config.k, metric=metric, deltas=deltas,
            baseline_top_k=earlier,
        )  # fmt: skip
    else:
        dependent = None if document is None else _dependent_queries(document, config, dataset)
        drawing = sample is not None or active is not None
        if drawing and earlier is not None:
            # A drawn query's delta needs people's grades of both runs' top k: list the
            # baseline's pairs too, as for a label-dependent check, for every query.
            dependent = {query.id for query in dataset.queries}
        items = unjudged_items(
            dataset, record.top_k, k=config.k, metric=metric, deltas=deltas,
            baseline_top_k=earlier, dependent=dependent,
        )  # fmt: skip
        if order == "judge-unsure":
            items = judge_unsure_first(items, judge_grades(config))
    if sample is not None or active is not None:
        items = [dataclasses.replace(item, depends=None) for item in items]
        qrels = dataset.qrels
        judged = set(qrels.query_ids[qrels.query[qrels.grade >= 0]].tolist())
        candidates = sorted({item.query_id for item in items} - judged)
        if sample is not None:
            items = uniform_draw(items, candidates, sample, config.gate.seed)
        elif active is not None:
            doubt = _doubts(config, candidates, record.top_k, earlier)
            if not layer_path(config).exists():
                warnings.append(
                    f"no judgment layer at {layer_path(config)}: every pair counts as one the "
                    "judge doubts, so --active draws by how much the two runs' top k differ; "
                    "run `retrieval-gate judge` first to draw by the judge's doubt"
                )
            items = active_draw(items, doubt, active, config.gate.seed)
    else:
        items = targeted(items, order)
    return LabelQueue(
        tuple(items),
        config.k,
        metric,
        baseline_path if baseline is not None else None,
        tuple(warnings),
    )


QueueOrder = Literal["impact", "judge-unsure", "judge-disagrees"]
QUEUE_ORDERS: tuple[QueueOrder, ...] = ("impact", "judge-unsure", "judge-disagrees")


def judge_grades(config: GateConfig) -> dict[tuple[str, str], LlmJudgment]:
    """{(query, doc): row} of one judge in `config`'s judgment layer: the config's judge
    (judge.model and its prompt's sha256), else the layer's only judge."""
    from retrieval_gate.judging.prompt import load_prompt

    path = layer_path(config)
    rows = read_layer(path)
    if config.judge is not None:
        prompt = load_prompt(config.resolve(config.judge.rubric) if config.judge.rubric else None)
        judge = (config.judge.model, prompt.sha256)
    else:
        judges = judges_of(rows)
        if len(judges) != 1:
            raise InputError(
                f"the layer holds {len(judges)} judges; add the `judge:` block of the one "
                "to order the queue by",
                source=str(path),
            )
        judge = judges[0]
    return {(row.query, row.doc): row for row in rows if row.judge == judge}


def _doubts(
    config: GateConfig,
    candidates: list[str],
    top_k: Mapping[str, Sequence[str]],
    earlier: Mapping[str, Sequence[str]] | None,
) -> dict[str, float]:
    """Per candidate query: the judge's doubt of its metric difference (`query_doubt`), from
    the config's judge in its layer (none graded: every pair counts as unsure)."""
    path = layer_path(config)
    grades = judge_grades(config) if path.exists() else {}
    doubts: dict[str, dict[str, float]] = {}
    for (query, doc), row in grades.items():
        sure = row.confidence
        doubts.setdefault(query, {})[doc] = UNSURE if sure is None else 1.0 - sure
    return {
        query: query_doubt(
            top_k.get(query, ()),
            None if earlier is None else earlier.get(query, ()),
            doubts.get(query, {}),
            config.k,
        )
        for query in candidates
    }


def _dependent_queries(
    document: Mapping[str, Any], config: GateConfig, dataset: Dataset
) -> set[str] | None:
    """The queries of the checks whose verdict depends on unjudged documents (`label_holes`
    of a `check` result), by the config's slices; None when the document has no bounds."""
    from retrieval_gate.gate.checks.slicing import slice_queries

    holes = document.get("label_holes")
    if not isinstance(holes, list):
        return None
    names = {
        hole.get("slice")
        for hole in holes
        if isinstance(hole, dict) and hole.get("robust") is False and not hole.get("reason")
    }
    slices = config.slices
    found = slice_queries(dataset.queries, slices.by, slices.combine, slices.query_length.bins)
    ids = [query.id for query in dataset.queries]
    return {ids[i] for name in names if name in found for i in found[name].tolist()}


def _record_document(path: Path) -> dict[str, Any] | None:
    """The parsed `check` result or baseline at `path`; None when it is a run file."""
    try:
        data = parsed_json(regular_file(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no result, baseline or run file at {path}") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None  # not JSON: a TREC or JSON Lines run, which its reader checks
    keys = ("current", "fingerprints", "schema_version")
    return data if isinstance(data, dict) and any(key in data for key in keys) else None


def _result_baseline_scores(document: Mapping[str, Any], source: str) -> dict[str, Any] | None:
    """`baseline.scores` of a `check` result; None for a baseline file."""
    if document.get("status") == "error":
        raise InputError(
            f"the result of a check that could not decide ({document.get('error', 'no reason')}); "
            "run `retrieval-gate check` again, or pass its run file to it",
            source=source,
        )
    baseline = document.get("baseline")
    if not isinstance(document.get("current"), dict) or not isinstance(baseline, dict):
        return None
    scores = baseline.get("scores")
    return scores if isinstance(scores, dict) else None


def _result_deltas(
    source: str,
    record: Baseline,
    baseline_scores: Mapping[str, Any],
    metric: str,
    warnings: list[str],
) -> dict[str, float] | None:
    values = baseline_scores.get(metric)
    if metric not in record.scores or values is None:
        warnings.append(f"{source} has no {metric} scores; `delta` is empty")
        return None
    current = record.scores[metric].tolist()
    ok = isinstance(values, list) and len(values) == len(current)
    undefined = may_be_undefined(metric)  # null: undefined for that query, no delta
    if not ok or not all(
        (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
        or (v is None and undefined)
        for v in values
    ):
        raise InputError(
            f"baseline.scores.{metric} is not one finite number per query of "
            "current.query_ids; the result was edited by hand: run `retrieval-gate check` again",
            source=source,
        )
    return {
        query_id: after - float(before)
        for query_id, after, before in zip(record.query_ids, current, values, strict=True)
        if before is not None and not math.isnan(after)
    }


def _record_deltas(baseline: Baseline, record: Baseline, metric: str) -> dict[str, float] | None:
    if metric not in baseline.scores or metric not in record.scores:
        return None
    before = dict(zip(baseline.query_ids, baseline.scores[metric].tolist(), strict=True))
    return {
        query_id: after - before[query_id]
        for query_id, after in zip(record.query_ids, record.scores[metric].tolist(), strict=True)
        if query_id in before and not math.isnan(after - before[query_id])
    }
