"""Figures for the report: matplotlib figures from :mod:`kforensics.plots` as deterministic inline SVG.

The same figure gives the same bytes: a fixed hash salt for the SVG's ids,
no date in its metadata, text as paths (no font lookup at view time), and
the Agg-free SVG backend (no display needed).
"""

from __future__ import annotations

import io
from typing import Any

from .model import Figure

#: the widest a figure is shown in the report (CSS px): wider figures are scaled down to it
MAX_WIDTH_PX = 1150


def svg_figure(fig: Any, caption: str) -> Figure:
    """``fig`` (a matplotlib Figure) as an inline-SVG :class:`Figure`, closed afterwards."""
    import matplotlib
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "kforensics-report", "svg.fonttype": "path",
                                "svg.image_inline": True}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "kforensics"}, bbox_inches="tight")
    w, h = fig.get_size_inches() * fig.dpi
    plt.close(fig)
    return Figure(buf.getvalue(), caption, int(w), int(h))


def png_bytes(fig: Any, dpi: int = 100) -> bytes:
    """``fig`` as PNG bytes at the size the report shows it (for looking at it, and the tests)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def use_headless_backend() -> None:
    """Draw off-screen (Agg) unless a backend was chosen: the command runs where no display is."""
    import os

    import matplotlib

    if not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
