"""Label-hole bounds against a brute force: every grade assignment re-scored by `evaluate`."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
from retrieval_gate.gate.explain.diagnostics import GradedTopK, graded_top_ks
from retrieval_gate.gate.explain.label_hole_extremes import OpenDocs
from retrieval_gate.gate.explain.label_holes import (
    _ENUMERATED_CELLS,
    EXHAUSTIVE,
    _extremes,
    _judged_grades,
    _queries,
    hole_extremes,
    label_holes,
)
from retrieval_gate.metrics import evaluate, parse_metric
from retrieval_gate.readers import qrels_from_dict, run_from_dict
from tests.helpers.builders import copy_example
from tests.helpers.cli import run_cli
from tests.helpers.generated_project import QUERIES, make_project, write_config
from tests.helpers.top_k_cases import METRICS, Case, K, decider, random_case, scored


def brute_force(case: Case, metric: str) -> tuple[FloatArray, ...]:
    """Per query: lowest and highest delta and current value, every grade 0..top of every
    unjudged doc of both top k (one grade per doc) scored by the metric engine (each
    assignment a query of its own, so one `evaluate` scores them all)."""
    judgments, query_ids, old, new = case
    top = max(max(g for j in judgments.values() for g in j.values()), 1.0)
    grades = np.arange(0.0, np.floor(top) + 1.0).tolist()
    found: list[list[float]] = [[], [], [], []]
    for q in query_ids:
        open_ = sorted({d for d in old[q] + new[q] if judgments[q].get(d, -1.0) < 0})
        every = list(itertools.product(grades, repeat=len(open_)))
        labels = {
            f"{q}#{i}": {**judgments[q], **dict(zip(open_, assigned, strict=True))}
            for i, assigned in enumerate(every)
        }
        values = [
            evaluate(run_from_dict(dict.fromkeys(labels, side[q])), labels, [metric])
            for side in (old, new)
        ]
        assert values[0].query_ids == values[1].query_ids
        before, after = values[0].values[metric], values[1].values[metric]
        delta = after - before
        for i, value in enumerate((delta.min(), delta.max(), after.min(), after.max())):
            found[i].append(float(value))
    return tuple(np.asarray(values) for values in found)


def bounds_of(case: Case, metric: str) -> tuple[tuple[FloatArray, ...], np.ndarray]:
    judgments, query_ids, old, new = case
    qrels = qrels_from_dict(judgments)
    before, after = graded_top_ks(old, new, query_ids, qrels)
    top = max(float(qrels.grade.max()), 1.0)
    judged = _judged_grades(qrels, query_ids)
    docs = _queries(before, after, judged, len(query_ids))
    found = _extremes(parse_metric(metric), docs, top)
    return (*found.delta, *found.current), found.exact


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("seed", range(6))
def test_each_query_s_extremes_equal_the_brute_force(metric: str, seed: int) -> None:
    case = random_case(seed)
    expected = brute_force(case, metric)
    found, exact = bounds_of(case, metric)
    assert exact.all()
    names = ("min delta", "max delta", "min cur", "max cur")
    for name, got, want in zip(names, found, expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f"{metric} {name}")


def test_blocks_of_queries_joined_equal_the_brute_force() -> None:
    """The extremes of blocks of 4 queries (`graded_blocks`), joined, are each query's own:
    the lowest and highest delta and current value, each from its own block (a measure of
    each shape: gain_sum, first_relevant, enumerated)."""
    from retrieval_gate.gate.explain.diagnostics import graded_blocks
    from retrieval_gate.gate.explain.label_holes import HolePlan, block_extremes, joined_extremes

    case = random_case(1, queries=9)
    metrics = ["ndcg(gain=linear)@5", "rr@5", "ap@5"]
    judgments, query_ids, old, new = case
    qrels = qrels_from_dict(judgments)
    specs = {metric: parse_metric(metric) for metric in metrics}
    plan = HolePlan(specs=specs, reasons={}, top=max(float(qrels.grade.max()), 1.0))
    blocks = [
        block_extremes(plan, before, after, judged)
        for before, after, judged in graded_blocks(old, new, query_ids, qrels, 4)
    ]
    assert len(blocks) == 3
    joined = joined_extremes(plan, blocks)
    for metric in metrics:
        found = joined.extremes[metric]
        got = (*found.delta, *found.current)
        for name, value, want in zip(
            ("delta", "delta", "cur", "cur"), got, brute_force(case, metric), strict=True
        ):
            np.testing.assert_allclose(value, want, atol=1e-12, err_msg=f"{metric} {name}")
        assert found.exact.all()


def test_queries_whose_cells_pass_a_block_are_scored_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With CELLS below one query's multisets x documents, a block holds one query: each
    query of a group (as many unjudged docs) is still scored, to the brute force's values."""
    from retrieval_gate.gate.explain import label_hole_extremes

    monkeypatch.setattr(label_hole_extremes, "CELLS", 1)
    case = random_case(0, queries=12)
    for metric in ("ndcg@5", "recall@5"):
        found, exact = bounds_of(case, metric)
        assert exact.all()
        np.testing.assert_allclose(found, brute_force(case, metric), rtol=0, atol=1e-12)


def test_shared_documents_and_the_ideal_ranking_matter() -> None:
    """The naive extremes (current's unjudged at 0, the baseline's at the top grade) are not
    the true ones: a doc in both lists has one grade, and a relevant doc raises the ideal."""
    judgments = {"q": {"a": 1.0, "b": 3.0}}
    case: Case = (judgments, ["q"], {"q": ["u", "a"]}, {"q": ["a", "u"]})
    expected = brute_force(case, "ndcg@5")
    found, _ = bounds_of(case, "ndcg@5")
    np.testing.assert_allclose(found, expected, atol=1e-12)
    assert found[0][0] > -1.0  # u is shared: no free swing both ways
    assert found[1][0] < 1.0


def test_past_the_enumeration_limit_the_bound_is_outer_and_says_so() -> None:
    rng = np.random.default_rng(3)
    # 7 unjudged documents between the two top 5s: far past the lowered limits below, and
    # 4**7 assignments for the brute force (at 14 documents, 9 of them: 16 times as many).
    docs = [f"u{i}" for i in range(9)]
    case: Case = (
        {"q": {"j": 1.0, "top": 3.0}},
        ["q"],
        {"q": list(rng.permutation(docs))[:5]},
        {"q": list(rng.permutation(docs))[:5]},
    )
    from retrieval_gate.gate.explain import label_holes as module

    low_limit = pytest.MonkeyPatch()
    low_limit.setattr(module, "MULTISETS", 10)
    low_limit.setattr(module, "EXHAUSTIVE", 10)
    try:
        for metric in ("ndcg@5", "ap@5"):
            found, exact = bounds_of(case, metric)
            expected = brute_force(case, metric)
            assert not exact.any()
            for low in (0, 2):  # each range holds the true one
                assert found[low][0] <= expected[low][0] + 1e-12
                assert found[low + 1][0] >= expected[low + 1][0] - 1e-12
        # Past EXHAUSTIVE, ap's outer bound is its whole range: delta [-1, 1], value [0, 1].
        found, _ = bounds_of(case, "ap@5")
        assert [float(values[0]) for values in found] == [-1.0, 1.0, 0.0, 1.0]
    finally:
        low_limit.undo()


def test_the_outer_bound_holds_a_loss_no_grading_recovers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline's relevant j is lost and the best case gains back less: the outer bound's
    highest delta, a negative numerator, is over the largest denominator (over the smallest
    it would sit below the true highest)."""
    from retrieval_gate.gate.explain import label_holes as module

    monkeypatch.setattr(module, "MULTISETS", 1)
    judged = {"j": 1.0, **{f"n{i}": 0.0 for i in range(4)}}
    case: Case = ({"q": judged}, ["q"], {"q": ["j", "u2"]}, {"q": ["n0", "n1", "n2", "n3", "u1"]})
    found, exact = bounds_of(case, "ndcg@5")
    expected = brute_force(case, "ndcg@5")
    assert not exact.any()
    for low in (0, 2):
        assert found[low][0] <= expected[low][0] + 1e-12
        assert found[low + 1][0] >= expected[low + 1][0] - 1e-12


def test_every_assignment_at_a_deep_cutoff_is_enumerated_one_query_at_a_time() -> None:
    """12 unjudged documents under a binary measure: 2^12 = EXHAUSTIVE assignments, each
    scored at 300 ranks, more cells than one call may take: still enumerated, one query per
    call, and exact."""
    unjudged = [f"u{i}" for i in range(12)]
    case: Case = (
        {"q": {"r": 1.0, "n": 0.0}},
        ["q"],
        {"q": ["n", *unjudged[:6], "r"]},
        {"q": [*unjudged, "r"]},
    )
    assert EXHAUSTIVE == 2**12
    assert EXHAUSTIVE * 300 > _ENUMERATED_CELLS
    found, exact = bounds_of(case, "ap@300")
    assert exact.all()
    np.testing.assert_allclose(found, brute_force(case, "ap@300"), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("top", "exact"), [(49_999, True), (50_000, False)])
def test_up_to_multisets_gradings_of_a_query_are_enumerated(top: int, exact: bool) -> None:
    """One unjudged document u and grades 0..top under a linear gain: top + 1 gradings, all
    tried up to 50,000 of them (the limit docs/labels.md states); one more and the bound is
    the outer one, which holds the exact range. With L = log2(3), baseline [r] and current
    [u, r], the nDCG delta is (g + top/L - top) / (top + g/L) for u graded g: lowest at g = 0
    (1/L - 1), highest at g = top (1/(L + 1)); the current value from 1/L to 1."""
    case: Case = ({"q": {"r": float(top)}}, ["q"], {"q": ["r"]}, {"q": ["u", "r"]})
    found, exact_of = bounds_of(case, "ndcg(gain=linear)@5")
    assert exact_of.tolist() == [exact]
    third = 1.0 / np.log2(3.0)
    want = [third - 1.0, third / (1.0 + third), third, 1.0]
    got = [float(values[0]) for values in found]
    if exact:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    else:
        assert (got[0] <= want[0], got[1] >= want[1]) == (True, True)
        assert (got[2] <= want[2], got[3] >= want[3]) == (True, True)


@pytest.mark.parametrize("metric", ["ndcg@5", "ap@5"])
def test_a_bound_is_exact_only_when_every_query_s_extremes_are(
    metric: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the enumeration limits, q0's 3 unjudged documents are enumerated (20 multisets of
    4 gains for ndcg, 2^3 assignments for ap) and q1's 4 are not: its extremes are an outer
    bound. A check over both is not exact; one over q0 and q2 (nothing unjudged) is."""
    from retrieval_gate.gate.explain import label_holes as module

    monkeypatch.setattr(module, "MULTISETS", 20)
    monkeypatch.setattr(module, "EXHAUSTIVE", 8)
    judgments = {"q0": {"r": 3.0}, "q1": {"r": 3.0}, "q2": {"r": 3.0, "n": 0.0}}
    old = {"q0": ["r", "u1", "u2", "u3"], "q1": ["r", "v1", "v2", "v3", "v4"], "q2": ["r", "n"]}
    new = {"q0": ["u1", "u2", "u3", "r"], "q1": ["v1", "v2", "v3", "v4", "r"], "q2": ["n", "r"]}
    case: Case = (judgments, ["q0", "q1", "q2"], old, new)
    _, exact = bounds_of(case, metric)
    assert exact.tolist() == [True, False, True]
    slices = {"all": np.arange(3), "enumerated": np.asarray([0, 2])}
    settings = ComparisonSettings(require_significance=False, min_size=1)
    decide = decider(settings, {metric: Threshold(max_drop=0.0)}, slices)
    scores = scored(case, [metric], judgments)
    checks = decide(*scores)
    assert [(c.slice, c.verdict) for c in checks] == [
        ("all", "regressed"),
        ("enumerated", "regressed"),
    ]
    qrels = qrels_from_dict(judgments)
    before, after = graded_top_ks(old, new, case[1], qrels)
    found = hole_extremes(checks, before, after, qrels, k=K)
    holes = {h.slice: h for h in label_holes(checks, found, slices, scores, decide)}
    assert (holes["all"].unjudged, holes["enumerated"].unjudged) == (7, 3)
    assert not holes["all"].exact
    assert holes["enumerated"].exact


# --- the verdicts --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_a_robust_verdict_holds_for_every_joint_assignment(seed: int) -> None:
    """Robust checks keep their verdict under every grading of every unjudged doc (enumerated
    across all queries jointly); a label-dependent one changes under at least one."""
    rng = np.random.default_rng(100 + seed)
    case = random_case(seed + 50, queries=4, docs=6)
    judgments, query_ids, old, new = case
    # At most 5 unjudged docs in all, so the joint enumeration stays small.
    left = 5
    for q in query_ids:
        for d in sorted({*old[q], *new[q]}):
            if judgments[q].get(d, -1.0) >= 0:
                continue
            if left:
                left -= 1
            else:
                judgments[q][d] = float(rng.integers(0, 2))
    metrics = ["ndcg@5", "recall@5", "rr@5", "precision@5"]
    thresholds = {
        m: Threshold(
            max_drop=float(rng.choice([0.0, 0.05, 0.2])), floor=[None, 0.3][int(rng.integers(2))]
        )
        for m in metrics
    }
    slices = {"all": np.arange(len(query_ids)), "half": np.arange(2)}
    settings = ComparisonSettings(require_significance=False, min_size=1, on_inconclusive="fail")
    decide = decider(settings, thresholds, slices)
    qrels = qrels_from_dict(judgments)
    before, after = graded_top_ks(old, new, query_ids, qrels)
    actual = decide(*scored(case, metrics, judgments))
    found = hole_extremes(actual, before, after, qrels, k=K)
    holes = label_holes(actual, found, slices, scored(case, metrics, judgments), decide)
    top = max(max(g for j in judgments.values() for g in j.values()), 1.0)
    grades = np.arange(0.0, np.floor(top) + 1.0).tolist()
    open_ = [
        (q, d)
        for q in query_ids
        for d in sorted({*old[q], *new[q]})
        if judgments[q].get(d, -1.0) < 0
    ]
    assert len(grades) ** len(open_) <= 4096
    every = list(itertools.product(grades, repeat=len(open_)))
    labels = {}
    for i, assigned in enumerate(every):
        for q, judged in judgments.items():
            labels[f"{i:05d}|{q}"] = dict(judged)
        for (q, d), grade in zip(open_, assigned, strict=True):
            labels[f"{i:05d}|{q}"][d] = grade
    sides = [
        evaluate(run_from_dict({name: top[name.split("|")[1]] for name in labels}), labels, metrics)
        for top in (old, new)
    ]
    assert sides[0].query_ids == tuple(sorted(labels))
    seen: dict[tuple[str, str], set[str]] = {}
    for i in range(len(every)):
        rows = slice(i * len(query_ids), (i + 1) * len(query_ids))
        at = [{m: side.values[m][rows] for m in metrics} for side in sides]
        for c in decide(at[0], at[1]):
            seen.setdefault((c.metric, c.slice), set()).add(str(c.verdict))
    for hole in holes:
        verdicts = seen[hole.metric, hole.slice]
        assert hole.exact
        if hole.robust:
            assert verdicts == {hole.verdict}, hole
        elif thresholds[hole.metric].floor is None:
            # Without a floor only the delta decides, and each query's lowest and highest
            # delta are reached together across queries: both extremes happen.
            assert {hole.worst, hole.best} <= verdicts, hole
            assert len(verdicts) > 1, hole
        assert hole.unjudged == sum(
            1 for q, _ in open_ if q in {query_ids[i] for i in slices[hole.slice]}
        )


# --- end to end ------------------------------------------------------------------------------


def test_example_regressed_checks_depend_until_their_documents_are_labelled(
    tmp_path: Path,
) -> None:
    configs = copy_example(tmp_path / "configs")
    config = configs / "example-regressed.yaml"
    result = configs / "result.json"
    code, out, err = run_cli("check", "-c", config, "--quiet", "--json", result)
    assert code == 1, err
    document = json.loads(result.read_text(encoding="utf-8"))
    holes = {(h["metric"], h["slice"]): h for h in document["label_holes"]}
    bounded = [
        (c["metric"], c["slice"])
        for c in document["comparisons"]
        if c["failed"] or (c["gated"] and c["verdict"] == "inconclusive")
    ]
    assert sorted(holes) == sorted(bounded)
    assert all(h["exact"] and not h["reason"] for h in holes.values())
    # 11 unjudged documents a query: graded at the top, they could make up for every drop.
    overall = holes["ndcg@10", "all"]
    assert (overall["worst"], overall["best"], overall["robust"]) == (
        "regressed",
        "improved",
        False,
    )
    first = holes["recall@10", "all"]  # the console's first failing check: the advice in full
    lines = out.splitlines()
    at = lines.index("  x recall@10 fell 21.5 pt (p < 0.001)")
    assert lines[at + 1] == (
        f"    depends on {first['unjudged']} unjudged documents (worst case regressed at "
        f"{first['worst_delta'] * 100:+.2f} pt, best case improved at "
        f"{first['best_delta'] * 100:+.2f} pt): label them (`retrieval-gate label-queue`) or "
        "judge them (`retrieval-gate judge`)"
    )
    at = lines.index("  x ndcg@10 fell 13.5 pt (p < 0.001)")
    assert lines[at + 1] == f"    depends on {overall['unjudged']} unjudged documents, as above"
    # The annotators grade all but the first five pairs of the queue (as unjudged documents
    # count now: non-relevant); five cannot move 131 queries' nDCG 13.5 points.
    queue = configs / "queue.jsonl"
    assert run_cli("label-queue", "-c", config, "--run", result, "-o", queue)[0] == 0
    rows = [json.loads(line) for line in queue.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == overall["unjudged"]
    filled = [{**row, "grade": None if i < 5 else 0} for i, row in enumerate(rows)]
    queue.write_text("".join(json.dumps(row) + "\n" for row in filled), encoding="utf-8")
    qrels = configs / "example" / "qrels" / "test.tsv"
    assert run_cli("qrels", "merge", qrels, queue)[0] == 0
    code, out, err = run_cli("check", "-c", config, "--quiet", "--json", result)
    assert code == 1, err
    document = json.loads(result.read_text(encoding="utf-8"))
    holes = {(h["metric"], h["slice"]): h for h in document["label_holes"]}
    overall = holes["ndcg@10", "all"]
    assert overall["unjudged"] == 5
    assert (overall["worst"], overall["best"], overall["robust"]) == ("regressed",) * 2 + (True,)
    at = out.splitlines().index("  x ndcg@10 fell 13.5 pt (p < 0.001)")
    assert out.splitlines()[at + 1] == "    holds whatever the 5 unjudged documents turn out to be"


HOSTILE_RETRIEVER = """\
def search(query, k, metadata):
    # Documents nobody judged, named to break every sink they might reach.
    i = int(metadata["n"])
    names = ["::error::pwned", "<script>alert(1)</script>", "\\x1b[31mred", "a\\nb", "|x|"]
    if metadata["intent"] == "billing":
        return [f"{names[j % len(names)]}{i}-{j}" for j in range(k)]
    return [f"d{i}"] + [f"d{(i + j) % @COUNT@}" for j in range(1, k)]
"""


def test_hostile_unjudged_doc_ids_reach_no_report_sink(tmp_path: Path) -> None:
    from retrieval_gate.report import annotations_of, read_result, summary_of

    project = make_project(tmp_path)
    (project / "hostile_search.py").write_text(
        HOSTILE_RETRIEVER.replace("@COUNT@", str(QUERIES)), encoding="utf-8"
    )
    config = write_config(project, "hostile_search", name="hostile.yaml")
    paths = {suffix: project / f"report.{suffix}" for suffix in ("json", "md", "html", "xml")}
    code, out, err = run_cli(
        "check", "-c", config, "--json", paths["json"], "--markdown", paths["md"],
        "--html", paths["html"], "--junit", paths["xml"], "--quiet",
    )  # fmt: skip
    assert code == 1, err
    record = read_result(paths["json"])
    assert any(not h.robust for h in record.label_holes)
    sinks = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
    sinks["stdout"] = out
    sinks["summary"] = summary_of(record)
    sinks["annotations"] = "\n".join(message for _, message in annotations_of(record))
    for name, text in sinks.items():
        if name != "json":  # the result keeps the run's top k as it was
            assert "pwned" not in text, name
            assert "<script>" not in text, name
            assert "\x1b" not in text, name
        assert not any(line.lstrip().startswith("::") for line in text.splitlines()), name
    assert "depends on" in sinks["md"]
    assert "depends on" in sinks["html"]


def test_unbounded_metrics_say_why_and_the_t_test_claims_nothing() -> None:
    """A measure without a bound, or one that looks past the stored top k, says so; under the
    t-test (not monotone in each delta) no check with unjudged documents is called robust."""
    query_ids = [f"q{i}" for i in range(40)]
    judgments = {q: {"r1": 3.0, "r2": 2.0, "r3": 1.0, "n": 0.0} for q in query_ids}
    old = {q: ["r1", "r2", "r3", "n"] for q in query_ids}
    new = {q: ["n", "r3", "u", "r2", "r1"] if i % 2 else ["n", "r3", "r2", "r1"]
           for i, q in enumerate(query_ids)}  # fmt: skip
    case: Case = (judgments, query_ids, old, new)
    metrics = ["ndcg@5", "err(g_max=3)@5", "ap"]
    thresholds = {m: Threshold(max_drop=0.02) for m in metrics}
    slices = {"all": np.arange(len(query_ids))}
    qrels = qrels_from_dict(judgments)
    before, after = graded_top_ks(old, new, query_ids, qrels)
    scores = scored(case, metrics, judgments)
    found = {}
    for test in ("randomization", "t"):
        settings = ComparisonSettings(test=test)  # type: ignore[arg-type]
        decide = decider(settings, thresholds, slices)
        checks = decide(*scores)
        proven = test == "randomization"  # as decide passes it
        bounds = hole_extremes(checks, before, after, qrels, k=K)
        holes = label_holes(checks, bounds, slices, scores, decide, proven=proven)
        found[test] = {h.metric: h for h in holes}
    plain = found["randomization"]
    assert plain["err(g_max=3)@5"].reason == "no label-hole bound for err"
    assert plain["err(g_max=3)@5"].worst is None
    assert plain["ap"].reason == "looks past the stored top 5: not bounded"
    ndcg = plain["ndcg@5"]
    assert ndcg.unjudged == 20  # u on every other query
    assert ndcg.robust  # the three judged documents all fell: no grade of u undoes it
    assert ndcg.exact
    t_test = found["t"]["ndcg@5"]
    assert t_test.worst == t_test.best == t_test.verdict == "regressed"
    assert not t_test.robust
    assert not t_test.exact


@pytest.mark.parametrize("metric", ["ap@5", "ap(rel=2)@3"])
@pytest.mark.parametrize("seed", range(6))
def test_ap_under_each_assignment_is_the_engine_s_to_the_bit(metric: str, seed: int) -> None:
    from retrieval_gate.gate.explain.label_holes import _ap_values, _grades

    judgments, query_ids, old, new = random_case(seed)
    qrels = qrels_from_dict(judgments)
    before, after = graded_top_ks(old, new, query_ids, qrels)
    docs = _queries(before, after, _judged_grades(qrels, query_ids), len(query_ids))
    spec = parse_metric(metric)
    top = max(float(qrels.grade.max()), 1.0)
    grades = _grades(spec, top).tolist()
    for q, query_id in enumerate(query_ids):
        open_ = sorted(
            {d for d in old[query_id] + new[query_id] if judgments[query_id].get(d, -1.0) < 0}
        )
        every = list(itertools.product(grades, repeat=len(open_)))
        assigned = np.asarray(every, dtype=np.float64).reshape(len(every), len(open_))
        for side, lists in ((0, old), (1, new)):
            labels = {
                f"{query_id}#{i}": {**judgments[query_id], **dict(zip(open_, row, strict=True))}
                for i, row in enumerate(every)
            }
            run = run_from_dict(dict.fromkeys(labels, lists[query_id]))
            engine = evaluate(run, labels, [metric])
            # The engine's query order is its sorted ids; the slots number docs by code, the
            # test by name: map both through the assigned grades of each doc.
            by_slot = _by_slot(docs, q, open_, assigned, before, after)
            found = _ap_values(spec, docs, np.asarray([q]), side, by_slot)
            expected = [
                engine.values[metric][engine.query_ids.index(f"{query_id}#{i}")]
                for i in range(len(every))
            ]
            assert found[0].tolist() == expected


def _by_slot(
    docs: OpenDocs,
    q: int,
    open_: list[str],
    assigned: np.ndarray,
    before: GradedTopK,
    after: GradedTopK,
) -> np.ndarray:
    """`assigned`'s columns (one per doc of `open_`, by name) in the query's slot order."""
    columns = np.empty_like(assigned)
    for rows, top_k in ((docs.before, before), (docs.after, after)):
        for row in range(int(rows.bounds[q]), int(rows.bounds[q + 1])):
            if rows.slot[row] >= 0:
                name = top_k.run.docs_at(np.asarray([row])).tolist()[0]
                local = int(rows.slot[row] - docs.first_slot[q])
                columns[:, local] = assigned[:, open_.index(name)]
    return columns


def test_an_evaluator_s_scores_stay_as_measured_at_both_extremes() -> None:
    """An evaluator column in the tested family has no label holes: the bounds re-decide
    the ranking metrics at their extremes with its scores as measured, not pushed to a drop
    of 1 on every query (which would make its own check fail at the worst case and take the
    family's alpha from the others)."""
    query_ids = [f"q{i}" for i in range(40)]
    judgments = {q: {"r1": 3.0, "r2": 2.0, "n": 0.0} for q in query_ids}
    old = {q: ["r1", "r2", "n"] for q in query_ids}
    new = {q: ["n", "u", "r2", "r1"] for q in query_ids}
    case: Case = (judgments, query_ids, old, new)
    thresholds = {m: Threshold(max_drop=0.02) for m in ("ndcg@5", "ragas:faithfulness")}
    slices = {"all": np.arange(len(query_ids))}
    qrels = qrels_from_dict(judgments)
    before, after = graded_top_ks(old, new, query_ids, qrels)
    base, cur = scored(case, ["ndcg@5"], judgments)
    steady = np.full(len(query_ids), 0.9)
    scores = ({**base, "ragas:faithfulness": steady}, {**cur, "ragas:faithfulness": steady})
    settings = ComparisonSettings()
    inner = decider(settings, thresholds, slices)
    seen = []

    def decide(b: dict[str, FloatArray], c: dict[str, FloatArray]) -> object:
        seen.append((b["ragas:faithfulness"], c["ragas:faithfulness"]))
        return inner(b, c)

    checks = inner(*scores)
    assert {c.metric for c in checks if c.level is not None} == set(thresholds)
    found = hole_extremes(checks, before, after, qrels, k=K)
    holes = label_holes(checks, found, slices, scores, decide)
    assert len(seen) == 2  # the worst and the best case
    for measured in seen:
        assert np.array_equal(measured[0], steady)
        assert np.array_equal(measured[1], steady)
    assert [h.metric for h in holes] == ["ndcg@5"]
