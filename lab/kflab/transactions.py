"""Transactions left open after the restart, as Kafka reports them: Kafka's own TransactionsCommand (the
kafka-transactions.sh tool, kafka-tools jar) on the restarted cluster.

``describe-producers`` asks a partition's leader for its active producers (DescribeProducers, KIP-664, Kafka
3.0 and later); a producer whose CurrentTransactionStartOffset is not None has a transaction open on that
partition.  ``list`` asks the coordinators for every transactional id and its state.  Kafka 2.8 has neither
request: there the observation is recorded as unavailable and the check is not made.
"""

from __future__ import annotations

import subprocess

from . import jars
from .cluster import JVM_OPTS, Cluster

TOOL = "org.apache.kafka.tools.TransactionsCommand"
#: the coordinator aborts timed-out transactions only when its sweep runs, every
#: transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by default: TransactionStateManagerConfigs,
#: 3.9.0; TransactionCoordinator.startup schedules it)
TXN_SWEEP_S = 10.0
HEADERS = ("ProducerId", "TransactionalId")  # the first column of describe-producers' and list's tables
# the tool's own log to stderr, warnings only: its table is all that is on stdout
LOG4J2_ERR = "appender.e.type = Console\nappender.e.name = E\nappender.e.target = SYSTEM_ERR\n"
LOG4J2_ERR += "appender.e.layout.type = PatternLayout\nappender.e.layout.pattern = %p %m%n\n"
LOG4J2_ERR += "rootLogger.level = WARN\nrootLogger.appenderRef.e.ref = E\n"
LOG4J1_ERR = "log4j.rootLogger=WARN, e\nlog4j.appender.e=org.apache.log4j.ConsoleAppender\n"
LOG4J1_ERR += "log4j.appender.e.Target=System.err\nlog4j.appender.e.layout=org.apache.log4j.PatternLayout\n"


def _tool(c: Cluster, args: list[str], timeout_s: int = 90) -> str:
    """Run TransactionsCommand against the cluster; its table on stdout (raises on a non-zero exit)."""
    libs = jars.ensure_tools(c.version)
    if jars.major(c.version) >= 4:
        cfg = c.conf_dir / "tools-log4j2.properties"
        cfg.write_text(LOG4J2_ERR)
        logcfg = f"-Dlog4j2.configurationFile={cfg}"
    else:
        cfg = c.conf_dir / "tools-log4j.properties"
        cfg.write_text(LOG4J1_ERR)
        logcfg = f"-Dlog4j.configuration=file:{cfg}"
    argv = ["timeout", "--signal=KILL", str(timeout_s), jars.java_bin(c.version), *JVM_OPTS, logcfg]
    argv += ["-cp", f"{libs}/*", TOOL, "--bootstrap-server", c.bootstrap(), *args]
    r = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout_s + 10, check=False, start_new_session=True
    )
    if r.returncode != 0:
        raise RuntimeError(
            f"TransactionsCommand {' '.join(args)}: exit {r.returncode}: {(r.stderr or r.stdout)[-600:]}"
        )
    return r.stdout


def parse_table(text: str) -> list[dict]:
    """ToolsUtils.prettyPrintTable's output (a header line, then rows; columns separated by blanks, no cell
    holds one) as a list of {header: cell}; lines before the header (a log line on stdout) are skipped."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln[0] in HEADERS), None)
    if start is None:
        return []
    head = lines[start]
    return [dict(zip(head, row)) for row in lines[start + 1 :] if len(row) == len(head)]


def open_producers(rows: list[dict]) -> list[int]:
    """Producer ids with a transaction open on the partition (CurrentTransactionStartOffset not None)."""
    return sorted(int(r["ProducerId"]) for r in rows if r.get("CurrentTransactionStartOffset", "None") != "None")


def observe_transactions(c: Cluster, partitions: list[tuple[str, int]]) -> dict:
    """{"open": {"topic-p": [producer ids]}, "producers": {...rows}, "list": [...]} on the running cluster, or
    {"unavailable": reason} where this Kafka has no DescribeProducers."""
    if jars.major(c.version) < 3:
        return {"unavailable": f"Kafka {jars.release(c.version)} has no DescribeProducers/ListTransactions (3.0+)"}
    out: dict = {"open": {}, "producers": {}}
    for topic, part in partitions:
        key = f"{topic}-{part}"
        try:
            rows = parse_table(_tool(c, ["describe-producers", "--topic", topic, "--partition", str(part)]))
        except Exception as e:  # noqa: BLE001 - a partition not described is recorded, the others go on
            out["producers"][key] = {"error": str(e)}
            continue
        out["producers"][key] = rows
        out["open"][key] = open_producers(rows)
    try:
        out["list"] = parse_table(_tool(c, ["list"]))
    except Exception as e:  # noqa: BLE001 - the coordinators' list is context, not the check
        out["list"] = {"error": str(e)}
    return out


def _pid(t) -> int:
    return int(t["producer_id"]) if isinstance(t, dict) else int(t)


def open_when_observed(t, observed_at_ms: int | None) -> bool:
    """Whether an open transaction kforensics lists is still open when Kafka is asked, from what kforensics says
    the restart does to it (``at_restart``): the coordinator completes a prepared one as it loads, and aborts an
    Ongoing one at its first sweep after its timeout (taken as done when a whole sweep interval separates the two:
    the lab observes a sweep interval after convergence); a hanging one, or one without a coordinator's record,
    stays open."""
    if not isinstance(t, dict):
        return True
    at = t.get("at_restart", "unknown")
    if at == "completed by the coordinator":
        return False
    due = t.get("coordinator_timeout_at")
    if at == "aborted once timed out" and due is not None and observed_at_ms is not None:
        return due + TXN_SWEEP_S * 1000 > observed_at_ms
    return True


def predicted_open(replay: dict, scans: dict, observed_at_ms: int | None = None) -> dict:
    """'topic-p' -> producer ids kforensics says have a transaction open after the restart, when Kafka is asked
    at ``observed_at_ms``.  Where replay's transactions impact lists the partition (it loses records): the new
    leader's open (and hanging) transactions and those reopened by lost markers.  Elsewhere the predicted leader
    keeps its log: the open transactions scan finds in that leader's copy of the partition."""
    out: dict = {}
    impact = {f"{a['topic']}-{a['partition']}": a for a in replay.get("transactions") or []}
    for p in replay.get("partitions") or []:
        key = f"{p['topic']}-{p['partition']}"
        a = impact.get(key)
        if a is not None:
            pids = {_pid(t) for t in ((a.get("leader_transactions") or {}).get("open") or [])
                    if open_when_observed(t, observed_at_ms)}
            pids |= {_pid(r) for r in a.get("reopened") or []}
        else:
            scan = scans.get(p.get("leader")) or scans.get(str(p.get("leader"))) or {}
            sp = [
                x for x in scan.get("partitions") or [] if (x["topic"], x["partition"]) == (p["topic"], p["partition"])
            ]
            listed = (sp[0].get("open_transactions") or []) if sp else []
            pids = {_pid(t) for t in listed if open_when_observed(t, observed_at_ms)}
        out[key] = sorted(pids)
    return out
