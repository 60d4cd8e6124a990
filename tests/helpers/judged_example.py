"""The example with most of its judgments held back, a judge block, a simulated judge's layer."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from retrieval_gate.config.loader import load
from retrieval_gate.datasets.llm_layer import LlmJudgment, read_layer, write_layer
from retrieval_gate.judging.prompt import load_prompt
from retrieval_gate.pipeline.check import check
from retrieval_gate.pipeline.execute import execute
from tests.helpers.builders import copy_example
from tests.helpers.fake_llm import FakeJudge, fake_llm

MODEL = "sim-judge"
PROMPT = load_prompt(None).sha256
"""The default rubric's: the layer is the one `judge` would write, so `check` finds every pair
of the pool in it and calls nobody."""
HELD_BACK = 0.7
JUDGE_BLOCK = {"base_url": "http://127.0.0.1:9/v1", "model": MODEL, "output": "judge.llm.jsonl"}


def read_qrels(path: Path) -> dict[tuple[str, str], int]:
    """A BEIR qrels file as {(query, doc): grade}."""
    rows = path.read_text(encoding="utf-8").splitlines()[1:]
    return {(q, d): int(g) for q, d, g in (row.split("\t") for row in rows)}


def write_qrels(path: Path, grades: Mapping[tuple[str, str], int]) -> None:
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{g}" for (q, d), g in sorted(grades.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def held_back_example(target: Path, *, seed: int = 28, share: float = HELD_BACK) -> Path:
    """The example copied into `target` with `share` of its queries' judgments held back
    (seeded, by query): the kept ones in example/qrels/test.tsv, the held-back ones in
    held_back.tsv, the full set in full.tsv. Returns `target`."""
    copy_example(target)
    qrels = target / "example" / "qrels" / "test.tsv"
    full = read_qrels(qrels)
    write_qrels(target / "full.tsv", full)
    queries = sorted({q for q, _ in full})
    rng = np.random.default_rng(seed)
    held = set(rng.choice(queries, size=round(share * len(queries)), replace=False).tolist())
    write_qrels(qrels, {key: g for key, g in full.items() if key[0] not in held})
    write_qrels(target / "held_back.tsv", {key: g for key, g in full.items() if key[0] in held})
    return target


def assisted_config(
    target: Path,
    name: str,
    *,
    trust: Mapping[str, object] | None = None,
    file: str | None = None,
    **judge: object,
) -> Path:
    """`target`/`name` (example.yaml or example-regressed.yaml) with gate.labels human+llm and
    the simulated judge's block (`judge` overrides its fields), reports off, written to
    `target`/`file` (default assisted-NAME)."""
    path = target / name
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document.pop("report", None)
    document.setdefault("gate", {})["labels"] = "human+llm"
    block: dict[str, object] = {**JUDGE_BLOCK, **judge}
    if trust is not None:
        block["trust"] = dict(trust)
    document["judge"] = block
    out = target / (file or f"assisted-{name}")
    out.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return out


def pooled_pairs(configs: Iterable[Path], depth: int | None = None) -> set[tuple[str, str]]:
    """Every (query, doc) the configs' retrievers rank in their top k (their top `depth`
    when given): the judge's pool."""
    pairs: set[tuple[str, str]] = set()
    for config in configs:
        done = execute(load(config), cache=False)
        for query, hits in done.run.hits.items():
            pairs.update((query, hit.doc_id) for hit in hits[:depth])
    return pairs


def simulated_layer(
    path: Path,
    pairs: Iterable[tuple[str, str]],
    truth: Mapping[tuple[str, str], int],
    *,
    seed: int = 1,
    off_by_one: float = 0.25,
    answer: str = "grade",
) -> int:
    """A judge's layer at `path` over `pairs`: people's grade (0 when unjudged), one grade
    up or down (clipped to 0-3) on `off_by_one` of pairs. Returns the rows written."""
    rng = np.random.default_rng(seed)
    rows = []
    for query, doc in sorted(pairs):
        grade = truth.get((query, doc), 0)
        if rng.random() < off_by_one:
            grade = int(np.clip(grade + rng.choice((-1, 1)), 0, 3))
        rows.append(
            LlmJudgment(
                query, doc, grade, MODEL, PROMPT, f"{answer} {grade}", "2026-11-26T00:00:00Z"
            )
        )
    return write_layer(path, rows)


@dataclass(frozen=True)
class JudgeExample:
    """The held-back example with a judge block: its config, the qrels kept and held back,
    the layer the judge writes, and the truth the stand-in judge grades from."""

    config: Path
    kept: Path
    held_back: Path
    grades: dict[tuple[str, str], int]
    """{(query id, doc id): grade} of the full qrels."""
    queries: dict[str, str]
    """{query id: text}."""
    passages: dict[str, str]
    """{doc id: the passage the judge is sent: title, a blank line, text}."""

    @property
    def layer(self) -> Path:
        """Where the judge writes its layer: beside the kept qrels."""
        return self.kept.with_name("test.llm.jsonl")

    def fake_judge(self, **bias: Any) -> FakeJudge:
        """A judge grading from the full qrels (held-back labels included)."""
        by_text = {(self.queries[q], d): g for (q, d), g in self.grades.items()}
        return FakeJudge.from_grades(by_text, self.passages, **bias)


def judge_example(
    folder: Path, base_url: str, *, held_back: float = HELD_BACK, seed: int = 0, **judge: Any
) -> JudgeExample:
    """`held_back_example` in `folder` (`held_back` of the judged queries' judgments moved
    aside, seeded) whose example.yaml has a judge block at `base_url` (`judge` adds fields)."""
    held_back_example(folder, seed=seed, share=held_back)
    path = folder / "example.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["judge"] = {"base_url": base_url, "model": "judge-1", **judge}
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    queries = {}
    for line in (folder / "example" / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        queries[item["_id"]] = item["text"]
    passages = {}
    for line in (folder / "example" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        parts = (item.get("title", ""), item.get("text", ""))
        passages[item["_id"]] = "\n\n".join(part.strip() for part in parts if part.strip())
    kept = folder / "example" / "qrels" / "test.tsv"
    grades = read_qrels(folder / "full.tsv")
    return JudgeExample(path, kept, folder / "held_back.tsv", grades, queries, passages)


DOCS_KEY = "sk-docs-walkthrough"
"""The key the docs' pull-request walk-through exports in JUDGE_API_KEY."""


@contextlib.contextmanager
def pull_request_sandbox(root: Path, monkeypatch: Any) -> Iterator[Path]:
    """The docs' walk-through (docs/llm-labels.md): the example with 70% of its judgments held
    back, a judge block at the local stand-in (needing JUDGE_API_KEY, set), main's config as
    retrieval-gate.yaml and the regressed retriever's as pull-request.yaml, both under
    gate.labels human+llm; the stand-in serves while the block runs in `root`."""
    with fake_llm(api_key=DOCS_KEY) as llm:
        example = judge_example(root, llm.base_url, held_back=0.7)
        llm.judge = example.fake_judge(over_grade=0.2)
        for name, file in (
            ("example.yaml", "retrieval-gate.yaml"),
            ("example-regressed.yaml", "pull-request.yaml"),
        ):
            assisted_config(
                root, name, base_url=llm.base_url, model="judge-1", output=None,
                api_key_env="JUDGE_API_KEY", file=file,
            )  # fmt: skip
        monkeypatch.setenv("JUDGE_API_KEY", DOCS_KEY)
        yield root


REGRESSED = "example-regressed.yaml"


def assisted_documents(folder: Path) -> dict[str, dict[str, Any]]:
    """The regressed example's result under human+llm, built in `folder` with 70% of its
    judgments held back: `assisted`, a trusted judge that graded every pair of the pool;
    `provisional`, the same judge below a trust floor of 1,000 pairs; `holed`, a layer of each
    run's top 3 (and people's pairs) with nothing to grade the rest (--no-judge), so every
    check whose queries rank an ungraded pair has a label hole."""
    target = held_back_example(folder / "example")
    full = read_qrels(target / "full.tsv")
    configs = [assisted_config(target, name) for name in ("example.yaml", REGRESSED)]
    simulated_layer(target / "judge.llm.jsonl", pooled_pairs(configs) | set(full), full)
    found = {"assisted": check(configs[1], cache=False).document()}
    # The same file name, rewritten for each: the reports name the config, and all show the
    # same gate.
    provisional = assisted_config(target, REGRESSED, trust={"min_pairs": 1000})
    found["provisional"] = check(provisional, cache=False).document()
    shallow = pooled_pairs(configs, depth=3) | set(full)
    rows = [r for r in read_layer(target / "judge.llm.jsonl") if (r.query, r.doc) in shallow]
    # Beside the config, named relatively: the config's hash, which the reports print, stays
    # the same wherever the test runs.
    write_layer(target / "shallow.llm.jsonl", rows)
    holed = assisted_config(target, REGRESSED, output="shallow.llm.jsonl")
    found["holed"] = check(holed, cache=False, judge=False).document()
    return found
