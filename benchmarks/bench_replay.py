"""Replay benchmark: N partitions x 3 replicas of synthetic summaries (no record decoding), one process.

    python benchmarks/bench_replay.py [--partitions 100000] [--kafka-version latest]

Each partition gets a random valid history (a few elections, appends,
partial replication, a crash) and is replayed with the default election.
Prints partitions/s and the verdict mix; target: 100 000 partitions in < 60 s.
"""

from __future__ import annotations

import argparse
import random
import time
import zlib
from collections import Counter

from kforensics.replay.engine import replay_partition
from kforensics.replay.replica import BatchLog, Replica


def synthetic(rnd: random.Random, pid: int) -> list[Replica]:
    logs = {1: [], 2: [], 3: []}
    hws = {1: 0, 2: 0, 3: 0}
    epoch, leader = 0, 1
    for _ in range(rnd.randint(1, 4)):
        for _ in range(rnd.randint(1, 20)):
            off = len(logs[leader])
            logs[leader].append([off, off, epoch, zlib.crc32(f"{pid}:{leader}:{off}:{epoch}".encode()), 1, 120, -1, 2])
        for b in logs:
            if b != leader and rnd.random() < 0.7:  # some followers miss a round
                src = logs[leader]
                n = len(logs[b])
                common = 0
                while common < min(n, len(src)) and src[common] == logs[b][common]:
                    common += 1
                logs[b] = [list(x) for x in src[: rnd.randint(common, len(src))]]
        hws[leader] = min(len(logs[b]) for b in logs)
        for b in logs:
            hws[b] = min(hws[leader], len(logs[b]))
        if rnd.random() < 0.3:
            victim = rnd.choice(list(logs))
            logs[victim] = logs[victim][: max(0, len(logs[victim]) - rnd.randint(0, 3))]
            hws[victim] = min(hws[victim], len(logs[victim]))
        epoch += 1
        leader = rnd.choice(list(logs))
    return [Replica(b, BatchLog.from_rows(rows), high_watermark=hws[b]) for b, rows in logs.items()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--kafka-version", default="latest")
    args = ap.parse_args()
    rnd = random.Random(42)
    t0 = time.perf_counter()
    parts = [synthetic(rnd, i) for i in range(args.partitions)]
    t1 = time.perf_counter()
    codes: Counter = Counter()
    for i, reps in enumerate(parts):
        r = replay_partition("bench", i, reps, kafka_version=args.kafka_version)
        for vs in r.verdict_codes().values():
            codes.update(vs)
    t2 = time.perf_counter()
    print(f"built {args.partitions:,} partitions x 3 replicas in {t1 - t0:.1f}s")
    print(f"replayed {args.partitions:,} partitions ({args.kafka_version}) in {t2 - t1:.1f}s: "
          f"{args.partitions / (t2 - t1):,.0f} partitions/s (target: 100,000 in < 60 s)")
    print("verdicts:", dict(codes.most_common()))


if __name__ == "__main__":
    main()
