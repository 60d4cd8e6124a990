"""Lint rules on the configured metrics: cutoffs against k, a recall companion, rel= and gain."""

from __future__ import annotations

from collections.abc import Iterator

from retrieval_gate.lint.engine import Draft, LintInput, rule
from retrieval_gate.metrics import MetricSpec, parse_metric
from retrieval_gate.metrics.spec import format_value

RANKING = ("ndcg", "dcg", "ap", "rr", "precision", "err", "rbp", "bpref", "hit_rate")
RECALL = ("recall", "r_precision")
BINARY_CUT = ("ap", "rr")
"""Metrics whose graded use is a classic mistake: MAP and MRR on graded labels."""


@rule("implicit-binary-cut", "warning", "AP or RR on graded labels without rel=")
def _binary_cut(given: LintInput) -> Iterator[Draft]:
    if not given.graded:
        return
    for key, spec in given.specs.items():
        if spec.name not in BINARY_CUT or "rel=" in key.replace(" ", "").lower():
            continue
        rel = int(spec.param("rel"))
        stricter = MetricSpec(spec.name, (("rel", rel + 1),), spec.k)
        yield Draft(
            f"{spec} counts every grade >= {rel} as relevant on grades 0-"
            f"{format_value(given.top_grade)}: a grade-{rel} document counts as much as a grade-"
            f"{format_value(given.top_grade)} one",
            f"say which grades count: write {_with_rel(key, rel)} to keep this cut, or "
            f"{stricter} for the stricter one",
            given.at("metrics", key),
        )


def _with_rel(key: str, rel: int) -> str:
    spec = parse_metric(key)
    cutoff = f"@{spec.k}" if spec.k is not None else ""
    return f"{spec.name}(rel={rel}){cutoff}"


@rule("ndcg-gain", "info", "which gain nDCG uses on these labels")
def _gain(given: LintInput) -> Iterator[Draft]:
    for key, spec in given.specs.items():
        if spec.name not in ("ndcg", "dcg"):
            continue
        explicit = "gain=" in key.replace(" ", "").lower()
        gain = str(spec.param("gain"))
        if not given.graded:
            if explicit:
                yield Draft(
                    f"{spec}: the gain makes no difference on binary labels (2^1 - 1 = 1)",
                    "nothing to do; it matters once grades above 1 are used",
                    given.at("metrics", key),
                )
            continue
        top = given.top_grade
        worth = 2**top - 1 if gain == "exp" else top
        described = "exponential gain 2^g - 1" if gain == "exp" else "linear gain g"
        other = "linear" if gain == "exp" else "exp"
        yield Draft(
            f"{spec} uses {described}{'' if explicit else ' (the default)'}: a grade-"
            f"{format_value(top)} document is worth {worth:g} grade-1 documents"
            + (" (trec_eval's ndcg_cut uses linear gain)" if gain == "exp" else ""),
            (
                "nothing to do if that is the intent"
                if explicit
                else f"pin it: write {spec.name}(gain={gain})@{spec.k}"
                if spec.k is not None
                else f"pin it: write {spec.name}(gain={gain})"
            )
            + f"; {spec.name}(gain={other}) weighs grades "
            + ("exponentially" if other == "exp" else "linearly"),
            given.at("metrics", key),
        )


@rule("cutoff-deeper-than-k", "warning", "a metric cutoff deeper than k")
def _deep_cutoff(given: LintInput) -> Iterator[Draft]:
    k = given.config.k
    for key, spec in given.specs.items():
        if spec.k is not None and spec.k > k:
            yield Draft(
                f"{spec} looks {spec.k} deep but the retriever is asked for k = {k}: ranks "
                f"{k + 1}-{spec.k} are never seen",
                f"raise k to {spec.k}, or use {MetricSpec(spec.name, spec.params, k)}",
                given.at("metrics", key),
            )


@rule("no-cutoff", "warning", "a metric without a cutoff: its depth is whatever k is")
def _no_cutoff(given: LintInput) -> Iterator[Draft]:
    k = given.config.k
    for key, spec in given.specs.items():
        if spec.k is None and spec.measure.cutoff == "optional":
            yield Draft(
                f"{spec} has no cutoff: it reads all k = {k} results, so its meaning changes "
                "whenever k does",
                f"pin the depth: write {MetricSpec(spec.name, spec.params, k)}",
                given.at("metrics", key),
            )


@rule("k-not-set", "info", "k is not written in the config")
def _k_unset(given: LintInput) -> Iterator[Draft]:
    if "k" not in given.config.model_fields_set:
        yield Draft(
            f"k is not set; the default {given.config.k} applies",
            f"write `k: {given.config.k}` so the depth is part of the reviewed config",
            given.at(),
        )


@rule("no-recall-metric", "warning", "ranking metrics with no recall-type companion")
def _no_recall(given: LintInput) -> Iterator[Draft]:
    names = {spec.name for spec in given.specs.values()}
    if names & set(RECALL) or not names & set(RANKING):
        return
    yield Draft(
        f"only ranking metrics ({', '.join(map(str, given.specs.values()))}): a change that drops "
        "relevant documents out of the top k while keeping the first hit passes unseen",
        f"add recall@{given.config.k} with a max_drop such as 5pt",
        given.at("metrics"),
    )
