"""The `run_file` retriever: answers from a precomputed run (TREC, JSONL or BEIR JSON)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr

from retrieval_gate.adapters.interface import Adapter
from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.model import Document, Hit, Query
from retrieval_gate.errors import CoverageError, InputError

if TYPE_CHECKING:
    from retrieval_gate.metrics.top_k import RankedHits

SHOWN = 5
"""Unmatched ids shown on each side when a saved run does not cover the labelled set."""
SAMPLE = 1000
"""Unmatched ids looked at (per side) when guessing why the ids differ."""


class RunFileConfig(AdapterSettings):
    """Reads results computed elsewhere."""

    type: Literal["run_file"] = Field(default="run_file", description="A precomputed run file.")
    path: Path = Field(description="The run file; relative paths start at the config's folder.")
    format: str | None = Field(
        default=None,
        description="trec, jsonl or json (BEIR results); detected from the file if unset.",
    )
    # How the user named the file, for messages: `retriever.path` in a config, or a command
    # line option such as `--run` (see `given`); not a field, so not in any config or hash.
    _option: str = PrivateAttr(default="retriever.path")
    _written: str | None = PrivateAttr(default=None)

    @classmethod
    def given(cls, path: str | Path, option: str) -> RunFileConfig:
        """The config for a run file the user named with a command line `option` (`--run`):
        the path is resolved here, and messages name the option and the path as written."""
        config = cls(path=Path(path).resolve())
        config._option = option
        config._written = str(path)
        return config

    @property
    def named(self) -> str:
        """How the user named the file: `--run runs/x.trec` or `retriever.path runs/x.trec`."""
        written = self._written if self._written is not None else self.path.as_posix()
        return f"{self._option} {written}"


class RunFileRetriever(Adapter[RunFileConfig]):
    """Each query's docs ranked as trec_eval ranks them (score descending, doc id descending
    on ties); `search` gives the top k. A query the file does not have gets no hits. The
    description holds the file's hash, so a changed file is a different retriever.

    `check_coverage` refuses a file that was not made for the labelled set (the pipeline
    calls it before any query is scored). Not cached: the pipeline cuts the answers from
    `run`'s arrays (`runner.read_saved`), which is faster than reading them back."""

    config_class = RunFileConfig

    def __init__(
        self,
        config: RunFileConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        from retrieval_gate.readers import read_run  # numpy: not needed to start the CLI

        path = (base_dir or Path()) / config.path
        if not path.is_file():
            problem = "is a directory, not a run file" if path.is_dir() else "no such file"
            where = "" if path == Path(config._written or "") else f" ({path})"
            raise InputError(f"{config.named}: {problem}{where}")
        self.path = path
        before = _identity(path)
        self.sha256 = _sha256(path)
        self.run = read_run(path, config.format)
        if _identity(path) != before:  # the digest would describe other rows than those read
            raise InputError(
                f"{config.named}: the file changed while it was read ({path}); run the gate "
                "again once it is written"
            )
        self._ranked: RankedHits | None = None

    @property
    def answered(self) -> set[str]:
        """Query ids the file has at least one row for."""
        import numpy as np

        rows = np.bincount(self.run.query, minlength=len(self.run.query_ids))
        return set(self.run.query_ids[rows > 0].tolist())

    def describe(self) -> Mapping[str, Any]:
        return {
            "type": "run_file",
            "path": self.config.path.as_posix(),
            "format": self.config.format,
            "sha256": self.sha256,
        }

    def search(self, query: Query, k: int) -> list[Hit]:
        if self._ranked is None:  # one ranking of the whole file, on first use
            from retrieval_gate.metrics.top_k import RankedHits

            self._ranked = RankedHits(self.run)
        return list(self._ranked.get(query.id, ())[:k])

    def check_coverage(self, labelled: Sequence[str], min_coverage: float) -> None:
        """A CoverageError unless the file answers (has at least one row for) at least
        `min_coverage` of the `labelled` query ids, and at least one of them. The message
        names the file, the counts, the first unmatched ids on each side and, when one is
        visible, why the ids differ (numbers for names, a prefix or suffix, letter case)."""
        present = self.answered
        answered = [query for query in labelled if query in present]
        total = len(labelled)
        share = len(answered) / total if total else 1.0
        if total == 0 or (answered and share >= min_coverage - 1e-9):
            return
        wanted = set(labelled)
        missing = sorted(set(labelled) - set(answered))
        extra = sorted(present - wanted)
        if not answered:
            what = f"shares no query id with the labelled set ({total} queries)"
        else:
            shown = _percent(share, min_coverage)
            what = (
                f"answers {len(answered)} of {total} labelled queries ({shown}), "
                f"below gate.min_coverage {_percent(min_coverage)}"
            )
        parts = [
            f"labelled queries it does not answer: {_ids(missing)}",
            f"query ids in the file that are not labelled: {_ids(extra)}",
        ]
        cause = _likely_cause(extra, missing, has_rows=len(self.run) > 0)
        if cause:
            parts.append(f"likely cause: {cause}")
        text = "; ".join(parts)
        end = "" if text.endswith("?") else "."
        raise CoverageError(
            f"{what}; {text}{end} A saved run is only judged on the labelled set it was made "
            "for: rerun the retriever on these queries and save the run again",
            source=self.config.named,
        )


def _identity(path: Path) -> tuple[int, int, int, int]:
    """What changes when a file is replaced or written: device, inode, size, modified time."""
    status = path.stat()
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with regular_file(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _percent(share: float, other: float | None = None) -> str:
    """`share` as a percentage, with as many decimals as it takes to differ from `other`."""
    text = f"{share * 100:.0f}%"
    for decimals in (1, 2, 3):
        if other is None or text != f"{other * 100:.{decimals - 1}f}%":
            break
        text = f"{share * 100:.{decimals}f}%"
    return text


def _ids(ids: Sequence[str]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(repr(query) for query in ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def _likely_cause(extra: Sequence[str], missing: Sequence[str], *, has_rows: bool) -> str | None:
    """Why the file's query ids and the labelled ones differ, when a pattern shows it."""
    if not has_rows:
        return "the file has no result rows (is it empty, or written before the run ended?)"
    if not extra or not missing:
        return None
    run_sample, set_sample = extra[:SAMPLE], missing[:SAMPLE]
    if all(query.isdigit() for query in run_sample) and not any(
        query.isdigit() for query in set_sample
    ):
        return (
            f"the file's query ids are numbers ({extra[0]!r}) where the labelled set's are "
            f"names ({missing[0]!r}): was the run written with row numbers or positions "
            "instead of the query ids?"
        )
    folded = {query.casefold(): query for query in set_sample}
    same = [(query, folded[query.casefold()]) for query in run_sample if query.casefold() in folded]
    if same:
        run_id, set_id = same[0]
        return (
            f"{len(same)} of the ids differ only in letter case ({run_id!r} in the file, "
            f"{set_id!r} in the labelled set); query ids are case-sensitive"
        )
    affixes: Counter[tuple[str, str]] = Counter()
    examples: dict[tuple[str, str], tuple[str, str]] = {}
    for longer, shorter, side in (
        (run_sample, set(set_sample), "file"),
        (set_sample, set(run_sample), "set"),
    ):
        for query in longer:
            for cut in range(1, len(query)):
                for kind, part, rest in (
                    ("prefix", query[:cut], query[cut:]),
                    ("suffix", query[cut:], query[:cut]),
                ):
                    if rest in shorter:
                        key = (f"{side} {kind}", part)
                        affixes[key] += 1
                        examples.setdefault(key, (query, rest) if side == "file" else (rest, query))
    if not affixes:
        return None
    (where, part), count = affixes.most_common(1)[0]
    side, kind = where.split()
    run_id, set_id = examples[(where, part)]
    owner, other = ("file", "labelled set") if side == "file" else ("labelled set", "file")
    return (
        f"the {owner}'s query ids carry a {kind} {part!r} that the {other}'s do not "
        f"({run_id!r} in the file, {set_id!r} in the labelled set; {count} such pairs)"
    )
