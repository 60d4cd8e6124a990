"""Config loading: a good file loads; every kind of bad file is exit 2 naming line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import json_schema
from retrieval_gate.errors import InputError
from tests.helpers.cli import run_cli

GOOD = """\
version: 1
name: support-search
dataset:
  queries: eval/queries.jsonl
  qrels: eval/qrels.tsv
retriever:
  type: http
  url: ${SEARCH_URL:-http://127.0.0.1:9}/search
  headers: {Authorization: "Bearer ${TOKEN}"}
k: 10
metrics:
  NDCG@10:   {max_drop: 2pt}
  recall@10: {max_drop: 0.05, min: 0.6}
  mrr@10:    {max_drop: 3%}
slices:
  by: [intent, query_length]
  query_length: {bins: [1, 3, 6]}
  min_size: 20
gate: {alpha: 0.05, correction: holm, resamples: 10000, seed: 0}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(InputError) as caught:
        load(write(tmp_path, text), environ={"TOKEN": "t"} if environ is None else environ)
    return str(caught.value)


def test_a_good_config_loads_with_thresholds_and_env(tmp_path: Path) -> None:
    config = load(write(tmp_path, GOOD), environ={"TOKEN": "secret"})
    assert config.name == "support-search"
    assert config.retriever.type == "http"
    assert config.retriever.url == "http://127.0.0.1:9/search"  # type: ignore[union-attr]
    assert config.retriever.headers == {"Authorization": "Bearer secret"}  # type: ignore[union-attr]
    drops = {name: gate.max_drop for name, gate in config.metrics.items()}
    assert drops["NDCG@10"] is not None
    assert (drops["NDCG@10"].value, drops["NDCG@10"].relative) == (0.02, False)
    assert drops["recall@10"] is not None
    assert drops["recall@10"].value == 0.05
    assert str(drops["recall@10"]) == "5pt"
    assert drops["mrr@10"] is not None
    assert (drops["mrr@10"].value, drops["mrr@10"].relative) == (0.03, True)
    assert config.metrics["recall@10"].min == 0.6
    assert config.slices.query_length.bins == [1, 3, 6]
    assert config.resolve("eval/q.jsonl") == tmp_path / "eval" / "q.jsonl"


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    message = error_of(tmp_path, "version: 1\ndataset:\n  queries: [a, b\nk: 10\n")
    assert "YAML syntax error" in message
    assert "retrieval-gate.yaml:4" in message


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("  min_size: 20", "  min_sise: 20"))
    assert "retrieval-gate.yaml:18: slices.min_sise: unknown key; did you mean 'min_size'?" in (
        message
    )


def test_unknown_key_inside_an_adapter_and_a_metric(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("  url:", "  urll:"))
    assert ":8: retriever.http.urll: unknown key; did you mean 'url'?" in message
    message = error_of(tmp_path, GOOD.replace("{max_drop: 2pt}", "{max_dorp: 2pt}"))
    assert ":12: metrics.NDCG@10.max_dorp: unknown key; did you mean 'max_drop'?" in message


def test_wrong_types_name_field_and_value(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("k: 10", "k: ten"))
    assert ":10: k: Input should be a valid integer" in message
    assert "(got 'ten')" in message
    message = error_of(tmp_path, GOOD.replace("max_drop: 2pt", "max_drop: lots"))
    assert ":12: metrics.NDCG@10.max_drop: 'lots' is not a drop; write points" in message
    message = error_of(tmp_path, GOOD.replace("bins: [1, 3, 6]", "bins: [3, 1]"))
    assert "strictly increasing" in message


def test_missing_required_field(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("version: 1\n", ""))
    assert "version: required but missing" in message


def test_unknown_metric_names_its_line(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("recall@10:", "recal@10:"))
    assert "retrieval-gate.yaml:13: metrics.recal@10: unknown metric 'recal'" in message
    assert "did you mean 'recall'" in message


def test_the_same_metric_twice_is_an_error(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("mrr@10:", "rr@10: {}\n  MRR@10:"))
    assert "the same metric as 'rr@10' (rr@10)" in message


def test_unknown_adapter_type_lists_the_known_ones(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("type: http", "type: elastic"))
    assert ":7: retriever.type: unknown type 'elastic'; available:" in message
    for known in ("http", "python", "command", "run_file", "bm25"):
        assert known in message


def test_unset_environment_variable_is_an_error_with_its_line(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD, environ={})
    assert ":9: retriever.headers.Authorization: environment variable TOKEN is not set" in (message)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="config file not found"):
        load(tmp_path / "nope.yaml")


def test_schema_is_json_schema_with_every_adapter() -> None:
    schema = json_schema()
    assert schema["title"] == "retrieval-gate.yaml"
    text = json.dumps(schema)
    for adapter in ("http", "python", "command", "run_file", "bm25", "langchain"):
        assert f'"{adapter}"' in text


def test_cli_config_schema_and_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", "t")
    code, out, _ = run_cli("config", "schema")
    assert code == 0
    assert json.loads(out)["title"] == "retrieval-gate.yaml"
    bad = write(tmp_path, GOOD.replace("k: 10", "k: -1"))
    code, _, err = run_cli("config", "validate", "-c", str(bad))
    assert code == 2
    assert ":10: k: Input should be greater than or equal to 1" in err


def test_duplicate_keys_name_both_lines(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("  mrr@10:", "  NDCG@10: {}\n  mrr@10:"))
    assert "retrieval-gate.yaml:14: metrics: duplicate key 'NDCG@10' (first at line 12)" in message
    message = error_of(tmp_path, GOOD + "k: 20\n")
    assert "retrieval-gate.yaml:20: (top level): duplicate key 'k' (first at line 10)" in message


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    # Refused at the first alias, line 2, before anything is expanded: 9^10 strings would
    # never fit in memory (the previous loader ran out of it), so reaching this line at all
    # is the proof; no wall-clock limit.
    message = error_of(tmp_path, "\n".join(levels) + "\n" + GOOD)
    assert "retrieval-gate.yaml:2: aliases (*a0) are not allowed in retrieval-gate.yaml" in message


def test_merge_keys_and_aliases_are_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace("gate: {", "gate: {<<: {seed: 1}, "))
    assert ":19: gate: merge keys (<<) are not allowed" in message
    message = error_of(tmp_path, GOOD.replace("k: 10", "k: &k 10\nseed_k: *k"))
    assert ":11: aliases (*k) are not allowed" in message


def test_parse_once_and_refuse_unsafe_tags(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD + "extra: !!python/object:os.system {}\n")
    assert ":20: extra: tag tag:yaml.org,2002:python/object:os.system is not allowed" in message
    message = error_of(tmp_path, "a: " + "[" * 200 + "]" * 200 + "\n")
    assert ":1: nested more than 64 levels deep" in message
    message = error_of(tmp_path, GOOD + "\x01\n")
    assert ":20: character U+0001 is not allowed in YAML text" in message


def test_a_config_over_1_mib_is_refused_unparsed(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD + "#" + "x" * (50 * 1024 * 1024) + "\n")
    assert "retrieval-gate.yaml: config is 50.0 MiB; a retrieval-gate.yaml over 1 MiB is not" in (
        message
    )


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("k: 10", "k: true", ":10: k: expected a number, got a boolean"),
        ("min_size: 20", "min_size: yes", ":18: slices.min_size: expected a number, got a boolean"),
        ("alpha: 0.05", "alpha: true", ":19: gate.alpha: expected a number, got a boolean"),
        ("[1, 3, 6]", "[on, 3]", ":17: slices.query_length.bins: expected a number, got a bool"),
        (
            "max_drop: 0.05, min: 0.6",
            "min: .inf",
            ":13: metrics.recall@10.min: Input should be a finite",
        ),
        ("alpha: 0.05", "alpha: .nan", ":19: gate.alpha: Input should be a finite number"),
        (
            "max_drop: 2pt",
            "max_drop: .inf",
            ":12: metrics.NDCG@10.max_drop: inf is not a finite drop; write points",
        ),
        ("max_drop: 2pt", "max_drop: true", ":12: metrics.NDCG@10.max_drop:"),
    ],
)
def test_booleans_are_not_numbers_and_numbers_are_finite(
    tmp_path: Path, old: str, new: str, where: str
) -> None:
    assert old in GOOD
    assert where in error_of(tmp_path, GOOD.replace(old, new))


DROP_FORMS = (
    "write points (2pt, 0.02) or a percentage of the baseline (3%), or for a check in its own "
    "units the number and its unit (50ms, 0.5 stars)"
)


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("six", f"'six' is not a drop; {DROP_FORMS}"),
        ("150%", "150% would allow a drop past the whole metric; a relative drop is at most 100%"),
        (
            "300pt",
            "300pt would allow a drop past the whole metric; a drop in points is at most "
            "100pt (the whole 0-1 scale)",
        ),
        (
            "1.5",
            "1.5 would allow a drop of 150pt, past the whole metric (a bare number is a "
            "fraction of the 0-1 scale); write 1.5pt for 1.5 points, 1.5% for a share "
            "of the baseline, or the unit of a check in its own units (1.5ms)",
        ),
        ("-2pt", f"-2pt is negative; a drop is 0 or more: {DROP_FORMS}"),
        ("-0.02", f"-0.02 is negative; a drop is 0 or more: {DROP_FORMS}"),
        ("'{x}'", f"'{{x}}' is not a drop; {DROP_FORMS}"),
    ],
)
def test_a_bad_drop_says_what_is_wrong_and_what_to_write(
    tmp_path: Path, written: str, said: str
) -> None:
    message = error_of(tmp_path, GOOD.replace("max_drop: 2pt", f"max_drop: {written}"))
    where = f"{tmp_path / 'retrieval-gate.yaml'}:12"
    assert message.splitlines()[1:] == [f"  {where}: metrics.NDCG@10.max_drop: {said}"]
    assert "(got" not in message  # what was written is quoted once


def test_a_bad_drop_in_a_slice_override_names_its_line(tmp_path: Path) -> None:
    override = "  overrides:\n    intent=billing:\n      recall@10: {max_drop: 120%}\n"
    text = GOOD.replace("  min_size: 20\n", "  min_size: 20\n" + override)
    message = error_of(tmp_path, text)
    assert (
        ":21: slices.overrides.intent=billing.recall@10.max_drop: 120% would allow a drop past "
        "the whole metric" in message
    )


def test_drops_at_the_edges_still_load(tmp_path: Path) -> None:
    edges = [("100%", 1.0, True), ("100pt", 1.0, False), ("1", 1.0, False), ("0pt", 0.0, False)]
    for written, value, relative in edges:
        text = GOOD.replace("max_drop: 2pt", f"max_drop: {written}")
        drop = load(write(tmp_path, text), environ={"TOKEN": "t"}).metrics["NDCG@10"].max_drop
        assert drop is not None
        assert (drop.value, drop.relative) == (value, relative), written


def test_ints_still_count_as_floats_and_strings_as_drops(tmp_path: Path) -> None:
    text = GOOD.replace("max_drop: 0.05, min: 0.6", "max_drop: 0, min: 0").replace(
        "seed: 0", "seed: 7"
    )
    config = load(write(tmp_path, text), environ={"TOKEN": "t", "K": "20"})
    assert config.metrics["recall@10"].min == 0.0
    assert config.metrics["NDCG@10"].max_drop is not None
    assert config.metrics["NDCG@10"].max_drop.value == 0.02
    assert config.gate.seed == 7
    config = load(
        write(tmp_path, GOOD.replace("k: 10", "k: ${K}")), environ={"TOKEN": "t", "K": "20"}
    )
    assert config.k == 20


@pytest.mark.parametrize(
    "name", ["../x", "a/b", "", ".hidden", "a b", "a\tb", "x" * 65, "x" * 1_000_000]
)
def test_the_name_is_a_short_slug(tmp_path: Path, name: str) -> None:
    message = error_of(tmp_path, GOOD.replace("name: support-search", f"name: {json.dumps(name)}"))
    assert (
        ":2: name: the name names folders, files and the PR comment, so it must be a short slug: "
        "1-64 letters, digits, '-', '_' or '.', not starting with '.'" in message
    )
    assert len(message) < 1000


@pytest.mark.parametrize("name", ["a", "support-search", "v1.2_beta", "-x", "x" * 64])
def test_slug_names_load(tmp_path: Path, name: str) -> None:
    text = GOOD.replace("name: support-search", f"name: {json.dumps(name)}")
    assert load(write(tmp_path, text), environ={"TOKEN": "t"}).name == name


def test_a_utf8_bom_is_accepted_and_lines_stay_right(tmp_path: Path) -> None:
    path = tmp_path / "retrieval-gate.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert load(path, environ={"TOKEN": "t"}).name == "support-search"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.replace("k: 10", "k: ten").encode())
    with pytest.raises(InputError, match=r"retrieval-gate\.yaml:10: k: Input should be"):
        load(path, environ={"TOKEN": "t"})


def test_cli_validate_refuses_duplicates_and_bombs_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", "t")
    for text, expected in [
        (GOOD + "k: 20\n", ":20: (top level): duplicate key 'k' (first at line 10)"),
        ("a: &a [x, x]\nb: [*a, *a]\n" + GOOD, ":2: aliases (*a) are not allowed"),
        (GOOD.replace("k: 10", "k: true"), ":10: k: expected a number, got a boolean"),
    ]:
        path = write(tmp_path, text)
        code, _, err = run_cli("config", "validate", "-c", str(path))
        assert code == 2
        assert expected in err


def test_a_hostile_other_level_is_named_with_its_line_and_never_a_workflow_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", "t")
    hostile = '  qrels: eval/qrels.tsv\n  other_level: "::error::owned\\u0007"\n'
    bad = write(tmp_path, GOOD.replace("  qrels: eval/qrels.tsv\n", hostile))
    code, out, err = run_cli("config", "validate", "-c", str(bad))
    assert code == 2
    assert out == ""
    assert ":6: dataset.other_level: Input should be 'report', 'gate' or 'off'" in err
    assert "\x07" not in err
    assert not any(line.startswith("::") for line in err.splitlines())
