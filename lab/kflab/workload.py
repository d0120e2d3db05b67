"""The workload, through confluent-kafka: every record value carries a run-unique id.

A value is ``<run>|<topic>|<producer>|<n>|<padding>``; the acknowledgement log records, for each id,
whether the producer was told it was written (and where), so lost *acknowledged* ids can be told apart.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from .procs import Timeout, wait_for

_QUIET = logging.getLogger("kflab.rdkafka")
_QUIET.setLevel(logging.CRITICAL)  # librdkafka's connection chatter while brokers die is expected


def client_conf(bootstrap: str, **extra) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "logger": _QUIET,
        "socket.timeout.ms": 5000,
        "broker.address.family": "v4",
        **extra,
    }


@dataclass
class TopicSpec:
    name: str
    partitions: int = 1
    min_isr: int = 2
    unclean: bool = False
    segment_bytes: int = 1048576
    assignment: list[list[int]] | None = None  # replicas per partition, the first the preferred leader

    def replication(self, partition: int) -> int:
        return len(self.assignment[partition]) if self.assignment else 3

    def configs(self) -> dict:
        return {
            "min.insync.replicas": str(self.min_isr),
            "unclean.leader.election.enable": str(self.unclean).lower(),
            "segment.bytes": str(self.segment_bytes),
        }


@dataclass
class AckLog:
    """What producers were told: id -> (topic, partition, offset) or None for an error."""

    acked: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)

    def on_delivery(self, err, msg):
        rid = msg.value().split(b"|", 4)[:4]
        rid = b"|".join(rid).decode()
        if err is None:
            self.acked[rid] = (msg.topic(), msg.partition(), msg.offset())
        else:
            self.failed[rid] = str(err)

    def to_json(self) -> dict:
        return {"acked": {k: list(v) for k, v in self.acked.items()}, "failed": self.failed}


class Workload:
    """Producers and a consumer group against one cluster."""

    def __init__(self, bootstrap: str, run_id: str, pad: int = 40):
        self.bootstrap, self.run_id, self.pad = bootstrap, run_id, pad
        self.admin = AdminClient(client_conf(bootstrap))
        self.log = AckLog()
        self.counters: dict = {}
        self._producers: dict = {}

    # -- admin ---------------------------------------------------------------------------------
    def create_topics(self, specs: list[TopicSpec], timeout_s: float = 60, attempts: int = 3) -> None:
        """Create the lab's topics and wait for their full ISRs.  A request that times out (a 2.8 controller still
        settling on a loaded machine: 3 of 104 incidents in campaign 4) is sent again; a topic the earlier request
        did create is then reported as existing, which is success."""
        for attempt in range(attempts):
            try:
                self._create(specs, timeout_s)
                break
            except KafkaException as e:
                if e.args[0].code() != KafkaError._TIMED_OUT or attempt == attempts - 1:
                    raise
        for s in specs:
            for p in range(s.partitions):
                self.wait_isr(s.name, p, s.replication(p), timeout_s)

    def _create(self, specs: list[TopicSpec], timeout_s: float) -> None:
        fs = self.admin.create_topics(
            [
                NewTopic(s.name, len(s.assignment), replica_assignment=s.assignment, config=s.configs())
                if s.assignment
                else NewTopic(s.name, s.partitions, 3, config=s.configs())
                for s in specs
            ],
            operation_timeout=timeout_s,
            request_timeout=timeout_s,
        )
        for f in fs.values():
            try:
                f.result(timeout=timeout_s)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise

    def state(self, topic: str) -> dict:
        """partition -> {leader, replicas, isr} as the brokers' metadata says now."""
        md = self.admin.list_topics(topic=topic, timeout=5)
        t = md.topics[topic]
        if t.error is not None:
            raise KafkaException(t.error)
        return {
            p: {"leader": pm.leader, "replicas": list(pm.replicas), "isr": sorted(pm.isrs)}
            for p, pm in t.partitions.items()
        }

    def wait_isr(self, topic: str, part: int, size: int, timeout_s: float) -> dict:
        def ok():
            s = self.state(topic)[part]
            return s if s["leader"] >= 0 and len(s["isr"]) == size else None

        return wait_for(f"{topic}-{part} ISR of {size}", ok, timeout_s)

    def wait_leader_not(self, topic: str, part: int, old: int, timeout_s: float) -> dict:
        def ok():
            s = self.state(topic)[part]
            return s if s["leader"] >= 0 and s["leader"] != old else None

        return wait_for(f"{topic}-{part} leader other than {old}", ok, timeout_s)

    def end_offsets(self, topic: str, parts: list[int], timeout_s: float = 15) -> dict:
        """partition -> log end offset the leader reports (ListOffsets latest)."""
        req = {TopicPartition(topic, p): OffsetSpec.latest() for p in parts}
        fs = self.admin.list_offsets(req, request_timeout=timeout_s)
        return {tp.partition: f.result(timeout=timeout_s).offset for tp, f in fs.items()}

    def group_offsets(self, group: str, timeout_s: float = 15) -> dict:
        """'topic-p' -> committed offset of a consumer group, as its coordinator answers."""
        fs = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s)
        res = fs[group].result(timeout=timeout_s)
        return {f"{tp.topic}-{tp.partition}": tp.offset for tp in res.topic_partitions}

    def leader_epochs(self, topic: str, parts: list[int], timeout_s: float = 15) -> dict:
        """partition -> leader epoch the leader reports with its latest offset (ListOffsets)."""
        req = {TopicPartition(topic, p): OffsetSpec.latest() for p in parts}
        fs = self.admin.list_offsets(req, request_timeout=timeout_s)
        return {tp.partition: f.result(timeout=timeout_s).leader_epoch for tp, f in fs.items()}

    # -- producers -----------------------------------------------------------------------------
    def producer(self, kind: str) -> Producer:
        """kind: 'all' (acks=all, idempotent), 'one' (acks=1, not idempotent), 'txn' (transactional)."""
        if kind not in self._producers:
            conf = client_conf(
                self.bootstrap,
                **{"linger.ms": 5, "compression.type": "none", "message.timeout.ms": 15000, "request.timeout.ms": 5000},
            )
            if kind == "all":
                conf.update({"acks": "all", "enable.idempotence": True})
            elif kind == "one":
                conf.update({"acks": "1", "enable.idempotence": False, "retries": 0})
            else:
                conf.update({"acks": "all", "enable.idempotence": True, "transactional.id": f"{self.run_id}-tx"})
            p = Producer(conf)
            if kind == "txn":
                p.init_transactions(30)
            self._producers[kind] = p
        return self._producers[kind]

    def value(self, topic: str, kind: str) -> bytes:
        n = self.counters.get((topic, kind), 0)
        self.counters[(topic, kind)] = n + 1
        rid = f"{self.run_id}|{topic}|{kind}|{n}"
        return (rid + "|" + "x" * self.pad).encode()

    def produce(self, topic: str, kind: str, count: int, partition: int | None = None, flush_s: float = 20.0) -> int:
        """Send count records; wait (bounded) for their acknowledgements; return how many are unanswered."""
        p = self.producer(kind)
        for _ in range(count):
            kw = {} if partition is None else {"partition": partition}
            while True:
                try:
                    p.produce(topic, self.value(topic, kind), on_delivery=self.log.on_delivery, **kw)
                    break
                except BufferError:
                    p.poll(0.1)
            p.poll(0)
        return p.flush(flush_s)

    def transaction(self, topic: str, count: int, commit: bool, timeout_s: float = 30) -> None:
        p = self.producer("txn")
        p.begin_transaction()
        for _ in range(count):
            p.produce(
                topic, self.value(topic, "txn-commit" if commit else "txn-abort"), on_delivery=self.log.on_delivery
            )
        if commit:
            p.commit_transaction(timeout_s)
        else:
            p.flush(timeout_s)
            p.abort_transaction(timeout_s)

    def open_transaction(self, counts: dict[str, int], timeout_ms: int, timeout_s: float = 30) -> Producer:
        """A transaction of its own transactional id (``transaction.timeout.ms`` = timeout_ms) begun, count records
        written to each topic and acknowledged, and neither committed nor aborted: the caller leaves it open."""
        conf = client_conf(
            self.bootstrap,
            **{"linger.ms": 5, "compression.type": "none", "message.timeout.ms": 15000, "request.timeout.ms": 5000,
               "acks": "all", "enable.idempotence": True, "transactional.id": f"{self.run_id}-open",
               "transaction.timeout.ms": timeout_ms},
        )
        p = Producer(conf)
        p.init_transactions(timeout_s)
        p.begin_transaction()
        for topic, count in counts.items():
            for _ in range(count):
                p.produce(topic, self.value(topic, "txn-open"), on_delivery=self.log.on_delivery)
        p.flush(timeout_s)
        self._left_open = p  # kept referenced: destroying the producer must not end the transaction early
        return p

    def consume_and_commit(
        self, topic: str | list, group: str, max_records: int, timeout_s: float = 30, idle_s: float | None = None
    ) -> int:
        """A consumer group member reads up to max_records (or until idle_s without a record, once it has
        some) and commits its position synchronously."""
        c = Consumer(
            client_conf(
                self.bootstrap,
                **{
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                    "session.timeout.ms": 10000,
                },
            )
        )
        got, deadline = 0, time.monotonic() + timeout_s
        last = time.monotonic()
        try:
            c.subscribe(topic if isinstance(topic, list) else [topic])
            while got < max_records and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got += 1
                    last = time.monotonic()
                elif idle_s is not None and got and time.monotonic() - last > idle_s:
                    break
            if got:
                c.commit(asynchronous=False)
        finally:
            c.close()
        return got

    def close(self, timeout_s: float = 10) -> None:
        for p in self._producers.values():
            p.flush(timeout_s)
        self._producers.clear()


__all__ = ["AckLog", "Timeout", "TopicSpec", "Workload"]
