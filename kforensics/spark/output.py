"""The output of a run, checked before anything else: never inside, onto or above the evidence, never over what
is not an earlier run's tables.

Light on purpose (nothing of the job's stages is imported): the command line refuses an output at once.
"""

from __future__ import annotations

import os

from ..errors import OutputRefused
from ..log.sources import split_uri
from ..outputs import refuse_output_in_evidence
from . import files
from .inputs import Snapshot
from .schemas import TABLES

#: ``--metadata`` inputs: paths, ``(cluster, path)`` pairs, or paths by cluster
MetadataInputs = list[str | tuple[str, str]] | dict[str | None, list[str]] | None


class OutputExists(OutputRefused):
    """An output that holds something already (refused without ``--overwrite``), or that is not a directory."""


def evidence_inputs(snapshots: list[Snapshot], metadata: MetadataInputs = None, manifest: str | None = None
                    ) -> list[str]:
    """Every input location: the snapshots, the metadata logs and the manifest."""
    extra = [p for ps in metadata.values() for p in ps] if isinstance(metadata, dict) else [
        m[1] if isinstance(m, tuple) else m for m in (metadata or [])]
    return [s.spec for s in snapshots] + [str(p) for p in extra] + ([manifest] if manifest else [])


def check_output(out: str, snapshots: list[Snapshot], overwrite: bool, metadata: MetadataInputs = None,
                 manifest: str | None = None) -> None:
    """Refuse an output inside, onto or above any input (snapshots, metadata logs, the manifest), an existing one
    without ``overwrite``, and one holding anything but the tables of an earlier run (``overwrite`` replaces
    those tables only).

    Call it before Spark starts: it reads nothing but the output's listing and creates nothing.
    """
    refuse_output_in_evidence(out, evidence_inputs(snapshots, metadata, manifest))
    filesystem, out_path = split_uri(out)
    if filesystem is None and os.path.lexists(out_path) and not os.path.isdir(out_path):
        raise OutputExists(f"{out} exists and is not a directory")
    try:
        existing = [n for n in files.listdir(filesystem, out_path) if not n.startswith(".")]
        bucket = out_path.split("/", 1)[0]
        if files.is_object_store(filesystem) and not files.exists(filesystem, bucket):
            raise OutputRefused(f"{out}: no such bucket (a run creates no bucket)")
    except OSError as e:  # a store's bucket refused, credentials refused, no answer
        from ..log.object_store import explain

        raise OutputRefused(f"{out}: cannot list it: {explain(e)}") from None
    if existing and not overwrite:
        raise OutputExists(f"{out} already holds {', '.join(existing[:5])}; use --overwrite to replace it")
    foreign = [n for n in existing if n not in TABLES]
    if foreign:
        raise OutputExists(f"{out} holds {', '.join(foreign[:5])}, which are not tables of a kforensics run; "
                           "--overwrite replaces only those: choose a new or empty directory")
