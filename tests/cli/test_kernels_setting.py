"""A bad ``KFORENSICS_KERNELS`` is the user's mistake: exit 2 and one sentence, before any evidence is read.

Before the structure issue (#21) it surfaced as an internal error (exit 3) from deep in the scan.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_a_bad_kernels_setting_stops_scan_with_exit_2_and_a_sentence():
    env = {**os.environ, "KFORENSICS_KERNELS": "bogus"}
    r = subprocess.run([sys.executable, "-m", "kforensics", "scan", str(ROOT / "fixtures" / "brokers" / "healthy")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    said = r.stderr.strip().splitlines()
    assert len(said) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "KFORENSICS_KERNELS='bogus'" in said[0] and "auto, numba or native" in said[0], said
    assert r.stdout == ""  # no partial table before the refusal
