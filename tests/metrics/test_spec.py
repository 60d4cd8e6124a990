"""Metric specs: any spelling parses to a value whose canonical string parses back to it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_gate.metrics import REGISTRY, MetricSpec, parse_metric
from retrieval_gate.metrics.spec import ALIASES, format_value


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """A valid metric written with random case, aliases, defaults and spacing."""
    measure = REGISTRY[draw(st.sampled_from(sorted(REGISTRY)))]
    name = draw(st.sampled_from([measure.name, *measure.aliases]))
    name = "".join(c.upper() if draw(st.booleans()) else c for c in name)
    params = []
    for param in measure.params:
        if param.default is not None and draw(st.booleans()):
            continue
        if param.kind == "choice":
            value: str = draw(st.sampled_from(param.choices))
        elif param.kind == "int":
            value = str(draw(st.integers(0, 4)))
        elif param.kind == "gains":
            value = draw(st.sampled_from(["1:3;2:9", "2:9;1:3.0", "0:1", "4:4.5;0:0"]))
        elif param.name in ("p", "alpha", "beta"):
            value = format_value(draw(st.sampled_from([0.5, 0.8, 0.95, 0.9])))
        else:
            value = str(draw(st.integers(1, 5)))
        params.append(f"{param.name}{draw(st.sampled_from(['=', ' = ']))}{value}")
    text = name + (f"({', '.join(params)})" if params else "")
    wants_k = measure.cutoff == "required" or (measure.cutoff == "optional" and draw(st.booleans()))
    return text + (f"@{draw(st.integers(1, 1000))}" if wants_k else "")


@settings(max_examples=500, derandomize=True)
@given(spellings())
def test_canonical_string_round_trips(text: str) -> None:
    spec = parse_metric(text)
    canonical = str(spec)
    assert parse_metric(canonical) == spec
    assert canonical == canonical.lower()
    assert hash(parse_metric(canonical)) == hash(spec)


def test_specs_are_small_ordered_values() -> None:
    assert (
        parse_metric("MAP@100")
        == parse_metric("ap(rel=1)@100")
        == MetricSpec("ap", (("rel", 1),), 100)
    )
    assert sorted([parse_metric("recall@10"), parse_metric("ap@5")])[0].name == "ap"
    assert set(ALIASES.values()) <= set(REGISTRY)
