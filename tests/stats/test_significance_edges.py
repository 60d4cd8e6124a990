"""The gate at the edges of its statistics: p-values down to denormals, alpha far below 1e-17."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.stats.significance import _random_bits, interval, paired_t, sign_flip
from tests.helpers.cli import run_cli


def write_set(root: Path, queries: int, dropped: float, gate: str = "{}") -> Path:
    """`queries` queries with one relevant document each; a.txt ranks it first, b.txt drops it
    out of the top k for a `dropped` share of them; a config over a.txt."""
    rnd = random.Random(1)
    lines = [json.dumps({"id": f"q{i}", "text": f"query {i}"}) for i in range(queries)]
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n")
    (root / "qrels.txt").write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(queries)))
    (root / "a.txt").write_text(
        "".join(f"q{i} Q0 d{i} 1 2.0 a\nq{i} Q0 x{i} 2 1.0 a\n" for i in range(queries))
    )
    (root / "b.txt").write_text(
        "".join(
            f"q{i} Q0 x{i} 1 2.0 b\n" if rnd.random() < dropped else f"q{i} Q0 d{i} 1 2.0 b\n"
            for i in range(queries)
        )
    )
    config = root / "gate.yaml"
    config.write_text(
        "version: 1\nname: edge\n"
        "dataset: {queries: queries.jsonl, qrels: qrels.txt}\n"
        "retriever: {type: run_file, path: a.txt}\n"
        "k: 10\nmetrics:\n  ndcg@10: {max_drop: 2pt}\n"
        f"gate: {gate}\n"
    )
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    return config


def test_a_denormal_p_value_prints_in_every_format(tmp_path: Path) -> None:
    # 1,450 queries that all drop: Hoeffding's bound exp(-n / 2) is about 1e-315, a denormal.
    config = write_set(tmp_path, 1450, dropped=1.0)
    reports = {fmt: tmp_path / f"r.{fmt}" for fmt in ("json", "markdown", "junit", "html")}
    options = [item for fmt, path in reports.items() for item in (f"--{fmt}", str(path))]
    code, out, err = run_cli("check", "-c", str(config), "--run", str(tmp_path / "b.txt"), *options)
    assert code == 1, err
    p_value = json.loads(reports["json"].read_text())["failures"][0]["p_value"]
    assert 0 < p_value < 1e-307
    assert "ndcg@10 fell 100.0 pt (p < 0.001)" in out
    assert "(p < 0.001)" in reports["markdown"].read_text()
    assert "p &lt; 0.001" in reports["html"].read_text() or "< 0.001" in reports["html"].read_text()
    assert (
        "p < 0.001" in reports["junit"].read_text() or "&lt; 0.001" in reports["junit"].read_text()
    )


@pytest.mark.parametrize("test", ["randomization", "t"])
@pytest.mark.parametrize("alpha", ["1e-20", "1e-300"])
def test_an_alpha_far_below_machine_epsilon_decides_or_says_why(
    tmp_path: Path, test: str, alpha: str
) -> None:
    config = write_set(tmp_path, 500, dropped=0.3, gate=f"{{alpha: {alpha}, test: {test}}}")
    code, _, err = run_cli("check", "-c", str(config), "--run", str(tmp_path / "b.txt"), "--quiet")
    assert "internal error" not in err
    if alpha == "1e-20":
        assert code == 1, err  # a 30% drop of 500 queries is far past 1e-20 with either test
    else:
        # 500 queries' smallest sign-flip p is Hoeffding's exp(-250), far above 1e-300; the
        # t-test reaches it only when nearly every query drops alike (150 of them give 7e-41).
        assert code == 2
        assert "the gate could never fail" in err
    for command in ("power", "lint"):
        code, _, err = run_cli(command, "-c", str(config))
        assert code == 0, err


@pytest.mark.parametrize("queries", [12, 40, 1_500])  # exact, Monte Carlo, saddlepoint
def test_huge_differences_are_tested_as_their_unit_would_be(queries: int) -> None:
    # Squares of 1e200 overflow a float; a power of two of the unit changes no bit.
    rng = np.random.default_rng(5)
    diffs = rng.normal(-0.2, 1.0, size=queries)
    huge = diffs * 2.0**700
    small = sign_flip(diffs, resamples=2_000, rng=np.random.default_rng(1))
    large = sign_flip(huge, resamples=2_000, rng=np.random.default_rng(1))
    for name in ("drop", "rise", "bound"):
        assert np.array_equal(getattr(large, name), getattr(small, name)), name
    assert paired_t(huge) == paired_t(diffs)
    for t_test in (False, True):
        low, high = interval(diffs, t_test=t_test) or (0.0, 0.0)
        assert interval(huge, t_test=t_test) == (low * 2.0**700, high * 2.0**700)


@pytest.mark.parametrize("queries", [12, 40, 1_500])
def test_huge_rises_alone_are_tested_as_their_unit_would_be(queries: int) -> None:
    # The unit comes from the largest |value| of either sign: here every value is above 0.
    diffs = np.random.default_rng(6).uniform(0.1, 1.0, size=queries)
    huge = diffs * 2.0**700
    small = sign_flip(diffs, resamples=2_000, rng=np.random.default_rng(1))
    large = sign_flip(huge, resamples=2_000, rng=np.random.default_rng(1))
    for name in ("drop", "rise", "bound"):
        assert np.array_equal(getattr(large, name), getattr(small, name)), name
    assert paired_t(huge) == paired_t(diffs)
    low, high = interval(diffs) or (0.0, 0.0)
    assert interval(huge) == (low * 2.0**700, high * 2.0**700)


@pytest.mark.parametrize("n", [16, 17])
def test_random_signs_take_one_byte_of_the_stream_per_8_queries(n: int) -> None:
    # Seeded p-values are these bits: a byte more per row would move every one after it.
    found = _random_bits(np.random.default_rng(3), 5, n)
    stream = np.random.default_rng(3)
    packed = stream.integers(0, 256, size=(5, (n + 7) // 8), dtype=np.uint8)
    assert found.tolist() == np.unpackbits(packed, axis=1, count=n).astype(float).tolist()
