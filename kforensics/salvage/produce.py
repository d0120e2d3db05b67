"""Putting salvaged records back: an idempotent producer, the original order per partition, and a ledger.

Records go to the same topic (or the one ``topic_map`` names) and the same
partition number, in their original offset order, through confluent-kafka
with ``enable.idempotence`` (so a retry inside one run never duplicates and
order per partition holds).  Each carries its original key, value, headers
and timestamp, plus the header ``kforensics-salvaged-from`` naming where it
was found (cluster, topic, partition, offset, brokers).  Aborted
transactional records are left out unless asked for; records read from a
batch that fails its CRC are never sent (their bytes are damaged).

Across runs nothing is sent twice: every acknowledged record is appended to
the ledger (``produce-ledger.jsonl`` in the output directory, never in the
evidence) the moment its delivery report arrives, and a later run skips
every record the ledger names.  A record acknowledged by the broker whose
report the process did not live to see is the one case the ledger cannot
know of (the run stopped between the two).

Client settings (SASL, SSL) come from a file in Kafka's properties format
(``--command-config``, as Kafka's tools take it); ``sasl.jaas.config`` with
the PLAIN or SCRAM login module becomes librdkafka's ``sasl.username`` and
``sasl.password``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, UsageError
from ..findings import Finding, finding
from .model import SalvagedRecord

ORIGIN_HEADER = "kforensics-salvaged-from"
LEDGER = "produce-ledger.jsonl"
#: half-second polls of a full producer queue before the cluster is taken as not answering (10 minutes)
FULL_QUEUE_POLLS = 1200
_JAAS = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class ProducePlan:
    """What putting the records back sends (or sent): counts per target, and what was skipped and why."""

    bootstrap: str
    dry_run: bool
    to_send: dict[str, int] = field(default_factory=dict)  # "topic-partition" -> records (in order)
    already_sent: int = 0  # acknowledged by an earlier run (in the ledger)
    aborted_left_out: int = 0
    damaged_left_out: int = 0  # read from a batch that fails its CRC: not what the producer wrote
    sent: int = 0  # acknowledged in this run
    failed: int = 0
    findings: list[Finding] = field(default_factory=list)
    ledger: str = ""


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java properties file (``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments; a trailing
    backslash continues the line), as Kafka's tools read ``--command-config``."""
    out: dict[str, str] = {}
    pending = ""
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        m = re.match(r"((?:[^=:\s\\]|\\.)+)\s*[=:\s]\s*(.*)$", line)
        if m:
            out[m.group(1).replace("\\", "")] = m.group(2)
        elif line:
            out[line] = ""
    return out


def client_config(props: dict[str, str], bootstrap: str) -> dict[str, Any]:
    """librdkafka settings from Kafka client properties: the idempotent producer's own settings win."""
    conf: dict[str, Any] = {k: v for k, v in props.items() if k != "sasl.jaas.config"}
    jaas = props.get("sasl.jaas.config")
    if jaas:
        found = dict(_JAAS.findall(jaas))
        if "username" not in found:
            raise UsageError("sasl.jaas.config in --command-config names no username= (librdkafka takes PLAIN and "
                             "SCRAM credentials only; give sasl.username and sasl.password instead)")
        conf.setdefault("sasl.username", found["username"])
        conf.setdefault("sasl.password", found.get("password", ""))
    conf.update({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                 "max.in.flight.requests.per.connection": 5, "linger.ms": 5})
    return conf


class Ledger:
    """What earlier runs had acknowledged, 16 bytes per record (a sorted array: a million records take 16 MB)."""

    def __init__(self, keys: np.ndarray):
        self.keys = np.sort(keys)

    @staticmethod
    def key(topic: str, partition: int, offset: int, digest: str) -> bytes:
        """One record's identity in the ledger: where it was found and its content digest."""
        return hashlib.blake2b(f"{topic}\0{partition}\0{offset}\0{digest}".encode("utf-8", "surrogateescape"),
                               digest_size=16).digest()

    def __contains__(self, rec: SalvagedRecord) -> bool:
        k = np.array(self.key(rec.topic, rec.partition, rec.offset, rec.digest.hex()), dtype="S16")
        i = int(np.searchsorted(self.keys, k))
        return i < len(self.keys) and bool(self.keys[i] == k)

    def __len__(self) -> int:
        return len(self.keys)


def read_ledger(path: Path, findings: list[Finding]) -> Ledger:
    """The ledger of earlier runs (empty when there is none); a line that does not parse is a finding."""
    keys = bytearray()
    if path.exists():
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    e = json.loads(line)
                    keys += Ledger.key(str(e["topic"]), int(e["partition"]), int(e["offset"]), str(e["digest"]))
                except (ValueError, KeyError, TypeError):
                    findings.append(finding("SALVAGE_LEDGER_DAMAGED", f"ledger line {n} does not parse",
                                            file=path, line=n))
    return Ledger(np.frombuffer(bytes(keys), dtype="S16").copy())


def origin(rec: SalvagedRecord) -> bytes:
    """The origin header's value: where the record was found."""
    return json.dumps({"cluster": rec.cluster_id, "topic": rec.topic, "partition": rec.partition,
                       "offset": rec.offset, "brokers": rec.brokers}, separators=(",", ":")).encode()


def target_topic(topic: str, topic_map: dict[str, str]) -> str:
    return topic_map.get(topic, topic)


def produce(records: Iterable[SalvagedRecord], bootstrap: str, out_dir: Path, *, topic_map: dict[str, str],
            props: dict[str, str] | None = None, include_aborted: bool = False, dry_run: bool = True,
            timeout: float = 60.0) -> ProducePlan:
    """Send the records as they come (or, dry, count what would be sent); returns the plan with what happened."""
    ledger = out_dir / LEDGER
    plan = ProducePlan(bootstrap, dry_run, ledger=str(ledger))
    done = read_ledger(ledger, plan.findings)
    sender = None if dry_run else Sender(plan, client_config(props or {}, bootstrap), ledger, topic_map)
    try:
        for rec in records:
            if rec.transactional == "aborted" and not include_aborted:
                plan.aborted_left_out += 1
            elif not rec.crc_valid:
                plan.damaged_left_out += 1
            elif rec in done:
                plan.already_sent += 1
            else:
                key = f"{target_topic(rec.topic, topic_map)}-{rec.partition}"
                plan.to_send[key] = plan.to_send.get(key, 0) + 1
                if sender is not None:
                    sender.send(rec)
    finally:
        if sender is not None:
            sender.finish(timeout)
    return plan


class Sender:
    """An idempotent producer that appends each acknowledgement to the ledger as its report arrives."""

    def __init__(self, plan: ProducePlan, conf: dict[str, Any], ledger: Path, topic_map: dict[str, str]):
        from confluent_kafka import KafkaException, Producer

        try:
            self.producer = Producer(conf)
        except KafkaException as e:
            raise UsageError(f"the producer's settings are refused: {e}") from e
        self.plan, self.topic_map = plan, topic_map
        self.fh = open(ledger, "a", encoding="utf-8")  # noqa: SIM115 - closed in finish()

    def _report(self, err: Any, msg: Any, rec: SalvagedRecord) -> None:
        if err is not None:
            self.plan.failed += 1
            self.plan.findings.append(finding("SALVAGE_NOT_SENT", f"{rec.topic}-{rec.partition} offset {rec.offset}:"
                                              f" {err}", topic=rec.topic, partition=rec.partition,
                                              offset=rec.offset))
            return
        self.plan.sent += 1
        self.fh.write(json.dumps({"topic": rec.topic, "partition": rec.partition, "offset": rec.offset,
                                  "digest": rec.digest.hex(), "target_topic": msg.topic(),
                                  "target_partition": msg.partition(), "target_offset": msg.offset()}) + "\n")
        self.fh.flush()

    def send(self, rec: SalvagedRecord) -> None:
        """Queue one record (in order); deliveries are served as the queue drains."""
        headers: list[tuple[str, str | bytes | None]] = [*rec.headers, (ORIGIN_HEADER, origin(rec))]
        ts = rec.timestamp if rec.timestamp >= 0 else 0

        def delivered(err: Any, msg: Any) -> None:
            self._report(err, msg, rec)

        for _ in range(FULL_QUEUE_POLLS):
            try:
                self.producer.produce(target_topic(rec.topic, self.topic_map), value=rec.value, key=rec.key,
                                      partition=rec.partition, headers=headers, timestamp=ts,
                                      on_delivery=delivered)
                break
            except BufferError:
                self.producer.poll(0.5)  # the local queue is full: let deliveries drain
        else:
            # a cluster that never takes a record: stop rather than wait forever (the ledger says what was sent)
            raise InputError(f"the cluster took no record for {FULL_QUEUE_POLLS // 2} s while the producer's queue "
                             "was full; what was acknowledged is in the ledger, a later run sends the rest")
        self.producer.poll(0)

    def finish(self, timeout: float) -> None:
        """Wait for every acknowledgement (up to ``timeout`` seconds) and make the ledger durable."""
        left = self.producer.flush(timeout)
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        if left:
            self.plan.findings.append(finding("SALVAGE_NOT_SENT", f"{left} records still unacknowledged after "
                                              f"{timeout:g} s; a later run sends them (the ledger holds only what "
                                              "was acknowledged)", waiting=left))
            self.plan.failed += left
