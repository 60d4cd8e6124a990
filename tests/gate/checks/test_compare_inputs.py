"""What compare refuses before any test runs, through the command line."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS


def test_a_metric_computed_past_any_real_value_is_refused_naming_it(tmp_path: Path) -> None:
    # Gains of 1e300 make a dcg whose squares overflow a float: refused, not tested.
    tiny = Path(shutil.copytree(CONFIGS / "tiny", tmp_path / "tiny"))
    config = tiny / "retrieval-gate.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("  ap@10: {}\n", "  ap@10: {}\n  dcg(gains=1:1e300;2:1e300;3:1e300)@10: {}\n"),
        encoding="utf-8",
    )
    assert run_cli("baseline", "-c", config, "--force").ret == 0
    code, _, err = run_cli("check", "-c", config, "--no-reports")
    assert code == 2, err
    assert "error: baseline scores of dcg(gains=1:1" in err
    assert (
        "e+300, past 1e+15 either way, where the gate's statistics would overflow; give the "
        "metric smaller gains or grades"
    ) in err
