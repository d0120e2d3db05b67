"""A segment that ends before the size its archive header declares is unknown past the cut, never "cuts N bytes"."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kforensics.cli import main
from tests.hostile.builders import cut_archive


def test_a_segment_cut_inside_its_archive_member_is_reported_unknown(tmp_path):
    # before: the row said what the next start cuts, as if the missing tail were a torn write on disk
    archive = cut_archive(tmp_path)
    r = CliRunner().invoke(main, ["scan", str(archive), "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    short = [f["file"] for f in doc["findings"] if f["code"] == "SHORT_READ"]
    assert short, "the cut member gives a SHORT_READ finding"
    cut = [p for p in doc["partitions"] if any(f"/{p['dir_name']}/" in f for f in short)]
    assert cut and all(p["recovery"]["unknown"] for p in cut)
    text = CliRunner().invoke(main, ["scan", str(archive)]).stdout
    assert text.splitlines()[0].startswith("answer: unknown")
