"""Puts the lab's harness (lab/kflab) on the path for the lab tests."""

import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[2] / "lab"
if str(LAB) not in sys.path:
    sys.path.insert(0, str(LAB))
