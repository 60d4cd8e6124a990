"""`retrieval-gate power --claim`: the command, its config and baseline, hostile input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from retrieval_gate.gate.baseline.file import read_baseline
from tests.helpers.builders import EXAMPLE_BASELINE
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

EXAMPLE = CONFIGS / "example.yaml"


def _baseline_sd(metric: str) -> float:
    return float(read_baseline(CONFIGS / EXAMPLE_BASELINE).scores[metric].std(ddof=1))


def test_with_the_example_the_spread_is_the_baselines_first_metric() -> None:
    code, out, err = run_cli("power", "--claim", "-2pt", "--n", "131", "-c", EXAMPLE, "-f", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    sd = _baseline_sd("ndcg@10")
    assert document["sd"] == pytest.approx(sd, rel=1e-12)
    assert document["sd_source"] == "baseline:ndcg@10"
    assert document["t_p"] == pytest.approx(stats.t.sf(0.02 / (sd / math.sqrt(131)), 130), rel=1e-9)
    assert document["within_detectable"] is False  # 2pt is below the ~4.9pt 131 queries detect
    # Past 10,000 resamples' resolution only Hoeffding's bound exp(-n / 2) is that small.
    assert document["smallest_p_sign_flip"] == pytest.approx(math.exp(-131 / 2))


def test_metric_picks_the_baseline_metric_and_sd_overrides_it() -> None:
    code, out, _ = run_cli(
        "power", "--claim", "+1.5pt", "--n", "50", "-c", EXAMPLE, "--metric", "R@10", "-f", "json"
    )
    assert code == 0
    assert json.loads(out)["sd"] == pytest.approx(_baseline_sd("recall@10"))
    code, out, _ = run_cli(
        "power", "--claim", "+1.5pt", "--n", "50", "-c", EXAMPLE, "--sd", "0.1", "-f", "json"
    )
    assert code == 0
    assert json.loads(out)["sd"] == 0.1
    assert json.loads(out)["sd_source"] == "--sd"


def test_text_without_a_spread_says_what_cannot_be_said(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no retrieval-gate.yaml: the defaults, no baseline
    code, out, err = run_cli("power", "--claim", "-2pt", "--n", "13")
    assert (code, err) == (0, "")
    assert "p >= 0.000122 " in out  # 2^-13: every sign vector of 13 queries, all drawn
    assert "no lower bound without a spread" in out
    assert len(out.splitlines()) == 4


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--claim", "nan", "--n", "10"], "--claim"),
        (["--claim", "inf", "--n", "10"], "--claim"),
        (["--claim=-2pt\n::error::pwned", "--n", "10"], "--claim"),
        (["--claim", "-2pt"], "--claim needs --n"),
        (["--claim", "-2pt", "--n", "1"], "--n"),
        (["--claim", "-2pt", "--n", "9" * 400], "--n"),
        (["--claim", "-2pt", "--n", "1e99"], "--n"),
        (["--claim", "-2pt", "--n", "NaN"], "--n"),
        (["--claim", "-2pt", "--n", "10", "--sd", "-0.1"], "--sd"),
        (["--claim", "-2pt", "--n", "10", "--sd", "inf"], "--sd"),
        (["--claim", "-2pt", "--n", "10", "--sd", "x"], "--sd"),
        (
            [
                "--claim",
                "-2pt",
                "--n",
                "10",
                "-c",
                str(EXAMPLE),
                "--metric",
                "a\x1b[2J\n::error::b",
            ],
            "--metric",
        ),
        (["--claim", "-2pt", "--n", "10", "-c", str(EXAMPLE), "--metric", "map"], "--metric"),
        (["--n", "10", "-c", str(EXAMPLE)], "--n goes with --claim"),
    ],
)
def test_bad_input_is_one_clean_line_naming_the_option(argv: list[str], option: str) -> None:
    code, out, err = run_cli("power", *argv)
    assert code == 2
    assert out == ""
    assert err.startswith(f"retrieval-gate: error: {option}")
    assert err.count("\n") == 1
    assert "\x1b" not in err
    assert not any(line.startswith("::") for line in err.splitlines())


def test_a_config_without_its_baseline_says_why_there_is_no_spread(tmp_path: Path) -> None:
    config = tmp_path / "gate.yaml"
    text = (CONFIGS / "example.yaml").read_text(encoding="utf-8")
    config.write_text(text.replace("path: example", f"path: {CONFIGS / 'example'}"), "utf-8")
    code, out, err = run_cli("power", "--claim", "-2pt", "--n", "131", "-c", config)
    assert code == 0, err
    assert "no lower bound" in out or "--sd" in out
    assert "no baseline at" in err
    assert "give --sd" in err
