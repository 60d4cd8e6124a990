"""`retrieval-gate.yaml`: the schema (pydantic) and a loader whose errors name line and field."""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticCustomError

from retrieval_gate.adapters import AdapterConfig
from retrieval_gate.config import DEFAULT_CONFIG
from retrieval_gate.core import redaction
from retrieval_gate.core.names import NAME_PATTERN, NAME_RULE, valid_name
from retrieval_gate.core.strict import StrictModel
from retrieval_gate.errors import InputError, MetricError

CONFIG_VERSION = 1
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_POINTS = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(pt|pts|point|points)\s*$", re.IGNORECASE)
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
MAX_CONFIG_BYTES = 1024 * 1024
MAX_DEPTH = 64


class Drop(StrictModel):
    """A tolerated drop: `value` in points of the [0, 1] scale, or relative to the baseline."""

    value: float = Field(ge=0, le=1)
    relative: bool = False
    text: str

    def __str__(self) -> str:
        return self.text


_DROP_FORMS = "write points (2pt, 0.02) or a percentage of the baseline (3%)"
_SIGNED = re.compile(r"^\s*-\s*([0-9]*\.?[0-9]+)\s*(pt|pts|point|points|%)?\s*$", re.IGNORECASE)


def _parse_drop(raw: Any) -> Any:
    """`2pt` -> 0.02 points, a bare `0.02` -> 0.02 points, `3%` -> 3% of the baseline value.
    Anything else is a `drop_*` error that quotes what was written (see `_describe_errors`)."""
    if isinstance(raw, dict | Drop):
        return raw
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        if not math.isfinite(raw):
            raise _drop_error(f"{raw} is not a finite drop; {_DROP_FORMS}")
        if raw < 0:
            raise _drop_error(f"{raw:g} is negative; a drop is 0 or more: {_DROP_FORMS}")
        if raw > 1:
            raise _drop_error(
                f"{raw:g} would allow a drop of {raw * 100:g}pt, past the whole metric (a bare "
                f"number is a fraction of the 0-1 scale); write {raw:g}pt for {raw:g} points, "
                f"or {raw:g}% for a share of the baseline"
            )
        return {"value": float(raw), "text": f"{float(raw) * 100:g}pt"}
    if isinstance(raw, str):
        written = _shorten(" ".join(raw.split()))
        if match := _POINTS.match(raw):
            points = float(match[1])
            if points > 100:
                raise _drop_error(
                    f"{written} would allow a drop past the whole metric; a drop in points is "
                    "at most 100pt (the whole 0-1 scale)"
                )
            return {"value": points / 100, "text": f"{points:g}pt"}
        if match := _PERCENT.match(raw):
            if float(match[1]) > 100:
                raise _drop_error(
                    f"{written} would allow a drop past the whole metric; a relative drop is "
                    "at most 100%"
                )
            return {"value": float(match[1]) / 100, "relative": True, "text": f"{match[1]}%"}
        if _SIGNED.match(raw):
            raise _drop_error(f"{written} is negative; a drop is 0 or more: {_DROP_FORMS}")
    raise _drop_error(f"{_shorten(repr(raw))} is not a drop; {_DROP_FORMS}")


def _drop_error(message: str) -> PydanticCustomError:
    # The message is formatted already: braces in what the user wrote stay as written.
    return PydanticCustomError("drop_invalid", "{message}", {"message": message})


DropSpec = Annotated[
    Drop,
    BeforeValidator(_parse_drop),
    # What a user writes (the parsed model is internal): editors validate against this.
    WithJsonSchema(
        {
            "title": "drop",
            "anyOf": [
                {
                    "type": "string",
                    "pattern": r"^\s*[0-9]*\.?[0-9]+\s*"
                    r"([Pp][Tt][Ss]?|[Pp][Oo][Ii][Nn][Tt][Ss]?|%)\s*$",
                },
                {"type": "number", "minimum": 0, "maximum": 1},
            ],
        }
    ),
]


class MetricGate(StrictModel):
    """Thresholds of one metric: the largest tolerated drop and an absolute floor."""

    max_drop: DropSpec | None = Field(
        None, description="largest tolerated drop: 2pt (points), 0.02 (fraction) or 3% (relative)"
    )
    min: float | None = Field(None, description="absolute floor of the mean, e.g. 0.6")


class AnnotatorsConfig(StrictModel):
    """Judgments by several annotators: how their grades combine, and how well they must agree."""

    combine: Literal["median", "mean", "max", "min"] = Field(
        "median",
        description="one grade per (query, doc) from several annotators': median (the lower "
        "one, so a grade somebody gave), mean, max or min",
    )
    min_agreement: float = Field(
        0.6,
        ge=-1,
        le=1,
        description="agreement floor for Krippendorff's alpha and each pair's Cohen's kappa; "
        "lint warns below it",
    )
    enforce: bool = Field(
        False, description="true: check refuses to gate when alpha is below min_agreement"
    )


class DatasetConfig(StrictModel):
    """Where the labelled set lives."""

    path: str | None = Field(
        None, description="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)"
    )
    queries: str | None = Field(
        None, description="queries: BEIR/JSONL .jsonl, TREC topics, or qid<TAB>text .tsv"
    )
    qrels: str | None = Field(None, description="qrels: TREC, BEIR .tsv or JSONL (.gz too)")
    subtopics: str | None = Field(
        None,
        description="subtopic (intent) qrels, 'topic subtopic docno judgment' lines as the TREC "
        "Web track's diversity qrels (.gz too); needed by the diversity metrics (alpha_ndcg@k, "
        "err_ia@k, ...)",
    )
    corpus: str | None = Field(None, description="corpus.jsonl (needed by the bm25 retriever)")
    ir_datasets: str | None = Field(
        None, description="an ir_datasets id (cranfield, beir/scifact/test) instead of files"
    )
    split: str = Field("test", description="BEIR qrels split: qrels/<split>.tsv")
    format: Literal["auto", "beir", "trec", "jsonl"] = Field(
        "auto", description="layout of the labelled set; auto detects it"
    )
    query_field: str = Field("title", description="TREC topics: the field used as query text")
    annotators: AnnotatorsConfig = Field(default_factory=lambda: AnnotatorsConfig())


class QueryLengthBins(StrictModel):
    """Query-length buckets in tokens: bins [1, 3, 6] make 1-2, 3-5 and 6+."""

    bins: list[int] = Field(
        default=[1, 3, 6],
        min_length=1,
        description="lower bounds of the buckets in tokens: [1, 3, 6] makes 1-2, 3-5 and 6+",
    )

    @field_validator("bins")
    @classmethod
    def _increasing(cls, bins: list[int]) -> list[int]:
        if bins[0] < 1 or any(b <= a for a, b in itertools.pairwise(bins)):
            raise ValueError("bins must be positive and strictly increasing, e.g. [1, 3, 6]")
        return bins


class SlicesConfig(StrictModel):
    """How queries are grouped for per-slice gating."""

    by: list[str] = Field(
        default_factory=list, description="metadata fields, or query_length, to slice by"
    )
    combine: list[list[str]] = Field(
        default_factory=list, description="field combinations, e.g. [[intent, segment]]"
    )
    query_length: QueryLengthBins = Field(default_factory=lambda: QueryLengthBins())
    min_size: int = Field(30, ge=1, description="smaller slices are reported, not gated")
    overrides: dict[str, dict[str, MetricGate]] = Field(
        default_factory=dict,
        description="per-slice thresholds: {'intent=billing': {'ndcg@10': {max_drop: 4pt}}}",
    )


class DriftConfig(StrictModel):
    """The drift budget: how far the main branch may fall below a reference over many merges,
    each of which passed its own gate (`retrieval-gate history drift`)."""

    reference: str | None = Field(
        None,
        description="what the newest result of the main branch is compared with: a tag or "
        "commit in the history, or baseline (the committed baseline's commit); unset: the "
        "first record of the history. An acceptance (history accept) moves it forward",
    )
    max_drop: DropSpec = Field(
        description="largest tolerated drop of every gated metric since the reference: 3pt "
        "(points), 0.03 (fraction) or 5% (relative)"
    )


class GateSettings(StrictModel):
    """The statistics of the gate."""

    alpha: float = Field(0.05, gt=0, lt=1, description="significance level")
    correction: Literal["holm", "bh", "none"] = Field(
        "holm",
        description="multiple-comparison correction across the gated checks: weighted "
        "Holm (family-wise), weighted Benjamini-Hochberg (false discovery rate) or none",
    )
    test: Literal["randomization", "t"] = Field(
        "randomization", description="paired test: sign-flip randomization or paired t"
    )
    resamples: int = Field(
        10_000, ge=1000, description="most sign-flip draws per check (most stop far sooner)"
    )
    seed: int = Field(0, description="seed of every resampling")
    require_significance: bool = Field(
        True, description="false: a drop past max_drop fails whatever its p-value"
    )
    on_inconclusive: Literal["pass", "fail"] = Field(
        "pass",
        description="a check past its threshold without enough evidence: pass (the default; "
        "the report lists it) or fail the gate",
    )
    overall_share: float = Field(
        0.5,
        gt=0,
        lt=1,
        description="share of alpha for the overall checks of the gated metrics when slices "
        "are gated too; the slice checks share the rest",
    )
    min_coverage: float = Field(
        0.9,
        gt=0,
        le=1,
        description="share of the labelled queries a saved run (check --run, run_file) must "
        "answer; less is bad input (exit 2), not a regression",
    )
    error_budget: float = Field(
        0.01, ge=0, le=1, description="fraction of queries the retriever may fail on"
    )
    repeats: int = Field(
        1,
        ge=1,
        le=100,
        description="runs of the retriever per side (check --repeats, baseline --repeats): 2 "
        "or more measure its run-to-run noise, which the test then allows for; the record "
        "compared is the mean of the runs",
    )
    drift: DriftConfig | None = Field(
        None,
        description="drift budget over many merges, checked against the history branch: "
        "{reference: v2.3, max_drop: 3pt}; unset: no drift check",
    )


class ReportConfig(StrictModel):
    """Report files written by `check` and `compare`. Without this block: result.json,
    report.md and report.html in .retrieval-gate/<name>/ beside the config; with it, exactly
    the paths given."""

    markdown: str | None = Field(None, description="the Markdown report")
    json_path: str | None = Field(
        None, alias="json", description="the JSON result, read by `compare` and `comment`"
    )
    junit: str | None = Field(None, description="JUnit XML, one testcase per check")
    html: str | None = Field(None, description="a self-contained HTML report")


class LintConfig(StrictModel):
    """`retrieval-gate lint`: findings to leave out."""

    ignore: list[str] = Field(
        default_factory=list,
        description="codes of warning and info findings to leave out, e.g. [no-recall-metric]; "
        "errors cannot be ignored",
    )


class GateConfig(StrictModel):
    """A whole `retrieval-gate.yaml`."""

    version: Literal[1] = Field(description="schema version of this file")
    name: str = Field(
        "retrieval-gate",
        description="names the PR comment, report folders and files; keep it unique. "
        f"A short slug: {NAME_RULE}",
        json_schema_extra={"pattern": f"^{NAME_PATTERN}$"},
    )
    dataset: DatasetConfig
    retriever: AdapterConfig
    k: int = Field(10, ge=1, le=100_000, description="how many results to ask the retriever for")
    metrics: dict[str, MetricGate] = Field(
        min_length=1, description="canonical metric -> thresholds, e.g. ndcg@10: {max_drop: 2pt}"
    )
    metrics_dialect: Literal["trec_eval", "ir_measures", "ranx"] | None = Field(
        None,
        description="read the metrics keys as this tool names them, with its meaning (trec_eval: "
        "ndcg_cut_10 is ndcg(gain=linear)@10); reports use our names. One key can say it "
        "instead: trec_eval:ndcg_cut_10. `retrieval-gate metrics --dialect NAME` lists them",
    )
    slices: SlicesConfig = Field(default_factory=lambda: SlicesConfig())
    gate: GateSettings = Field(default_factory=lambda: GateSettings())
    baseline: str = Field(".retrieval-gate/baseline.json", description="baseline file")
    cache: str = Field(".retrieval-gate/cache.sqlite", description="retriever result cache")
    report: ReportConfig = Field(default_factory=lambda: ReportConfig())
    lint: LintConfig = Field(default_factory=lambda: LintConfig())

    _path: Path = PrivateAttr(default=Path(DEFAULT_CONFIG))
    _notes: tuple[str, ...] = PrivateAttr(default=())

    @field_validator("name")
    @classmethod
    def _slug(cls, name: str) -> str:
        if not valid_name(name):
            raise PydanticCustomError(
                "name_not_slug",
                "the name names folders, files and the PR comment, so it must be a short "
                "slug: {rule}, e.g. support-search",
                {"rule": NAME_RULE},
            )
        return name

    @property
    def path(self) -> Path:
        """The file this config was loaded from."""
        return self._path

    @property
    def notes(self) -> tuple[str, ...]:
        """What to know about the metric names as written (deprecated, or read differently
        by other tools), for `config validate`; not errors."""
        return self._notes

    @property
    def base_dir(self) -> Path:
        """Relative paths in the config resolve against the config file's folder."""
        return self._path.parent

    def resolve(self, path: str) -> Path:
        """`path` made absolute against the config file's folder."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.base_dir / candidate


def load(
    path: str | Path,
    *,
    environ: typing.Mapping[str, str] | None = None,
    keep_secrets: bool = False,
) -> GateConfig:
    """The config at `path`; every problem is an InputError naming the file, line and field.

    Its secrets replace those of configs loaded before, unless `keep_secrets` (two configs in
    use at once, as `check --against` has)."""
    path = Path(path)
    source = str(path)
    text = _read(path, source)
    root, data = parse_yaml(text, source)
    if not isinstance(data, dict):
        raise InputError(
            "expected a mapping at the top (version: 1, dataset: ..., ...)", source=source, line=1
        )
    if not keep_secrets:
        redaction.forget()  # this config's secrets, not an earlier one's
    data = _expand_env(data, (), root, source, os.environ if environ is None else environ)
    try:
        config = GateConfig.model_validate(data)
    except ValidationError as error:
        raise InputError(_describe_errors(error, root, source)) from None
    config = _check_metrics(config, root, source)
    config._path = path
    return config


def _read(path: Path, source: str) -> str:
    """The text of the config, refused unread past MAX_CONFIG_BYTES; a UTF-8 BOM is dropped."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                size = max(os.fstat(file.fileno()).st_size, len(raw))
                raise InputError(
                    f"config is {size / 1024 / 1024:.1f} MiB; a {DEFAULT_CONFIG} over 1 MiB is "
                    "not a config — check that -c points at the config file, and refer to "
                    "datasets and runs by path instead of pasting them in",
                    source=source,
                )
        return raw.decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError(
            "config file not found; create one (see README) or pass -c PATH", source=source
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the config: {error}", source=source) from None


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader's scanner and parser; the composer refuses aliases (*name: an alias bomb
    expands a few hundred bytes into gigabytes) and nesting deeper than MAX_DEPTH."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, yaml.AliasEvent):
            raise _RefusedError(
                f"aliases (*{event.anchor}) are not allowed in {DEFAULT_CONFIG}; write the "
                "value out where it is needed",
                line,
            )
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _RefusedError(
                f"nested more than {MAX_DEPTH} levels deep; a config is a few levels of "
                "mappings and lists",
                line,
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _RefusedError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def parse_yaml(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the Python data of one YAML document, parsed
    once. Aliases, merge keys (<<), duplicate keys and tags other than the standard
    scalar ones are InputErrors naming the line."""
    loader: _ConfigLoader | None = None
    try:
        loader = _ConfigLoader(text)
        root = loader.get_single_node()
        if root is None:
            return None, None
        duplicates: list[tuple[int, str]] = []
        data = _build(root, (), loader, duplicates)
    except _RefusedError as refused:
        raise InputError(str(refused), source=source, line=refused.line) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(
            f"YAML syntax error: {error.problem or error}", source=source, line=line
        ) from None
    except yaml.YAMLError as error:  # ReaderError: a control character
        position = getattr(error, "position", None)
        line = text.count("\n", 0, position) + 1 if isinstance(position, int) else None
        character = getattr(error, "character", None)
        what = f"character U+{character:04X}" if isinstance(character, int) else "a character"
        raise InputError(
            f"{what} is not allowed in YAML text; remove it", source=source, line=line
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    if duplicates:
        raise InputError("\n".join(f"{source}:{line}: {message}" for line, message in duplicates))
    return root, data


def _build(
    node: yaml.Node,
    path: tuple[Any, ...],
    loader: _ConfigLoader,
    duplicates: list[tuple[int, str]],
) -> Any:
    """The Python value of `node`, as safe_load would build it, checking keys on the way."""
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_object(node)
    line = node.start_mark.line + 1
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _SEQ_TAG:
            raise _RefusedError(
                f"{_dotted(path)}: tag {node.tag} is not allowed here; remove it", line
            )
        return [_build(item, (*path, i), loader, duplicates) for i, item in enumerate(node.value)]
    if node.tag != _MAP_TAG:
        raise _RefusedError(f"{_dotted(path)}: tag {node.tag} is not allowed here; remove it", line)
    mapping: dict[Any, Any] = {}
    first: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key_line = key_node.start_mark.line + 1
        if key_node.tag == _MERGE_TAG:
            raise _RefusedError(
                f"{_dotted(path)}: merge keys (<<) are not allowed in {DEFAULT_CONFIG}; "
                "write the keys out",
                key_line,
            )
        if not isinstance(key_node, yaml.ScalarNode):
            raise _RefusedError(
                f"{_dotted(path)}: a key must be a plain value such as a name, not a "
                "mapping or a list",
                key_line,
            )
        key = loader.construct_object(key_node)
        try:
            seen = first.get(key)
        except TypeError:  # an unhashable scalar, e.g. !!binary
            raise _RefusedError(f"{_dotted(path)}: key {key!r} cannot be a key", key_line) from None
        if seen is not None:
            duplicates.append(
                (
                    key_line,
                    f"{_dotted(path)}: duplicate key {key!r} (first at line {seen}); keep one",
                )
            )
            continue
        first[key] = key_line
        mapping[key] = _build(value_node, (*path, key), loader, duplicates)
    return mapping


def json_schema() -> dict[str, Any]:
    """The JSON Schema of `retrieval-gate.yaml`, for editor completion."""
    schema = GateConfig.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = DEFAULT_CONFIG
    return schema


def _check_metrics(config: GateConfig, root: yaml.Node | None, source: str) -> GateConfig:
    """`config` with its metric keys read (in `metrics_dialect`, or a `dialect:` prefix) and
    written as our canonical names where a dialect read them; every problem is one error."""
    from retrieval_gate.metrics import parse_metric
    from retrieval_gate.metrics.dialects import notes, split_prefix
    from retrieval_gate.metrics.diversity import DIVERSITY

    dialect = config.metrics_dialect
    problems: list[str] = []
    found: list[str] = []
    seen: dict[str, str] = {}
    metrics: dict[str, MetricGate] = {}
    for key, gate in config.metrics.items():
        line = line_of(root, ("metrics", key))
        where = f"{source}:{line}" if line else source
        try:
            spec = parse_metric(key, dialect=dialect)
            found.extend(f"{where}: metrics.{key}: {note}" for note in notes(key, dialect))
        except MetricError as error:
            problems.append(f"{where}: metrics.{key}: {error}")
            continue
        canonical = str(spec)
        if canonical in seen:
            problems.append(
                f"{where}: metrics.{key}: the same metric as {seen[canonical]!r} ({canonical})"
            )
        seen[canonical] = key
        if spec.measure.integer and gate.max_drop is not None:
            problems.append(f"{where}: metrics.{key}: {_count_drop(canonical, gate)}")
        if spec.name in DIVERSITY and config.dataset.subtopics is None:
            problems.append(
                f"{where}: metrics.{key}: a diversity measure needs subtopic judgments; set "
                "dataset.subtopics to a qrels file 'topic subtopic docno judgment', or drop it"
            )
        translated = dialect is not None or split_prefix(key)[0] is not None
        metrics[canonical if translated else key] = gate
    overrides: dict[str, dict[str, MetricGate]] = {}
    for name, gates in config.slices.overrides.items():
        overrides[name] = {}
        for key, gate in gates.items():
            try:
                spec = parse_metric(key, dialect=dialect)
            except MetricError:  # reported where the overrides are used, as before
                overrides[name][key] = gate
                continue
            if spec.measure.integer and gate.max_drop is not None:
                line = line_of(root, ("slices", "overrides", name, key))
                where = f"{source}:{line}" if line else source
                problems.append(
                    f"{where}: slices.overrides.{name}.{key}: {_count_drop(str(spec), gate)}"
                )
            translated = dialect is not None or split_prefix(key)[0] is not None
            overrides[name][str(spec) if translated else key] = gate
    if problems:
        raise InputError("\n".join(problems))
    slices = config.slices.model_copy(update={"overrides": overrides})
    checked = config.model_copy(update={"metrics": metrics, "slices": slices})
    checked._notes = tuple(found)
    return checked


def _count_drop(canonical: str, gate: MetricGate) -> str:
    return (
        f"{canonical} is a count (docs per query), not on the 0-1 scale, so max_drop "
        f"{gate.max_drop} cannot apply to it; leave it report-only ({canonical}: {{}}), or "
        "set min: a floor in its own units"
    )


def _expand_env(
    value: Any,
    path: tuple[Any, ...],
    root: yaml.Node | None,
    source: str,
    environ: typing.Mapping[str, str],
) -> Any:
    """`${VAR}` and `${VAR:-default}` replaced in every string; an unset VAR is an error."""
    if isinstance(value, dict):
        return {k: _expand_env(v, (*path, k), root, source, environ) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, (*path, i), root, source, environ) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match[1], match[2]
        if name in environ:
            # Any value from the environment may be a credential: never echoed.
            redaction.register(environ[name])
            return environ[name]
        if default is not None:
            return default
        raise InputError(
            f"{_dotted(path)}: environment variable {name} is not set; export it or write "
            f"${{{name}:-default}}",
            source=source,
            line=line_of(root, path),
        )

    return _ENV.sub(substitute, value)


_QUOTES_INPUT = frozenset({"drop_invalid", "bool_not_number"})
"""Error types whose message already says what was written: no `(got ...)` after them."""


def _describe_errors(error: ValidationError, root: yaml.Node | None, source: str) -> str:
    lines = []
    for item in error.errors():
        loc = tuple(item["loc"])
        line = line_of(root, loc)
        where = f"{source}:{line}" if line else source
        field = _dotted(loc)
        if item["type"] == "extra_forbidden":
            allowed = _fields_at(loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            listing = f" Allowed here: {', '.join(allowed)}." if allowed else ""
            lines.append(f"{where}: {field}: unknown key{hint}{listing}")
        elif item["type"] == "missing":
            lines.append(f"{where}: {field}: required but missing")
        elif item["type"] in ("union_tag_invalid", "union_tag_not_found"):
            line = line_of(root, (*loc, "type"))
            where = f"{source}:{line}" if line else source
            context = item.get("ctx") or {}
            tag = context.get("tag")
            expected = context.get("expected_tags", "")
            what = f"unknown type {tag!r}" if tag else "no type given"
            lines.append(f"{where}: {field}.type: {what}; available: {expected}")
        else:
            given = item.get("input")
            quiet = isinstance(given, dict | list) or item["type"] in _QUOTES_INPUT
            shown = "" if quiet else f" (got {_shorten(repr(given))})"
            lines.append(f"{where}: {field}: {item['msg']}{shown}")
    return "invalid config:\n  " + "\n  ".join(lines)


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text):,} characters)"


def _dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at `loc`; parts YAML does not have (union tags) skip."""
    node = root
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    line = key.start_mark.line + 1
                    node = value
                    break
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
    return line


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at `loc` in the schema (for did-you-mean), best effort."""
    annotation: Any = GateConfig
    for part in loc:
        model = _model_in(annotation, part)
        if model is None:
            return []
        if isinstance(part, str) and part in model.model_fields:
            annotation = model.model_fields[part].annotation
        elif model is not annotation:
            annotation = model
    model = _model_in(annotation, None)
    return (
        sorted((field.alias or name) for name, field in model.model_fields.items()) if model else []
    )


def _model_in(annotation: Any, tag: Any) -> type[BaseModel] | None:
    """The pydantic model inside `annotation` (through Optional, Annotated, unions by tag)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _model_in(args[0], tag)
    if origin in (typing.Union, types.UnionType):
        models = [m for m in (_model_in(a, None) for a in args) if m is not None]
        for model in models:
            field = model.model_fields.get("type")
            if field is not None and tag in typing.get_args(field.annotation):
                return model
        return models[0] if len(models) == 1 else None
    if origin in (dict, list) and args:
        return _model_in(args[-1], tag)
    return None
