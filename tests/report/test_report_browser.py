"""The report opens in a real browser (headless Chromium) and its screenshot is not blank."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import pytest

from tests.report.helpers import report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(html_path, png_path, size: str = "1280,2000") -> None:
    with tempfile.TemporaryDirectory(prefix="kforensics-chromium-") as profile:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", f"--screenshot={png_path}", f"--window-size={size}",
                        f"file://{html_path}"], capture_output=True, timeout=180, check=False)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: Debian's `chromium` package (scripts/setup.sh installs "
                                             "it) is needed to open the report in a real browser")
def test_the_report_renders_in_chromium(tmp_path):
    from PIL import Image

    report(tmp_path, "r", "--scenario", "fixtures/scenarios/unclean-leader-election")
    png = tmp_path / "r.png"
    screenshot(tmp_path / "r.html", png)
    assert png.exists(), "chromium wrote no screenshot"
    img = Image.open(png).convert("RGB")
    assert img.size == (1280, 2000)
    import numpy as np

    pixels = np.asarray(img.resize((128, 200)), dtype=np.int32).reshape(-1, 3)
    ink = int((pixels.sum(axis=1) < 600).sum())  # not white: text, rules, table borders, figures
    assert ink > len(pixels) * 0.02, f"the screenshot is blank ({ink} of {len(pixels)} pixels inked)"
    assert len({tuple(p) for p in pixels}) > 20  # text and colour, not one flat fill
