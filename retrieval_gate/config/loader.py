"""Loading `retrieval-gate.yaml`: safe YAML, `${VAR}` expansion, errors naming line and field."""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ValidationError

from retrieval_gate.config import DEFAULT_CONFIG
from retrieval_gate.config.check_keys import kind_of
from retrieval_gate.config.columns import (
    OWN_UNITS,
    RELEVANCE,
    Column,
    convertible,
    operational_column,
)
from retrieval_gate.config.drops import shorten
from retrieval_gate.config.evaluators import (
    evaluator_column,
    evaluator_key,
    evaluator_name_problem,
    evaluator_problem,
)
from retrieval_gate.config.schema import GateConfig, MetricGate
from retrieval_gate.core import redaction
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.errors import InputError, MetricError

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
MAX_CONFIG_BYTES = 1024 * 1024
MAX_DEPTH = 64


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
        with regular_file(path).open("rb") as file:
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
            "config file not found; write one with `retrieval-gate init` or pass -c PATH",
            source=source,
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
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        try:
            return loader.construct_object(node)
        except ValueError:  # an int of more digits than Python converts (4,300)
            digits = sum(map(str.isdigit, str(node.value)))
            raise _RefusedError(
                f"{_dotted(path)}: a number of {digits} digits; no setting needs more than a "
                "few: write the value the setting asks for",
                line,
            ) from None
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


def _check_metrics(config: GateConfig, root: yaml.Node | None, source: str) -> GateConfig:
    """`config` with its metric keys read (in `metrics_dialect`, or a `dialect:` prefix) and
    written as our canonical names where a dialect read them; every problem is one error."""
    from retrieval_gate.metrics.dialects import split_prefix
    from retrieval_gate.metrics.diversity import DIVERSITY
    from retrieval_gate.metrics.explain import notes

    dialect = config.metrics_dialect
    problems: list[str] = []
    found: list[str] = []
    seen: dict[str, str] = {}
    metrics: dict[str, MetricGate] = {}
    problems.extend(_evaluator_problems(config, root, source))
    problems.extend(_assisted_problems(config, root, source))
    problems.extend(_quantile_rule_problems(config, root, source))
    for key, gate in config.metrics.items():
        line = line_of(root, ("metrics", key))
        where = f"{source}:{line}" if line else source
        if evaluator_key(key) is not None:
            problem = evaluator_problem(key, config.evaluators)
            column = evaluator_column(key, config.evaluators)
            found_problems = [problem] if problem else threshold_problems(gate, column or RELEVANCE)
            problems.extend(f"{where}: metrics.{key}: {p}" for p in found_problems)
            metrics[key] = gate
            continue
        column = operational_column(key)
        if column is not None:
            found_problems = [*threshold_problems(gate, column), *_ceiling_problems(gate, column)]
            problems.extend(f"{where}: metrics.{key}: {p}" for p in found_problems)
            metrics[key] = gate
            continue
        problems.extend(f"{where}: metrics.{key}: {p}" for p in threshold_problems(gate, RELEVANCE))
        try:
            spec, canonical, named = _metric_key(key, dialect)
            found.extend(f"{where}: metrics.{key}: {note}" for note in notes(named, dialect))
        except MetricError as error:
            problems.append(f"{where}: metrics.{key}: {error}")
            continue
        if canonical in seen:
            problems.append(
                f"{where}: metrics.{key}: the same metric as {seen[canonical]!r} ({canonical})"
            )
        seen[canonical] = key
        if spec.measure.integer and gate.max_drop is not None:
            problems.append(f"{where}: metrics.{key}: {_count_drop(canonical, gate)}")
        problems.extend(f"{where}: metrics.{key}: {p}" for p in _floor_problems(gate, spec))
        if spec.name in DIVERSITY and config.dataset.subtopics is None:
            problems.append(
                f"{where}: metrics.{key}: a diversity measure needs subtopic judgments; set "
                "dataset.subtopics to a qrels file 'topic subtopic docno judgment', or drop it"
            )
        translated = dialect is not None or split_prefix(named)[0] is not None
        metrics[canonical if translated else key] = gate
    overrides: dict[str, dict[str, MetricGate]] = {}
    for name, gates in config.slices.overrides.items():
        overrides[name] = {}
        for key, gate in gates.items():
            line = line_of(root, ("slices", "overrides", name, key))
            where = f"{source}:{line}" if line else source
            field = f"{where}: slices.overrides.{name}.{key}"
            column = operational_column(key)
            if column is not None:
                problems.extend(f"{field}: {p}" for p in _ceiling_problems(gate, column))
            if evaluator_key(key) is not None or column is not None:
                overrides[name][key] = gate
                continue
            try:
                spec, canonical, named = _metric_key(key, dialect)
            except MetricError:  # reported where the overrides are used, as before
                overrides[name][key] = gate
                continue
            if spec.measure.integer and gate.max_drop is not None:
                problems.append(f"{field}: {_count_drop(canonical, gate)}")
            problems.extend(f"{field}: {p}" for p in _floor_problems(gate, spec))
            translated = dialect is not None or split_prefix(named)[0] is not None
            overrides[name][canonical if translated else key] = gate
    if problems:
        raise InputError("\n".join(problems))
    slices = config.slices.model_copy(update={"overrides": overrides})
    checked = config.model_copy(update={"metrics": metrics, "slices": slices})
    checked._notes = tuple(found)
    return checked


def _ceiling_problems(gate: MetricGate, column: Column) -> list[str]:
    """A latency or cost ceiling below 0 would fail every run, however fast or cheap."""
    if gate.max is None or gate.max >= 0:
        return []
    measured = "latency" if column.unit == "ms" else "cost"
    return [
        f"max: {gate.max:g} is below 0, where no {measured} is, so the check could never "
        "pass; write a ceiling of 0 or more"
    ]


def _floor_problems(gate: MetricGate, spec: Any) -> list[str]:
    """A floor (min) outside the metric's range (`MetricSpec.bounds`): below it the floor
    can never fail, above it the check can never pass; both are refused."""
    if gate.min is None:
        return []
    low, high = spec.bounds
    if gate.min < low:
        return [
            f"min: {gate.min:g} is below {low:g}, the least {spec} can be, so the floor could "
            "never fail; write a floor within its range, or remove it"
        ]
    if gate.min > high:
        return [
            f"min: {gate.min:g} is above {high:g}, the most {spec} can be, so the check could "
            "never pass; write a floor within its range"
        ]
    return []


def threshold_problems(gate: MetricGate, column: Column) -> list[str]:
    """What is wrong with `gate`'s thresholds for a check of `column`: the bound and the
    change for the worse must face the way that is worse, and be in the column's units."""
    problems = []
    if column.direction == "higher" and (gate.max_increase is not None or gate.max is not None):
        problems.append(
            "higher is better here: write max_drop (the largest tolerated drop) and min (a "
            "floor), not max_increase or max"
        )
    if column.direction == "lower" and (gate.max_drop is not None or gate.min is not None):
        problems.append(
            "lower is better here: write max_increase (the largest tolerated increase, e.g. "
            "20%) and max (a ceiling), not max_drop or min"
        )
    if gate.max_drop is not None and gate.max_increase is not None:
        problems.append("write one of max_drop and max_increase")
    worse = gate.worse_by
    if worse is None or worse.relative:
        return problems
    if column.bounded and worse.unit:
        problems.append(
            f"{worse} is in {worse.unit}, but this check is on the 0-1 scale: write points "
            "(2pt, 0.02) or a percentage of the baseline (3%)"
        )
    elif not column.bounded and not worse.unit and worse.text.endswith("pt"):
        shown = "plain numbers" if column.unit == OWN_UNITS else column.unit
        problems.append(
            f"{worse} is in points of the 0-1 scale, but this check is in {shown}: write the "
            f"amount in its units{'' if column.unit == OWN_UNITS else f' (50{column.unit})'} "
            "or a percentage of the baseline (20%)"
        )
    elif worse.unit and column.unit != OWN_UNITS and not convertible(worse.unit, column.unit):
        problems.append(
            f"{worse} is in {worse.unit}, but this check is in {column.unit}: write it in "
            f"{column.unit} or as a percentage of the baseline (20%)"
        )
    return problems


def _metric_key(key: str, dialect: str | None) -> tuple[Any, str, str]:
    """A metrics key's metric spec, its canonical check name, and the metric as written
    (`recall@100` of `candidates:recall@100`, a first-stage check: config/stages.py)."""
    from retrieval_gate.config.stages import check_metric, stage_metric

    spec, canonical = check_metric(key, dialect)
    return spec, canonical, stage_metric(key) or key


def _evaluator_problems(config: GateConfig, root: yaml.Node | None, source: str) -> list[str]:
    """An error per evaluator named as something a metrics key prefix already means, and
    for a config of evaluator checks alone (check --sequential refuses them: check_plan.py)."""
    problems = []
    for name in config.evaluators:
        problem = evaluator_name_problem(name)
        if problem:
            problems.append(f"{_at(root, source, 'evaluators', name)}: {problem}")
    checks = [key for key in config.metrics if evaluator_key(key) is not None]
    if checks and len(checks) == len(config.metrics):
        where = _at(root, source, "metrics", checks[0])
        problems.append(
            f"{where}: only evaluator checks; gate a relevance metric beside them (ndcg@10: "
            "{} reports one without gating it): the retriever's rankings are scored on it"
        )
    return problems


def _assisted_problems(config: GateConfig, root: yaml.Node | None, source: str) -> list[str]:
    """gate.labels: human+llm re-estimates ranking metrics from the judge's labels: an error
    for the first check of another kind (it has no labels to re-estimate, or stored lists)."""
    if not config.gate.uses_llm_labels:
        return []
    others = [key for key in config.metrics if kind_of(key) != "ranking"]
    if not others:
        return []
    where = _at(root, source, "metrics", others[0])
    return [
        f"{where}: gate.labels: human+llm re-estimates the ranking metrics from the judge's "
        f"labels and takes no {kind_of(others[0])} checks yet ({', '.join(others)}): use "
        "gate.labels: human, or gate them in a config of their own"
    ]


def _quantile_rule_problems(config: GateConfig, root: yaml.Node | None, source: str) -> list[str]:
    """The stricter rules test a mean moved by max_drop: an error for the first quantile
    check (latency_p95) they would judge with a mean's test."""
    if config.gate.rule == "significant-drop":
        return []
    quantiles = [
        key
        for key, gate in config.metrics.items()
        if _QUANTILE.match(key) and gate.worse_by is not None
    ]
    if not quantiles:
        return []
    where = _at(root, source, "metrics", quantiles[0])
    return [
        f"{where}: gate.rule: {config.gate.rule} tests a mean moved by the threshold, and "
        f"{quantiles[0]} is a quantile, whose test is against no change only: use gate.rule: "
        "significant-drop, gate latency_mean instead, or leave the quantile report-only ({})"
    ]


_QUANTILE = re.compile(r"^latency_p[0-9]+$")


def _at(root: yaml.Node | None, source: str, section: str, key: str) -> str:
    """`source:line: section.key` for an error about `key` of the config's `section`, or
    `source: section` when the key's line is not known."""
    line = line_of(root, (section, key))
    return f"{source}:{line}: {section}.{key}" if line else f"{source}: {section}"


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
            shown = "" if quiet else f" (got {shorten(repr(given))})"
            lines.append(f"{where}: {field}: {item['msg']}{shown}")
    return "invalid config:\n  " + "\n  ".join(lines)


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
