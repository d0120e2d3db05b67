"""A synthetic fleet's Spark tables (verdicts, batches, consumer_impact) for the fleet-view tests."""

from __future__ import annotations

import json
import random

import pandas as pd

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, ms


def synthetic_fleet(brokers: int = 200, partitions: int = 2000, clusters: int = 10, seed: int = 7):
    """(verdicts, batches, consumer_impact) frames of ``brokers`` brokers in ``clusters`` clusters holding
    ``partitions`` partitions (two per topic, three replicas each); about one partition in six loses records."""
    rnd = random.Random(seed)
    per_cluster = brokers // clusters
    verdicts, batches, impact = [], [], []
    for i in range(partitions):
        cluster = f"prod-{['eu', 'us', 'ap'][(i % clusters) % 3]}-{i % clusters:02d}"
        topic = f"svc{(i // 2) % 97:02d}.events.{['orders', 'payments', 'audit', 'clicks'][i % 4]}-v{i // 2}"
        part, c = i % 2, int(cluster[-2:])
        ids = rnd.sample(range(c * per_cluster, (c + 1) * per_cluster), 3)
        roll = rnd.random()
        for k, b in enumerate(ids):
            code, offsets, records = "OK", None, None
            if roll < 0.15 and k > 0:
                start = rnd.randrange(1000, 5000)
                n = int(rnd.paretovariate(1.2) * 5)
                code, offsets, records = "LOSS_COMMITTED", json.dumps([[start, start + n - 1]]), n
                ts = T0 + rnd.randrange(0, 3_600_000)
                batches.append({"cluster": cluster, "topic": topic, "partition": part, "broker_id": b,
                                "base_offset": start, "last_offset": start + n - 1, "records_count": n,
                                "base_timestamp": ts, "max_timestamp": ts + 500})
                if rnd.random() < 0.3:
                    impact.append({"cluster": cluster, "topic": topic, "partition": part,
                                   "group": f"consumer-{rnd.randrange(40)}", "consumed_lost_records": n,
                                   "outcome": rnd.choice(["TRUNCATION_DETECTED", "OFFSET_OUT_OF_RANGE"])})
            elif roll < 0.15 and k == 0:
                code = "UNCLEAN_ELECTION"
            elif 0.15 <= roll < 0.17 and k == 1:
                code = "NOT_CONVERGING"
            verdicts.append({"cluster": cluster, "topic": topic, "partition": part, "broker_id": b,
                             "role": "leader" if k == 0 else "follower", "leader": ids[0], "leader_epoch": 3,
                             "committed_bound": 10_000, "verdict": code, "offsets": offsets, "records": records})
    return pd.DataFrame(verdicts), pd.DataFrame(batches), pd.DataFrame(impact)
