"""``meta.properties``: a broker's identity (Java properties; v0 ZooKeeper, v1 KRaft)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding, finding
from .java_text import parse_int


@dataclass
class MetaProperties:
    version: int = 0
    node_id: int | None = None  # broker.id (v0) or node.id (v1)
    cluster_id: str | None = None
    directory_id: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)



def decode(data: bytes) -> MetaProperties:
    mp = MetaProperties()
    text = data.decode("latin-1")  # java.util.Properties files are ISO-8859-1
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in line:
                k, v = line.split(sep, 1)
                mp.properties[k.strip()] = v.strip()
                break
        else:
            mp.findings.append(finding("META_PROPERTIES_MALFORMED", f"line {no} is not key=value: {raw!r:.80}",
                                       line=no))
    p = mp.properties
    version = parse_int(p.get("version", "0"))
    if version is None:
        mp.findings.append(finding("META_PROPERTIES_BAD_VERSION", f"version {p.get('version')!r:.40} is not a number"))
        return mp
    mp.version = version
    if mp.version not in (0, 1):
        mp.findings.append(finding("META_PROPERTIES_BAD_VERSION", f"unknown version {mp.version}"))
    id_key = "node.id" if mp.version == 1 else "broker.id"
    if id_key in p:
        mp.node_id = parse_int(p[id_key])
        if mp.node_id is None:
            mp.findings.append(finding("META_PROPERTIES_BAD_ID", f"{id_key}={p[id_key]!r:.40} is not an int32 "
                                                                 "(Integer.parseInt fails on it)"))
    elif mp.version == 1 or "broker.id" not in p:
        mp.findings.append(finding("META_PROPERTIES_MISSING_KEY", f"no {id_key}"))
    mp.cluster_id = p.get("cluster.id")
    if mp.version == 1 and not mp.cluster_id:
        mp.findings.append(finding("META_PROPERTIES_MISSING_KEY", "no cluster.id (required in v1)"))
    mp.directory_id = p.get("directory.id")
    return mp


def encode(version: int, node_id: int, cluster_id: str | None = None, directory_id: str | None = None) -> bytes:
    lines = ["#", "#Thu Jan 01 00:00:00 UTC 2026", f"version={version}"]
    lines.append(f"{'node.id' if version == 1 else 'broker.id'}={node_id}")
    if cluster_id:
        lines.append(f"cluster.id={cluster_id}")
    if directory_id:
        lines.append(f"directory.id={directory_id}")
    return ("\n".join(lines) + "\n").encode("latin-1")
