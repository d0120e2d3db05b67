"""The CLI's side of output discipline: a refused output is a usage error (exit 2)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import click

from ..outputs import OutputRefused
from ..outputs import refuse_output_in_evidence as _refuse


def refuse_output_in_evidence(output: Any, inputs: Iterable[Any]) -> None:
    try:
        _refuse(output, inputs)
    except OutputRefused as e:
        from .common import printable

        raise click.BadParameter(printable(str(e)), param_hint="--out") from None
