"""The sections of a tables report that mirror a replay report's: each from its Parquet table.

Rows are sorted (cluster, topic, partition, broker, then the row's own
keys) so the same tables give the same report whatever order Spark wrote
the parts in.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..plots_fleet import NO_CLUSTER, merge_ranges, ranges_below, union_count
from ..severity import Severity
from .from_replay import acknowledged_text
from .model import Section, ranges_text, utc
from .tables_data import Tables, facts_of, replica_times

MAX_ROWS = 2000


def _sorted(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    keys = [k for k in keys if k in df.columns]
    if "cluster" in df.columns:
        df = df.assign(cluster=df["cluster"].fillna(NO_CLUSTER))
    return df.sort_values(keys, kind="stable", na_position="first") if keys else df


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _offsets(v: Any) -> list[list[int]]:
    import json

    if not isinstance(v, str):
        return []
    try:
        return [list(r) for r in json.loads(v) if len(r) == 2]
    except (ValueError, TypeError):
        return []


def evidence_section(t: Tables) -> Section:
    """Every file the scan read with its size and SHA-256; what could not be read."""
    s = Section("evidence", "Evidence")
    f = _sorted(t.get("files"), ["cluster", "broker_id", "path"])
    s.table(["cluster", "broker", "file", "bytes", "SHA-256"],
            [[r.get("cluster"), _int(r.get("broker_id")), r.get("path"), _int(r.get("size")), r.get("sha256")]
             for r in f.to_dict("records")],
            caption=f"Files read ({len(f)}, {int(f['size'].fillna(0).sum()) if len(f) else 0} bytes)",
            limit=MAX_ROWS, what="files")
    unread = []
    seg = t.get("segments")
    if not seg.empty and "readable" in seg:
        unread += [[r.get("path"), "segment could not be read"]
                   for r in _sorted(seg[seg["readable"].eq(False)], ["cluster", "broker_id", "path"])
                   .to_dict("records")]
    fd = _sorted(t.get("findings"), ["cluster", "broker_id", "file", "position", "code"])
    unread += [[r.get("file"), f"{r['code']}: {r.get('message')}"] for r in fd.to_dict("records")
               if facts_of(r.get("facts")).get("read") is False]
    s.table(["what", "why it was not read"], unread, caption="What could not be read", limit=MAX_ROWS)
    return s


def elections_section(t: Tables) -> Section:
    """Each replayed partition's elected leader and epoch, and the elections the controller's record shows
    unclean (the tables keep the replay's election, not the whole record: ``kforensics timeline`` shows it)."""
    s = Section("elections", "Elections: who leads after the restart")
    v = t.get("verdicts")
    if v.empty:
        s.text("No verdicts table: nothing was replayed.")
        return s
    if "leader_how" in v.columns:
        hows = v.drop_duplicates(["cluster", "topic", "partition"])["leader_how"].fillna("unknown").value_counts()
        s.table(["how the leader was reached", "partitions"], [[h, int(n)] for h, n in hows.items()],
                caption="How each partition's leader was reached (controller-record, predicted:<rule>, offline, "
                        "given, guessed)")
    lead = _sorted(v[v["role"].isin(["leader", "waiting"])], ["cluster", "topic", "partition", "broker_id",
                                                              "verdict"])
    rows = [[r["cluster"], f"{r['topic']}-{r['partition']}", _int(r.get("leader")), _int(r.get("leader_epoch")),
             r.get("leader_how") or "-", r["verdict"], r.get("detail")]
            for r in lead.to_dict("records") if r["verdict"] != "OK"]
    s.text("Leaders elected by the replay whose verdict is not OK (UNCLEAN_ELECTION: the controller's record "
           "elected it outside the ISR). The whole record of each cluster: `kforensics timeline` on its metadata "
           "log.")
    s.table(["cluster", "partition", "leader", "epoch", "how", "verdict", "detail"], rows, limit=MAX_ROWS,
            caption="Leaders whose verdict is not OK, and partitions nobody leads (leader -1)")
    return s


def verdicts_section(t: Tables) -> Section:
    """Every verdict that is not OK, with records, committed records and when the lost batches were written."""
    s = Section("verdicts", "Verdicts by partition")
    v = t.get("verdicts")
    if v.empty:
        s.text("No verdicts table: nothing was replayed.")
        return s
    times = replica_times(t)
    bad = _sorted(v[v["verdict"] != "OK"], ["cluster", "topic", "partition", "broker_id", "verdict"])
    rows = []
    for r in bad.to_dict("records"):
        ranges = merge_ranges(_offsets(r.get("offsets")))
        rows.append([r["cluster"], f"{r['topic']}-{r['partition']}", _int(r["broker_id"]), r.get("role"),
                     r["verdict"], r.get("cause"), ranges_text(ranges), _int(r.get("records")),
                     _int(r.get("bytes")), union_count(ranges_below(ranges, r.get("committed_bound"))),
                     acknowledged_text(facts_of(r.get("facts"))),
                     times.get((r["cluster"], r["topic"], int(r["partition"]), int(r["broker_id"]))),
                     r.get("detail")])
    s.table(["cluster", "partition", "broker", "role", "verdict", "cause", "offsets", "records", "bytes",
             "committed", "acknowledged", "written (UTC)", "detail"], rows, caption="Every verdict that is not OK",
            limit=MAX_ROWS, what="verdicts")
    return s


def forks_section(t: Tables) -> Section:
    """Replica pairs whose records differ at the same offset."""
    s = Section("forks", "Forks and divergence")
    d = t.get("divergence")
    if not d.empty:
        d = _sorted(d[d["first_divergent_offset"].notna()], ["cluster", "topic", "partition", "broker_a",
                                                             "broker_b"])
    rows = [[r["cluster"], f"{r['topic']}-{r['partition']}", _int(r["broker_a"]), _int(r["broker_b"]),
             _int(r["first_divergent_offset"]), _int(r.get("compacted_below"))] for r in d.to_dict("records")]
    s.table(["cluster", "partition", "broker A", "broker B", "first divergent offset", "compacted below"], rows,
            caption="Replica pairs whose records differ at the same offset", limit=MAX_ROWS)
    return s


def consumers_section(t: Tables) -> Section:
    """Each consumer group and partition with consumed records that are gone, and what it does on resume."""
    s = Section("consumers", "Consumer groups affected")
    ci = _sorted(t.get("consumer_impact"), ["cluster", "topic", "partition", "group"])
    rows = [[r["cluster"], f"{r['topic']}-{r['partition']}", r["group"], _int(r.get("committed_offset")),
             utc(_int(r.get("commit_timestamp"))), ranges_text(_offsets(r.get("consumed_lost"))),
             _int(r.get("consumed_lost_records")), r.get("outcome"), _int(r.get("next_position")),
             ranges_text(_offsets(r.get("skipped"))), ranges_text(_offsets(r.get("reread"))),
             f"{r.get('commit_file')} @ byte {_int(r.get('commit_position'))}" if r.get("commit_file") else None]
            for r in ci.to_dict("records")]
    s.table(["cluster", "partition", "group", "committed offset", "committed at (UTC)", "consumed and lost",
             "records", "on resume", "next position", "skipped", "re-read", "commit (file @ byte)"], rows,
            limit=MAX_ROWS, what="groups")
    return s


def transactions_section(t: Tables) -> Section:
    """Transactions reopened by the replay (marker lost) and hanging ones."""
    s = Section("transactions", "Transactions affected")
    tx = t.get("transactions")
    if not tx.empty:
        tx = _sorted(tx[(tx["kind"] == "reopened") | tx["hanging"].eq(True)],
                     ["cluster", "topic", "partition", "broker_id", "producer_id", "first_offset", "kind"])
    rows = [[r["cluster"], f"{r['topic']}-{r['partition']}", _int(r.get("broker_id")), r["kind"],
             _int(r.get("producer_id")), _int(r.get("first_offset")), _int(r.get("last_offset")), r.get("marker"),
             r.get("hanging"), f"{r.get('file')} @ byte {_int(r.get('position'))}" if r.get("file") else None,
             r.get("detail")] for r in tx.to_dict("records")]
    s.table(["cluster", "partition", "broker", "kind", "producer", "first offset", "last offset", "marker",
             "hanging", "file @ byte", "detail"], rows, limit=MAX_ROWS, what="transactions")
    return s


def restart_section(t: Tables) -> Section:
    """What each broker's next start cuts (Kafka's recovery), from the partitions table."""
    s = Section("restart", "What a restart will do")
    p = t.get("partitions")
    if p.empty:
        s.text("No partitions table.")
        return s
    # a torn batch's records are unknown (0 counted) but its offsets are named: it is cut all the same
    cuts = (p["recovery_lost_records"].fillna(0) > 0) | p["recovery_lost_first_offset"].notna()
    cut = _sorted(p[cuts], ["cluster", "broker_id", "topic", "partition"])
    s.text(f"{len(p) - len(cut)} of {len(p)} partition copies lose nothing at their broker's next start.")
    s.table(["cluster", "broker", "partition dir", "log end", "after restart", "lost offsets", "records lost",
             "of them committed"],
            [[r.get("cluster"), _int(r.get("broker_id")), r.get("dir_name"), _int(r.get("log_end_offset")),
              _int(r.get("recovery_log_end_offset")),
              ranges_text([[_int(r["recovery_lost_first_offset"]), _int(r["recovery_lost_last_offset"])]])
              if _int(r.get("recovery_lost_first_offset")) is not None else None,
              _int(r.get("recovery_lost_records")), _int(r.get("recovery_lost_committed_records"))]
             for r in cut.to_dict("records")], limit=MAX_ROWS, what="partition copies")
    return s


def findings_section(t: Tables) -> Section:
    """Every finding, the worst first, with its file and byte."""
    s = Section("findings", "Findings")
    f = t.get("findings")
    if not f.empty:
        f = f.assign(_sev=f["severity"].map(lambda x: -int(Severity.parse(x))), cluster=f["cluster"].fillna(""))
        f = f.sort_values(["_sev", "code", "cluster", "broker_id", "file", "position", "message"], kind="stable",
                          na_position="first")
    s.table(["severity", "code", "cluster", "broker", "file", "byte", "message"],
            [[r["severity"], r["code"], r.get("cluster") or None, _int(r.get("broker_id")), r.get("file"),
              _int(r.get("position")), r.get("message")] for r in f.to_dict("records")],
            limit=MAX_ROWS * 5, what="findings")
    return s
