"""Issue 28's path end to end: 30% of the example's labels, an LLM judge, the same verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval_gate.datasets.draws import draws_path, read_draws
from retrieval_gate.datasets.llm_layer import read_layer
from retrieval_gate.pipeline.check import check
from retrieval_gate.stats.agreement import cohen_kappa
from tests.helpers.cli import run_cli
from tests.helpers.fake_llm import fake_llm
from tests.helpers.judged_example import assisted_config, judge_example, read_qrels
from tests.helpers.paths import CONFIGS

NAMES = ("example.yaml", "example-regressed.yaml")


def test_judge_calibrate_and_check_give_the_full_labels_verdicts(tmp_path: Path) -> None:
    with fake_llm() as llm:
        example = judge_example(tmp_path, llm.base_url, held_back=0.7)
        llm.judge = example.fake_judge(over_grade=0.3)
        configs = {
            name: assisted_config(
                tmp_path, name, base_url=llm.base_url, model="judge-1", output=None
            )
            for name in NAMES
        }
        for config in configs.values():  # each retriever's pool, one layer beside the qrels
            judged = run_cli("judge", "-c", config, "--quiet")
            assert judged.ret == 0, judged.err
        assert len(llm.requests) > 1000  # every pair was graded over HTTP, none made up
    card = run_cli(
        "calibrate", "-c", configs["example.yaml"], "--qrels", example.held_back, "-f", "json"
    )
    assert card.ret == 0, card.err
    printed = json.loads(card.out)
    # The card's kappa against the held-back labels is the kappa of those pairs.
    held = read_qrels(example.held_back)
    rows = [row for row in read_layer(example.layer) if (row.query, row.doc) in held]
    kappa = cohen_kappa(
        [held[r.query, r.doc] for r in rows], [r.grade for r in rows], weights="quadratic"
    )
    assert printed["calibration"]["pairs"] == len(rows) > 100
    assert abs(printed["calibration"]["kappa"] - kappa) < 1e-9
    for name, config in configs.items():
        full = check(CONFIGS / name, cache=False)
        assisted = check(config, cache=False)
        assert assisted.status == full.status, name
        assert assisted.assisted is not None
        assert assisted.assisted.trusted, assisted.assisted.why_not
        assert assisted.assisted.decided_by == "human+llm"
    assert full.status == "fail"  # the regressed example, last
    # The people's qrels stay as they were: nothing of the judge's is merged into them.
    assert read_qrels(example.kept).keys().isdisjoint(held.keys())


def test_a_set_with_no_labels_yet_is_judged_queued_and_not_gated(tmp_path: Path) -> None:
    (tmp_path / "set").mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):  # no qrels: nobody has labelled anything
        (tmp_path / "set" / name).write_bytes((CONFIGS / "example" / name).read_bytes())
    with fake_llm() as llm:
        config = tmp_path / "gate.yaml"
        config.write_text(
            "version: 1\nname: zero\ndataset: {path: set}\nretriever: {type: bm25}\n"
            "metrics: {ndcg@10: {max_drop: 6pt}, recall@10: {max_drop: 7pt}}\n"
            f"gate: {{labels: human+llm}}\njudge: {{base_url: '{llm.base_url}', model: judge-1}}\n",
            encoding="utf-8",
        )
        example = judge_example(tmp_path / "truth", llm.base_url, held_back=0.0)
        llm.judge = example.fake_judge(over_grade=0.3)
        linted = run_cli("lint", "-c", config)
        assert linted.ret == 0, linted.err
        assert "131 queries (0 labelled), 0 judgments, 218 documents" in linted.out
        judged = run_cli("judge", "-c", config, "--quiet")
        assert judged.ret == 0, judged.err
        assert "no baseline" in judged.err
    layer = read_layer(tmp_path / "set" / "qrels" / "test.llm.jsonl")
    assert len({row.query for row in layer}) == 131
    queue = run_cli("label-queue", "-c", config, "--by", "judge-unsure", "-o", tmp_path / "q.jsonl")
    assert queue.ret == 0, queue.err
    rows = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    sure = {(r.query, r.doc): r.confidence for r in layer}
    shown = [sure[row["query_id"], row["doc_id"]] for row in rows]
    assert len(rows) == len(layer)
    assert shown[0] < 0.9 < shown[-1]  # the pairs the judge was least sure of come first
    # For people: whole queries at random, so the human-judged ones stay a random sample.
    drawn = run_cli("label-queue", "-c", config, "--sample", "5", "-o", tmp_path / "s.jsonl")
    assert drawn.ret == 0, drawn.err
    again = run_cli("label-queue", "-c", config, "--sample", "5", "-o", tmp_path / "t.jsonl")
    assert (tmp_path / "s.jsonl").read_bytes() == (tmp_path / "t.jsonl").read_bytes()
    picked = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len({row["query_id"] for row in picked}) == 5
    assert len(picked) == 50  # every pair of their top 10: no query only half labelled
    assert again.ret == 0
    assert run_cli("baseline", "-c", config).ret == 0
    gated = run_cli("check", "-c", config)
    # The judge alone decides nothing: with no human-judged query the gate cannot fail.
    assert gated.ret == 2
    assert "no query has people's judgments yet" in gated.err
    assert "label-queue --sample N` (uniform) or `label-queue --active N`" in gated.err
    assert "judge-unsure" not in gated.err


def test_an_active_draw_is_merged_with_its_record_and_weighted_by_the_gate(
    tmp_path: Path,
) -> None:
    with fake_llm() as llm:
        example = judge_example(tmp_path, llm.base_url, held_back=0.8)
        llm.judge = example.fake_judge(over_grade=0.3)
        config = assisted_config(
            tmp_path, "example-regressed.yaml", base_url=llm.base_url, model="judge-1", output=None
        )
        judged = run_cli("judge", "-c", config, "--quiet")
        assert judged.ret == 0, judged.err
    queue = tmp_path / "active.jsonl"
    drawn = run_cli("label-queue", "-c", config, "--active", "30", "--quiet", "-o", queue)
    assert drawn.ret == 0, drawn.err
    again = run_cli("label-queue", "-c", config, "--active", "30", "--quiet")
    assert again.out == queue.read_text(encoding="utf-8")  # seeded by gate.seed
    rows = [json.loads(line) for line in queue.read_text(encoding="utf-8").splitlines()]
    assert {row["draw"] for row in rows} == {"active"}
    assert len({row["round"] for row in rows}) == 1
    assert all(0 < row["p"] <= 1 for row in rows)
    for row in rows:  # people grade every pair of the drawn queries
        row["grade"] = example.grades.get((row["query_id"], row["doc_id"]), 0)
    queue.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    merged = run_cli("qrels", "merge", example.kept, queue)
    assert merged.ret == 0, merged.err
    assert "recorded the draw of" in merged.out
    record = read_draws(draws_path(example.kept))
    assert record is not None
    assert {d.query_id for d in record.draws} == {row["query_id"] for row in rows}
    result = check(config, cache=False)
    assert result.assisted is not None
    assert result.status == "fail"  # as the full labels say of the regressed example
    said = "\n".join(result.warnings)
    assert "drawn by the judge's doubt (`label-queue --active`)" in said
    assert "no line in" in said  # the queries people had judged before, unrecorded
    assert result.assisted.human_queries == len({q for q, _ in read_qrels(example.kept)})
    # A pair of the pool the judge has not graded: the bounds hold for the unweighted
    # estimate only, so under active draws the checks it could move are inconclusive.
    pair = [rows[0]["query_id"], rows[0]["doc_id"]]
    lines = example.layer.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if [json.loads(line)[key] for key in ("query", "doc")] != pair]
    assert len(kept) == len(lines) - 1
    example.layer.write_text("".join(kept), encoding="utf-8")
    holed = check(config, cache=False, judge=False)
    assert holed.assisted is not None
    assert holed.assisted.uncovered == (pair[0],)
    overall = [c for c in holed.assisted.assisted if c.slice == "all" and c.gated]
    assert overall
    assert {c.verdict for c in overall} == {"inconclusive"}
