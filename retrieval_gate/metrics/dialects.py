"""Metric names as other tools write them (trec_eval, ir_measures, ranx), read with that
tool's meaning and spelled as ours.

Our canonical names and meanings never change: a dialect only translates. `ndcg@10` here is
exponential gain (2^g - 1); trec_eval's `ndcg_cut_10`, ir_measures' `nDCG@10` and ranx's
`ndcg@10` are all linear gain (g), so under a dialect they read as `ndcg(gain=linear)@10`.

Where each tool defines its names (commits read):
- trec_eval: the printed measure names of its own test outputs (../shared/data/trec_eval_test,
  out.test.*), which tests/oracles/test_trec_eval.py matches value for value, e.g. ndcg_cut_10
  against ndcg(gain=linear)@10 (trec_eval's gain is the qrels grade itself).
- ir_measures (terrierteam/ir_measures @ dc04a88f): ir_measures/measures/ndcg.py:19 (nDCG's
  `dcg` defaults to 'log2', the gain is the grade: linear; 'exp-log2' is 2^g - 1);
  ir_measures/providers/pytrec_eval_provider.py:65-151 (P -> P_k, RR -> recip_rank,
  AP -> map / map_cut_k, nDCG -> ndcg / ndcg_cut_k, R -> recall_k, Rprec, Bpref,
  NumRet(rel=) -> num_rel_ret, Success -> success_k: each is trec_eval's measure);
  ir_measures/providers/judged_provider.py:40-57 (Judged@k: judged docs in the top k over
  min(k, docs retrieved): our judged(of=retrieved)@k).
- ranx (AmenRa/ranx @ 2cae52f0): ranx/metrics/__init__.py:35-66 (the names); ranx/meta/
  evaluate.py:19-40 (`name@k`, `-lN` is the relevance level, no @k is the whole run);
  ranx/metrics/ndcg.py:34-41 and :186 vs :310 (ndcg is Jarvelin's linear gain, ndcg_burges
  is 2^g - 1), ranx/metrics/hits.py:12-34 (hits is the COUNT of relevant docs in the top k),
  ranx/metrics/hit_rate.py:12-31 (1 if any), ranx/metrics/precision.py:12-17 (divides by
  k), ranx/metrics/recall.py:22 and average_precision.py:42 (divide by R, as trec_eval),
  ranx/metrics/r_precision.py:19, ranx/metrics/f1.py:12-28 (f1@k = 2 P@k R@k / (P@k + R@k);
  f1 without @k takes k = docs retrieved: trec_eval's set_F).
- trec_eval's set_P, set_recall, set_F (and set_F_x, printed for `-m set_F.x`): see
  retrieval_gate/metrics/set_measures.py for the C source read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics.spec import REGISTRY

DIALECTS = ("trec_eval", "ir_measures", "ranx")
PREFIX = re.compile(r"^\s*(?P<dialect>trec_eval|ir_measures|ranx)\s*:\s*(?P<rest>.*)$")

Translate = Callable[["re.Match[str]"], str]


@dataclass(frozen=True)
class Rule:
    """One name family of a tool: a full-match pattern on its spelling and our spelling of
    it (a template over the match's groups), or why we cannot read it."""

    pattern: str
    ours: str | None
    examples: tuple[str, ...]
    why: str = ""


_DIGITS = r"(?P<k>[1-9][0-9]*)"
_NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_PAIRS = rf"[0-9]+={_NUMBER}(?:,[0-9]+={_NUMBER})*"

TREC_EVAL: tuple[Rule, ...] = (
    Rule("ndcg", "ndcg(gain=linear)", ("ndcg",)),
    Rule(rf"ndcg_cut_{_DIGITS}", "ndcg(gain=linear)@{k}", ("ndcg_cut_10",)),
    Rule(rf"P_{_DIGITS}", "precision@{k}", ("P_10",)),
    Rule("map", "ap", ("map",)),
    Rule(rf"map_cut_{_DIGITS}", "ap@{k}", ("map_cut_100",)),
    Rule(rf"recall_{_DIGITS}", "recall@{k}", ("recall_100",)),
    Rule(rf"success_{_DIGITS}", "hit_rate@{k}", ("success_10",)),
    Rule("recip_rank", "rr", ("recip_rank",)),
    Rule("Rprec", "r_precision", ("Rprec",)),
    Rule("bpref", "bpref", ("bpref",)),
    Rule("num_ret", "num_ret", ("num_ret",)),
    Rule("num_rel", "num_rel", ("num_rel",)),
    Rule("num_rel_ret", "num_rel_ret", ("num_rel_ret",)),
    Rule("set_P", "set_precision", ("set_P",)),
    Rule("set_recall", "set_recall", ("set_recall",)),
    Rule("set_F", "set_f", ("set_F",)),
    Rule(r"set_F_(?P<x>[0-9]+(?:\.[0-9]+)?)", "set_f(weight={x})", ("set_F_0.5",)),
    Rule("infAP", "infap", ("infAP",)),  # m_infap.c: our infap (metrics/incomplete.py)
    # `-m ndcg.1=3,2=9,4=4.5` prints as ndcg_1=3,2=9,4=4.5 (meas_init.c
    # te_init_meas_s_double_p_pair: name + "_" + the raw parameter text; values read by atof):
    # level=gain pairs, unlisted levels keep gain = level (gain_init.c setup_gains), the same
    # gains for the ideal ranking (m_ndcg.c). Matched per query in
    # tests/metrics/test_measures_gains.py.
    Rule(rf"ndcg_(?P<gains>{_PAIRS})", "ndcg(gain=linear,gains={gains})", ("ndcg_1=3,2=9,4=4.5",)),
    Rule(rf"dcg_(?P<gains>{_PAIRS})", "dcg(gain=linear,gains={gains})", ("dcg_1=3,2=9",)),
    Rule("dcg", "dcg(gain=linear)", ("dcg",)),  # m_ndcg.c te_meas_dcg: the same loop's sum
    Rule(
        r"gm_map|gm_bpref|iprec_at_recall_.*|Rprec_mult_.*|utility|11pt_avg|set_.*"
        r"|ndcg_rel|Rndcg|binG|G|relstring|num_q|runid|relative_P_.*|.*_avgjg|.*_avgjg_.*"
        r"|ndcg_p|ndcg_cut|P|recall|success|map_cut",
        None,
        ("gm_map", "iprec_at_recall_0.10", "set_map", "ndcg_rel", "Rndcg"),
        "we have no equivalent yet",
    ),
)

# ir_measures: Name(param=value,...)@k; the names are case-sensitive.
_IRM = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_]*)\s*(?:\((?P<params>[^()]*)\))?\s*(?:@\s*(?P<k>[^\s]+))?\s*$"
)
# ir_measures name -> (our measure, takes rel=)
IR_MEASURES: dict[str, tuple[str, bool]] = {
    "nDCG": ("ndcg", False),
    "NDCG": ("ndcg", False),
    "AP": ("ap", True),
    "MAP": ("ap", True),
    "RR": ("rr", True),
    "MRR": ("rr", True),
    "P": ("precision", True),
    "Precision": ("precision", True),
    "R": ("recall", True),
    "Recall": ("recall", True),
    "Success": ("hit_rate", True),
    "Judged": ("judged", False),
    "Rprec": ("r_precision", True),
    "RPrec": ("r_precision", True),
    "Bpref": ("bpref", True),
    "BPref": ("bpref", True),
    "NumRet": ("num_ret", True),  # NumRet(rel=N) is trec_eval's num_rel_ret
    "NumRel": ("num_rel", True),
    "NumRelRet": ("num_rel_ret", True),
    "infAP": ("infap", True),  # measures/infap.py: trec_eval's infAP via pytrec_eval
    # measures/set_measures.py: SetP(rel, relative, judged_only), SetR(rel), SetF(rel, beta,
    # judged_only); pytrec_eval_provider.py:128-150 computes them as trec_eval's set_P,
    # set_recall and set_F (beta passed as set_F's parameter). tests/metrics/test_measures_gains.py
    # compares them with ir_measures itself.
    "SetP": ("set_precision", True),
    "SetR": ("set_recall", True),
    "SetF": ("set_f", True),
    # measures/diversity.py and providers/pyndeval_provider.py:30-55: pyndeval (ndeval.c)
    # computes them from the qrels' iteration column as the subtopic; alpha and beta are
    # ndeval's -alpha/-beta (ERR_IA, nERR_IA and P_IA run with alpha = 0.5, our default).
    # tests/metrics/test_diversity.py compares each with ir_measures itself.
    "alpha_nDCG": ("alpha_ndcg", True),
    "alpha_DCG": ("alpha_dcg", True),
    "ERR_IA": ("err_ia", True),
    "nERR_IA": ("nerr_ia", True),
    "P_IA": ("p_ia", True),
    "StRecall": ("s_recall", True),
    "NRBP": ("nrbp", True),
    "nNRBP": ("nnrbp", True),
    "AP_IA": ("ap_ia", True),
    "MAP_IA": ("ap_ia", True),
}
IR_MEASURES_PASSED: dict[str, tuple[str, ...]] = {
    "alpha_ndcg": ("alpha",),
    "alpha_dcg": ("alpha",),
    "nrbp": ("alpha", "beta"),
    "nnrbp": ("alpha", "beta"),
}
"""ir_measures parameters that are ours too, under the same name and meaning."""
IR_MEASURES_REFUSED = frozenset(
    {
        "ERR", "RBP", "SDCG", "IPrec", "NERR8", "NERR9", "NERR10", "NERR11", "INST",
        "INSQ", "SetRelP", "SetAP", "BPM", "Compat", "Accuracy", "NumQ",
    }
)  # fmt: skip
IR_MEASURES_EXAMPLES = (
    "nDCG@10", "nDCG(dcg=exp-log2)@10", "AP@100", "RR@10", "P@10", "P(rel=2)@10", "R@100",
    "Success@10", "Judged@10", "Rprec", "Bpref", "NumRelRet", "infAP",
    "nDCG(judged_only=True)@10", "AP(judged_only=True)", "nDCG(gains={0:0,1:1,2:3})@10",
    "SetP", "SetR", "SetF", "SetF(beta=0.5)", "alpha_nDCG@20", "alpha_nDCG(alpha=0.7)@20",
    "ERR_IA@20", "nERR_IA@20", "P_IA@10", "StRecall@20", "NRBP", "nNRBP(beta=0.8)", "AP_IA",
)  # fmt: skip

# ranx: name@k-lN; lower case; no @k is the whole run.
_RANX = re.compile(
    r"^\s*(?P<name>[a-z][a-z0-9_]*(?:-precision)?)(?:@(?P<k>[^\s\-]+))?(?:-l(?P<rel>[0-9]+))?\s*$"
)
# ranx name -> (our spelling, cutoff: "optional" or "required", takes -lN)
RANX: dict[str, tuple[str, str, bool]] = {
    "ndcg": ("ndcg(gain=linear)", "optional", False),
    "ndcg_burges": ("ndcg(gain=exp)", "optional", False),
    "dcg": ("dcg(gain=linear)", "optional", False),
    "dcg_burges": ("dcg(gain=exp)", "optional", False),
    "map": ("ap", "optional", True),
    "mrr": ("rr", "optional", True),
    "precision": ("precision", "required", True),
    "recall": ("recall", "required", True),
    "hit_rate": ("hit_rate", "required", True),
    "hits": ("num_rel_ret", "optional", True),
    "r-precision": ("r_precision", "none", True),
    "bpref": ("bpref", "none", True),
    "f1": ("f1", "optional", True),  # without @k: k = docs retrieved, trec_eval's set_F
}
RANX_REFUSED = {"rbp": "its rbp is not verified against ours yet"}
RANX_EXAMPLES = (
    "ndcg@10", "ndcg_burges@10", "dcg@10", "map@100", "mrr@10", "precision@10", "recall@100",
    "hit_rate@10", "hits@5", "r-precision", "bpref", "map@100-l2", "f1@10", "f1",
)  # fmt: skip


def split_prefix(text: str) -> tuple[str | None, str]:
    """(`trec_eval`, `ndcg_cut_10`) for `trec_eval:ndcg_cut_10`; (None, text) without one."""
    match = PREFIX.match(text)
    return (match["dialect"], match["rest"]) if match else (None, text)


def translate(text: str, dialect: str) -> str | None:
    """Our spelling of `dialect`'s name `text`; None when it is not one of that tool's names
    (it is then read as ours); a MetricError when it is, but we cannot give its meaning."""
    if dialect == "trec_eval":
        return _trec_eval(text)
    if dialect == "ir_measures":
        return _ir_measures(text)
    if dialect == "ranx":
        return _ranx(text)
    raise MetricError(f"unknown metrics dialect {dialect!r}; available: {', '.join(DIALECTS)}")


def _refuse(text: str, dialect: str, why: str) -> MetricError:
    return MetricError(f"{text.strip()!r} is {possessive(dialect)} name, but {why}")


def possessive(dialect: str) -> str:
    """trec_eval's, ir_measures', ranx's."""
    return f"{dialect}'" if dialect.endswith("s") else f"{dialect}'s"


def _trec_eval(text: str) -> str | None:
    name = text.strip()
    for rule in TREC_EVAL:
        match = re.fullmatch(rule.pattern, name)
        if match is None:
            continue
        if rule.ours is None:
            return _raise(_refuse(name, "trec_eval", rule.why))
        groups = match.groupdict()
        if groups.get("gains"):  # trec_eval's 1=3,2=9 is our gains=1:3;2:9
            groups["gains"] = groups["gains"].replace(",", ";").replace("=", ":")
        return rule.ours.format(**groups)
    return None


def _raise(error: MetricError) -> str:
    raise error


def _ir_measures(text: str) -> str | None:
    match = _IRM.match(text)
    if match is None:
        return None
    name = match["name"]
    if name in IR_MEASURES_REFUSED:
        raise _refuse(text, "ir_measures", "we have no equivalent of it yet")
    if name not in IR_MEASURES:
        return None
    ours, takes_rel = IR_MEASURES[name]
    params: list[str] = []
    judged_only = False
    for item in _split_outside_braces(match["params"] or ""):
        if not item.strip():
            continue
        key, _, value = (part.strip() for part in item.partition("="))
        if key == "gains" and ours == "ndcg":
            params.append(f"gains={_ir_measures_gains(text, value)}")
        elif key == "beta" and ours == "set_f":
            params.append(f"weight={value}")  # pytrec_eval_provider.py:135: set_F's parameter
        elif key in IR_MEASURES_PASSED.get(ours, ()):
            params.append(f"{key}={value}")
        elif key == "relative" and ours == "set_precision" and value in ("False", "false", "0"):
            continue
        elif key == "rel" and takes_rel:
            if name == "NumRet":
                ours = "num_rel_ret"  # ir_measures: NumRet(rel=N) is num_rel_ret
            params.append(f"rel={value}")
        elif key == "dcg" and ours == "ndcg" and value in ("log2", "exp-log2"):
            params.append("gain=" + ("linear" if value == "log2" else "exp"))
        elif key == "judged_only" and value in ("False", "false", "0"):
            continue
        elif key == "judged_only" and value in ("True", "true", "1") and _condensable(ours):
            judged_only = True  # pytrec_eval_provider.py:204: trec_eval -J, a condensed list
        else:
            raise _refuse(text, "ir_measures", f"we cannot read its parameter {item.strip()!r}")
    if ours == "judged":
        params.append(_judged_of_retrieved(text))
    if ours == "ndcg" and not any(p.startswith("gain=") for p in params):
        params.append("gain=linear")  # ndcg.py:19: dcg='log2' by default, gain = the grade
    if judged_only:
        ours = f"{ours}_condensed"
    shown = f"({','.join(params)})" if params else ""
    cutoff = f"@{match['k']}" if match["k"] is not None else ""
    return f"{ours}{shown}{cutoff}"


def _split_outside_braces(text: str) -> list[str]:
    """`text` split at the commas outside `{...}`: gains={0:0,1:1},judged_only=False."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def _ir_measures_gains(text: str, value: str) -> str:
    """Our gains=0:0;1:1;2:3 for ir_measures' gains={0:0,1:1,2:3}.

    pytrec_eval_provider.py:168-172 relabels each qrels grade g to gains.get(g, g) and runs
    trec_eval's ndcg / ndcg_cut_k on the result: an unlisted grade keeps gain g, as ours with
    gain=linear; the ideal ranking uses the new labels. pytrec_eval reads the labels as
    integers and trec_eval treats a label < 0 as unjudged, so only gains >= 0 whole numbers
    mean the same thing."""
    match = re.fullmatch(r"\{\s*(.*?)\s*\}", value)
    pairs = [p.strip() for p in match[1].split(",") if p.strip()] if match else []
    if not match or not all(re.fullmatch(r"[0-9]+\s*:\s*[0-9]+", p) for p in pairs) or not pairs:
        raise _refuse(
            text,
            "ir_measures",
            f"we read only gains={{grade:gain,...}} with whole numbers >= 0, got {value!r}",
        )
    return ";".join(p.replace(" ", "") for p in pairs)


def _condensable(ours: str) -> bool:
    """Whether `ours` has a judged-only twin `<ours>_condensed` (metrics/incomplete.py)."""
    return f"{ours}_condensed" in REGISTRY


def _judged_of_retrieved(text: str) -> str:
    """ir_measures' Judged@k divides by min(k, docs retrieved)
    (ir_measures/providers/judged_provider.py:47-57): our judged(of=retrieved)."""
    of = {p.name: p for p in REGISTRY["judged"].params}.get("of")
    if of is None or "retrieved" not in of.choices:
        raise _refuse(
            text, "ir_measures", "it divides by min(k, docs retrieved) and our judged@k by k"
        )
    return "of=retrieved"


def _ranx(text: str) -> str | None:
    match = _RANX.match(text)
    if match is None:
        return None
    name = match["name"]
    if name in RANX_REFUSED:
        raise _refuse(text, "ranx", RANX_REFUSED[name])
    if name not in RANX:
        return None
    ours, cutoff, takes_rel = RANX[name]
    k, rel = match["k"], match["rel"]
    if k == "0":  # ranx: @0 is the whole run (common.py fix_k)
        k = None
    if k is None and cutoff == "required":
        raise _refuse(
            text, "ranx", f"without @k it scores the whole run; write {name}@k with your k"
        )
    if name == "f1" and k is None:  # f1.py:18: no k is the whole run, so trec_eval's set_F
        ours = "set_f"
    if rel is not None and not takes_rel:
        raise _refuse(
            text,
            "ranx",
            f"-l{rel} drops the grades below {rel} before the gain; we have no such {ours}",
        )
    if rel is not None and rel != "1":
        ours = f"{ours}(rel={rel})"
    return ours if k is None else f"{ours}@{k}"


def foreign(text: str) -> list[tuple[str, str]]:
    """(dialect, our spelling) of every tool that reads `text` as one of its names."""
    found = []
    for dialect in DIALECTS:
        try:
            ours = translate(text, dialect)
        except MetricError:
            continue
        if ours is not None:
            found.append((dialect, ours))
    return found


def refusal(text: str) -> MetricError | None:
    """The first tool's refusal of `text` (one of its names we cannot read), else None."""
    for dialect in DIALECTS:
        try:
            translate(text, dialect)
        except MetricError as error:
            return error
    return None
