"""The configured judge's labels read from its layer, for the gate's human+llm checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.wording import one_line
from retrieval_gate.datasets import Dataset
from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.datasets.layer_anchors import of_chunking
from retrieval_gate.datasets.llm_layer import judges_of, layer_path, layer_qrels, read_layer
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.rechunk import JudgedText
from retrieval_gate.gate.modes.assisted import JudgeLabels
from retrieval_gate.pipeline.judge_probes import read_verdict


def gate_judge(config: GateConfig, dataset: Dataset) -> JudgeLabels | None:
    """The judge's labels of `dataset`'s queries when gate.labels uses them (human+llm),
    else None; errors as `judge_labels`."""
    if not config.gate.uses_llm_labels:
        return None
    anchors = dataset.anchors.anchors if dataset.anchors is not None else None
    return judge_labels(config, [q.id for q in dataset.queries], anchors)


def judge_labels(
    config: GateConfig,
    query_ids: Sequence[str],
    anchors: Mapping[str, Anchor] | None = None,
) -> JudgeLabels:
    """The configured judge's grades of `query_ids` (sorted) from its layer; an InputError
    when the layer holds none of its model, or several prompts of it (keep one). In a
    chunked corpus (`anchors`: each chunk's text) `qrels` holds the grades of the text each
    chunk holds now (`of_chunking`), and `texts` every grade with the text it read."""
    assert config.judge is not None  # the schema requires a judge with human+llm
    path = layer_path(config)
    rows = read_layer(path)
    model = config.judge.model
    mine = [judge for judge in judges_of(rows) if judge[0] == model]
    if not mine:
        held = ", ".join(one_line(m) for m in sorted({j[0] for j in judges_of(rows)})) or "none"
        raise InputError(
            f"the layer holds no grades of model {one_line(model)} (it holds: {held}); "
            "run `retrieval-gate judge` with this config",
            source=str(path),
        )
    if len(mine) > 1:
        prompts = ", ".join(sha[:12] for _, sha in mine)
        raise InputError(
            f"the layer holds grades of model {one_line(model)} under {len(mine)} prompts "
            f"({prompts}); keep the rows of one prompt (remove the others' lines) so the gate "
            "knows which judge it trusts",
            source=str(path),
        )
    judge = mine[0]
    everything = [row for row in rows if row.judge == judge]
    wanted = set(query_ids)
    texts = tuple(
        JudgedText(row.query, row.doc, float(row.grade), row.anchor, row.identity)
        for row in everything
        if row.query in wanted
    )
    rows = tuple(of_chunking(everything, anchors))
    # Which whole judge graded each pair: the gate refuses to decide on a mix (assisted.py).
    graded_by = {(row.query, row.doc): row.identity for row in rows}
    return JudgeLabels(
        model=judge[0],
        prompt_sha256=judge[1],
        qrels=layer_qrels(rows, query_ids, judge=judge, source=str(path)),
        graded_by=graded_by,
        probed=read_verdict(path, judge[0], judge[1]),
        texts=texts,
    )
