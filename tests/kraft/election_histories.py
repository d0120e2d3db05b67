"""Random election histories written as evidence: broker disks and a controller's metadata log.

Each history is a partition on brokers 1-3 with a random replica order, a
random last registration (ISR, ELR, LastKnownElr, leader or none), random
broker registrations (fenced, in controlled shutdown), topic configs, clean
shutdown markers and logs of random lengths.  The parity tests run ``replay``
and ``spark`` over them; the election model's own property test
(``test_election_properties``) checks the leader against Kafka's rules.
"""

from __future__ import annotations

import random
from pathlib import Path

from kforensics.scenario import ScenarioBuilder
from kforensics.scenario.elections import BrokerState, ControllerRecord, PartitionState, write_controller_record

BROKERS = [1, 2, 3]


def _registration(rng: random.Random, replicas: list[int]) -> tuple[PartitionState, bool]:
    isr = [r for r in replicas if rng.random() < 0.5]
    elr_on = rng.random() < 0.5
    elr = [r for r in replicas if r not in isr and rng.random() < 0.5] if elr_on else []
    lke = [rng.choice(replicas)] if elr_on and not isr and rng.random() < 0.5 else []
    leader = rng.choice(isr) if isr and rng.random() < 0.5 else -1
    return PartitionState(isr, leader, 1, elr=elr, last_known_elr=lke), elr_on


def write_history(root: Path, name: str, seed: int) -> Path:
    """One random history under ``root/name`` (``broker-<id>/`` and ``controller/``); its dir."""
    rng = random.Random(seed)
    replicas = rng.sample(BROKERS, len(BROKERS))
    first = replicas[0]
    sb = ScenarioBuilder(name, brokers=BROKERS, controller=False, description=f"random election history {seed}")
    sb.elect(first, epoch=0).produce(4)
    for b in replicas[1:]:
        sb.replicate(b, up_to=rng.choice([2, 4]))
    sb.produce(rng.randint(0, 2))
    for b in BROKERS:
        sb.high_watermark(b, 2)
    last, elr_on = _registration(rng, replicas)
    brokers = {b: BrokerState(100 + b, fenced=rng.random() < 0.5, in_controlled_shutdown=rng.random() < 0.2)
               for b in BROKERS}
    record = ControllerRecord(replicas, [PartitionState(list(replicas), first, 0), last], brokers, elr=elr_on,
                              min_insync_replicas=rng.randint(1, 3), unclean=rng.random() < 0.5)
    d = sb.write(root / name)
    markers = {b: 100 + b for b in BROKERS if rng.random() < 0.5}
    write_controller_record(d, name, sb.topic, sb.partition, record, markers)
    return d
