"""``meta.properties``: a broker's identity (Java properties; v0 ZooKeeper, v1 KRaft)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding, Severity


@dataclass
class MetaProperties:
    version: int = 0
    node_id: int | None = None  # broker.id (v0) or node.id (v1)
    cluster_id: str | None = None
    directory_id: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": "meta_properties", "version": self.version, "node_id": self.node_id,
                "cluster_id": self.cluster_id, "directory_id": self.directory_id, "properties": self.properties}


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
            mp.findings.append(Finding("META_PROPERTIES_MALFORMED", Severity.MEDIUM, f"line {raw!r}", line=no))
    p = mp.properties
    try:
        mp.version = int(p.get("version", "0"))
    except ValueError:
        mp.findings.append(Finding("META_PROPERTIES_BAD_VERSION", Severity.HIGH, f"version {p.get('version')!r}"))
        return mp
    if mp.version not in (0, 1):
        mp.findings.append(Finding("META_PROPERTIES_BAD_VERSION", Severity.HIGH, f"unknown version {mp.version}"))
    id_key = "node.id" if mp.version == 1 else "broker.id"
    if id_key in p:
        try:
            mp.node_id = int(p[id_key])
        except ValueError:
            mp.findings.append(Finding("META_PROPERTIES_BAD_ID", Severity.HIGH, f"{id_key}={p[id_key]!r}"))
    elif mp.version == 1 or "broker.id" not in p:
        mp.findings.append(Finding("META_PROPERTIES_MISSING_KEY", Severity.MEDIUM, f"no {id_key}"))
    mp.cluster_id = p.get("cluster.id")
    if mp.version == 1 and not mp.cluster_id:
        mp.findings.append(Finding("META_PROPERTIES_MISSING_KEY", Severity.MEDIUM, "no cluster.id (required in v1)"))
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
