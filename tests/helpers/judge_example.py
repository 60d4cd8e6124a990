"""The bundled example in a temporary folder, with a `judge:` block and held-back labels."""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.fake_llm import FakeJudge

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@dataclass(frozen=True)
class JudgeExample:
    """The copied example: its config, the qrels kept and held back, and the truth."""

    config: Path
    kept: Path
    held_back: Path
    grades: dict[tuple[str, str], int]
    """{(query id, doc id): grade} of the full qrels."""
    queries: dict[str, str]
    """{query id: text}."""
    passages: dict[str, str]
    """{doc id: the passage the judge is sent}."""

    def fake_judge(self, **bias: Any) -> FakeJudge:
        """A judge grading from the full qrels (held-back labels included)."""
        by_text = {(self.queries[q], d): g for (q, d), g in self.grades.items()}
        return FakeJudge.from_grades(by_text, self.passages, **bias)


def judge_example(
    folder: Path, base_url: str, *, held_back: float = 0.7, seed: int = 0, **judge: Any
) -> JudgeExample:
    """configs/example.yaml and its files copied into `folder`, `held_back` of the judged
    queries' judgments moved (seeded) to held_back.tsv, the rest kept in kept.tsv (the
    config's qrels), and a judge block pointing at `base_url` (`judge` adds fields)."""
    shutil.copytree(CONFIGS / "example", folder / "example")
    baseline = CONFIGS / ".retrieval-gate" / "example" / "baseline.json"
    (folder / ".retrieval-gate" / "example").mkdir(parents=True)
    shutil.copy(baseline, folder / ".retrieval-gate" / "example" / "baseline.json")
    lines = (folder / "example" / "qrels" / "test.tsv").read_text().splitlines()
    header, rows = lines[0], [line.split("\t") for line in lines[1:] if line.strip()]
    judged = sorted({row[0] for row in rows})
    hidden = set(random.Random(seed).sample(judged, round(held_back * len(judged))))
    kept = folder / "kept.tsv"
    hidden_path = folder / "held_back.tsv"
    kept.write_text("\n".join([header] + ["\t".join(r) for r in rows if r[0] not in hidden]) + "\n")
    hidden_path.write_text(
        "\n".join([header] + ["\t".join(r) for r in rows if r[0] in hidden]) + "\n"
    )
    config = yaml.safe_load((CONFIGS / "example.yaml").read_text())
    config["dataset"] = {"path": "example", "qrels": "kept.tsv"}
    config["judge"] = {"base_url": base_url, "model": "judge-1", **judge}
    path = folder / "example.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    queries = {}
    for line in (folder / "example" / "queries.jsonl").read_text().splitlines():
        item = json.loads(line)
        queries[item["_id"]] = item["text"]
    passages = {}
    for line in (folder / "example" / "corpus.jsonl").read_text().splitlines():
        item = json.loads(line)
        passages[item["_id"]] = "\n\n".join(
            part.strip() for part in (item.get("title", ""), item.get("text", "")) if part.strip()
        )
    grades = {(r[0], r[1]): int(r[2]) for r in rows}
    return JudgeExample(path, kept, hidden_path, grades, queries, passages)
