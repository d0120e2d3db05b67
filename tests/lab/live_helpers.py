"""What the live lab tests share."""

from __future__ import annotations

import pytest


def live_lab_or_skip() -> None:
    """Skip (with the reason) when the newest Kafka's jars or a JDK for it cannot be had here."""
    from kflab import jars

    try:
        jars.java_bin(jars.NEWEST)
        jars.ensure_jars(jars.NEWEST, timeout_s=300)
    except jars.Unavailable as e:
        pytest.skip(f"live lab unavailable: {e}")
