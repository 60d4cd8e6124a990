"""`judge`'s plan (what is pooled and from where) and its stops, on the bundled example."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from retrieval_gate.config.loader import load
from retrieval_gate.core.qrels import is_judged
from retrieval_gate.datasets.llm_layer import read_layer
from retrieval_gate.pipeline.judge import plan_judging
from tests.helpers.fake_llm import fake_llm
from tests.helpers.judged_example import judge_example
from tests.helpers.paths import REPO
from tests.helpers.waiting import GUARD, wait_for


def _trec(path: Path, rows: dict[str, list[str]]) -> Path:
    lines = [
        f"{q} Q0 {doc} {rank} {10 - rank} run\n"
        for q, docs in rows.items()
        for rank, doc in enumerate(docs, 1)
    ]
    path.write_text("".join(lines))
    return path


def test_saved_runs_are_pooled_and_documents_without_text_are_counted(tmp_path: Path) -> None:
    example = judge_example(tmp_path, "http://127.0.0.1:9/v1", held_back=0.7)
    current = _trec(tmp_path / "current.trec", {"q001": ["kb-1101", "kb-1102", "not-a-doc"]})
    reference = _trec(tmp_path / "reference.trec", {"q001": ["kb-1102", "kb-1201"]})
    plan = plan_judging(
        load(example.config), run_path=current, reference_path=reference, cache=False
    )
    assert plan.sources == (f"the current run: {current}", f"the reference: {reference}")
    assert plan.pool.pooled == 4
    assert plan.no_text == 1
    assert any("no text: 1 pair skipped" in warning for warning in plan.warnings)
    pooled = {task.pair.doc for task in plan.tasks if task.pair.query_id == "q001"}
    beyond = pooled - {"kb-1101", "kb-1102", "kb-1201"}
    # Beyond the pool, only people's own pairs of a calibration query, for the card.
    assert "q001" in plan.pool.calibration or not beyond
    assert all(is_judged(plan.human["q001"], doc) for doc in beyond)
    assert plan.tasks[0].passage.startswith("Create a Quillhour account\n\n")


def test_a_depth_below_k_pools_each_run_s_top_depth_only(tmp_path: Path) -> None:
    """judge.depth 2 of k 10: the third document of each run is not pooled (the current's
    has no text: not counted as such either); the committed baseline's stored top 10 is
    short of the depth only past 10."""
    example = judge_example(tmp_path, "http://127.0.0.1:9/v1", held_back=0.7, depth=2)
    current = _trec(tmp_path / "current.trec", {"q001": ["kb-1101", "kb-1102", "not-a-doc"]})
    reference = _trec(tmp_path / "reference.trec", {"q001": ["kb-1102", "kb-1201", "kb-1202"]})
    config = load(example.config)
    assert config.judge is not None
    assert (config.judge.depth, config.k) == (2, 10)
    plan = plan_judging(config, run_path=current, reference_path=reference, cache=False)
    assert plan.pool.pooled == 3  # kb-1101, kb-1102, kb-1201
    assert plan.no_text == 0
    pooled = {task.pair.doc for task in plan.tasks if task.pair.query_id == "q001"}
    assert "kb-1202" not in pooled or "q001" in plan.pool.calibration
    # Against the committed baseline (its top 10 stored): a shortfall only past its k.
    stored = config.resolve(config.baseline)
    for depth, short in ((2, False), (10, False), (12, True)):
        deeper = config.model_copy(
            update={"judge": config.judge.model_copy(update={"depth": depth})}
        )
        warned = plan_judging(deeper, run_path=current, cache=False).warnings
        shortfall = [w for w in warned if "holds each query's top" in w]
        assert shortfall == (
            [f"{stored} holds each query's top 10, not the top 12: the reference adds that much "
             "to the pool"] if short else []
        )  # fmt: skip


def test_the_calibration_sample_is_drawn_from_judged_queries_with_the_seed(
    tmp_path: Path,
) -> None:
    example = judge_example(tmp_path, "http://127.0.0.1:9/v1", calibration_queries=5, seed=3)
    config = load(example.config)
    plan = plan_judging(config, cache=False)
    assert len(plan.pool.calibration) == 5
    assert set(plan.pool.calibration) <= set(plan.human)
    assert plan_judging(config, cache=False).pool == plan.pool
    for task in plan.tasks:
        pair = task.pair
        judged = is_judged(plan.human.get(pair.query_id, {}), pair.doc)
        # Outside the sample only unjudged pairs are graded; inside it, people's grade rides along.
        assert not judged or pair.query_id in plan.pool.calibration
        assert (pair.human is not None) == judged


@contextmanager
def ctrl_c_reaches_children() -> Iterator[None]:
    """Children started in the block get SIGINT's default action, as from a terminal. A
    background job of a non-interactive shell starts with SIGINT ignored, an ignored signal
    stays ignored across exec, and Python then never raises KeyboardInterrupt; a handled
    signal is reset to the default at exec, so it is handled here while they start."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_keeps_what_was_paid_for(tmp_path: Path) -> None:
    # The model holds every request after the 20th: Ctrl-C lands mid-run, however slow the
    # machine, and what was held is answered once it is sent.
    with fake_llm(hold_after=20) as llm:
        example = judge_example(tmp_path, llm.base_url, concurrency=2)
        llm.judge = example.fake_judge()
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = ["judge", "-c", str(example.config), "--quiet"]
        with ctrl_c_reaches_children():
            process = subprocess.Popen(
                [sys.executable, "-m", "retrieval_gate", *argv],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        wait_for(lambda: llm.held.is_set() or process.poll() is not None)
        exited = process.poll() is not None
        assert llm.held.is_set(), process.communicate()[1] if exited else "no 20th request came"
        process.send_signal(signal.SIGINT)
        llm.release.set()
        _, err = process.communicate(timeout=GUARD)
        sent = len(llm.requests)
    assert process.returncode == 130, err
    assert "interrupted" in err
    kept = read_layer(example.layer)
    assert 20 - 2 <= len(kept) <= sent < 1000


def test_the_text_a_retriever_returns_is_graded_when_the_corpus_lacks_the_document(
    tmp_path: Path,
) -> None:
    import yaml

    with fake_llm() as llm:
        example = judge_example(tmp_path, llm.base_url, held_back=0.0, calibration_queries=1)
        (tmp_path / "web_search.py").write_text(
            "def search(query, k):\n"
            "    return [{'id': 'web-1', 'score': 2.0, 'text': 'Refunds: ask within 30 days.'},\n"
            "            {'id': 'web-2', 'score': 1.0}]\n"
        )
        config = yaml.safe_load(example.config.read_text())
        config["retriever"] = {"type": "python", "target": "web_search:search"}
        example.config.write_text(yaml.safe_dump(config))
        (tmp_path / ".retrieval-gate" / "example" / "baseline.json").unlink()
        plan = plan_judging(load(example.config), cache=False)
        assert plan.no_text == len(example.queries)  # web-2: no text anywhere
        pooled = [task for task in plan.tasks if task.pair.human is None]
        assert {task.pair.doc for task in pooled} == {"web-1"}
        assert {task.passage for task in pooled} == {"Refunds: ask within 30 days."}
        # People's pairs of the calibration query are graded too, from the corpus.
        assert {task.pair.query_id for task in plan.tasks if task.pair.human is not None} <= set(
            plan.pool.calibration
        )
        assert any("no baseline" in warning for warning in plan.warnings)


def test_in_a_chunked_corpus_a_pair_is_held_only_for_the_text_its_chunk_holds(
    tmp_path: Path,
) -> None:
    """The layer's rows are anchored to the 300-character chunks: the re-chunk's chunks of
    the same text are held, under the same id or renamed (the grade follows its text); one
    whose row graded other text is to grade, and each row written is anchored to the text
    sent."""
    import dataclasses

    from retrieval_gate.datasets.layer_anchors import stamped
    from retrieval_gate.datasets.llm_layer import write_layer
    from tests.helpers.judged_chunks import judged_chunks, renamed

    found = judged_chunks(tmp_path / "p", baseline=False)
    plan = plan_judging(load(found.pr), cache=False)
    layer = {(row.query, renamed(row.doc)) for row in read_layer(found.layer)}
    held = {(t.pair.query_id, t.pair.doc) for t in plan.held}
    todo = {(t.pair.query_id, t.pair.doc) for t in plan.tasks}
    assert not todo & layer  # only people's pairs of the calibration queries, for the card
    assert held == layer  # the run ranks what MAIN's did, half of it renamed
    assert any("~" in doc for _, doc in held)
    # A kept id whose row graded other text: to grade again, the old row kept.
    query, doc = next(pair for pair in sorted(held) if "~" not in pair[1])
    rows = read_layer(found.layer)
    row = next(r for r in rows if (r.query, r.doc) == (query, doc))
    assert row.anchor is not None
    other = dataclasses.replace(row.anchor, hash="f" * 16)
    keep = [r for r in rows if (r.query, r.doc) != (query, doc)]
    found.layer.unlink()
    write_layer(found.layer, [*keep, dataclasses.replace(row, anchor=other)])
    again = plan_judging(load(found.pr), cache=False)
    assert (query, doc) in {(t.pair.query_id, t.pair.doc) for t in again.tasks}
    (fresh,) = stamped([dataclasses.replace(row, anchor=None)], again.anchors)
    assert fresh.anchor == row.anchor  # the text the chunk holds now
