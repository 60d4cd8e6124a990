"""The HTML report read in a real browser: a phone's 400 px and a laptop's 1,280 x 800."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.report import render, validate_result
from tests.helpers.builders import copy_example
from tests.helpers.cli import run_cli
from tests.helpers.judged_example import assisted_documents
from tests.helpers.waiting import GUARD

CHROMIUM = next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
)

# Measured inside the page once laid out, and handed to the page around it: a frame of the
# width under test (headless Chromium's own window is never narrower than 500 px).
PROBE = """<script>
window.addEventListener("load", () => {
  const shown = [...document.querySelectorAll("svg.forest")]
    .filter(e => getComputedStyle(e).display !== "none");
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; };
  window.parent.document.body.setAttribute("data-probe", JSON.stringify({
    width: window.innerWidth,
    height: window.innerHeight,
    page: document.documentElement.scrollWidth,
    forests: shown.map(e => ({box: box(e), intrinsic: e.width.baseVal.value,
                              top: e.getBoundingClientRect().top,
                              layout: e.getAttribute("class")})),
  }));
});
</script>"""


HEIGHT = 800
"""The laptop screen's height: the forest plot starts on the first screen at 1,280 x 800."""
SEEN = 60
"""Pixels of the forest plot that show on that screen at least: its axis and a row."""


def probed(folder: Path, html: str) -> Path:
    """`folder` holding `html` as probe.html, the probe added. The report forbids scripts (its
    Content-Security-Policy): the probe's copy drops it."""
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    (folder / "probe.html").write_text(text.replace("</body>", PROBE + "</body>"))
    return folder


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The regressed example's report as `check --html` writes it, and its human+llm result
    whose checks depend on pairs the judge has not graded (17 label holes)."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs it")
        pytest.skip("chromium is not installed")
    folder = tmp_path_factory.mktemp("layout")
    html = folder / "report.html"
    # A copy: the check writes its other reports beside the config.
    config = str(copy_example(folder / "configs") / "example-regressed.yaml")
    code, _, err = run_cli("check", "-c", config, "--no-cache", "--html", str(html))
    assert code == 1, err
    holed = assisted_documents(tmp_path_factory.mktemp("assisted"))["holed"]
    return {
        "regressed": probed(folder, html.read_text()),
        "holed": probed(tmp_path_factory.mktemp("holed"), render(validate_result(holed), "html")),
    }


def measured(folder: Path, width: int) -> dict[str, Any]:
    frame = folder / f"frame{width}.html"
    frame.write_text(
        f'<html><body style="margin:0"><iframe src="probe.html" width="{width}" '
        f'height="{HEIGHT}" style="border:0"></iframe></body></html>'
    )
    assert CHROMIUM is not None
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--window-size=1400,1000",
            "--virtual-time-budget=5000",
            "--dump-dom",
            frame.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=True,
    ).stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[-500:]
    return json.loads(found.group(1).replace("&quot;", '"'))


@pytest.mark.parametrize("name", ["regressed", "holed"])
@pytest.mark.parametrize(("width", "layout"), [(400, "forest narrow"), (1280, "forest wide")])
def test_the_page_fits_and_the_forest_plot_is_whole(
    reports: dict[str, Path], name: str, width: int, layout: str
) -> None:
    probe = measured(reports[name], width)
    assert probe["width"] == width
    assert probe["page"] <= width  # nothing runs off the side of the page
    [forest] = probe["forests"]  # one layout shown at a time
    assert forest["layout"] == layout
    left, right = forest["box"]
    assert left >= 0
    assert right <= width  # the data area is on screen
    # Not shrunk to fit: its 11 px labels stay 11 px.
    assert right - left >= 0.99 * forest["intrinsic"]


@pytest.mark.parametrize("name", ["regressed", "holed"])
def test_the_forest_plot_starts_on_a_laptops_first_screen(
    reports: dict[str, Path], name: str
) -> None:
    """A reviewer sees the failing checks and the plot of every check without scrolling: the
    label holes take a column and one line of advice, not a line per check."""
    probe = measured(reports[name], 1280)
    assert probe["height"] == HEIGHT
    [forest] = probe["forests"]
    # Its top, its axis and a row at least: on the screen, not a border at its foot.
    assert 0 < forest["top"] <= HEIGHT - SEEN, forest["top"]
