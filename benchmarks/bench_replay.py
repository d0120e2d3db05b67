"""Replay benchmark, one process, on synthetic batch summaries (no record decoding). Two figures:

* large: 3 replicas x 1 M batches of one partition replayed from restart on
  (one replica's recovery cuts it, one follower forks, one is a prefix);
  target (issue #11): under 0.5 s;
* many: N small partitions x 3 replicas, each a random valid history;
  target: 100 000 partitions in < 60 s.

    python benchmarks/bench_replay.py [--batches 1000000] [--partitions 100000] [--kafka-version latest]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import time
import zlib
from collections import Counter

import numpy as np

from kforensics.recovery.plan import RecoveryPlan
from kforensics.replay.engine import replay_partition
from kforensics.replay.replica import COLUMNS, BatchLog, Replica

SEGMENT_BATCHES = 100_000


def large_log(n: int, *, salt: int, epoch_every: int = 250_000, size: int = 120) -> np.ndarray:
    """``n`` one-record batches in segments of SEGMENT_BATCHES, the epoch rising every ``epoch_every``."""
    off = np.arange(n, dtype=np.int64)
    cols = {
        "base_offset": off, "last_offset": off, "partition_leader_epoch": off // epoch_every,
        "crc": (off * 2654435761 + salt) & 0xFFFFFFFF, "records_count": np.ones(n, np.int64),
        "size_in_bytes": np.full(n, size, np.int64), "producer_id": np.full(n, -1, np.int64),
        "magic": np.full(n, 2, np.int64), "crc_valid": np.ones(n, np.int64), "segment": off // SEGMENT_BATCHES,
        "position": (off % SEGMENT_BATCHES) * size,
    }
    return np.stack([cols[c] for c in COLUMNS], axis=1)


def large_partition(n: int) -> list[Replica]:
    """The leader (clean shutdown), a follower whose recovery cuts a corrupt batch near its end, and a
    follower that led briefly and wrote 1 000 batches the others never had."""
    segs = [f"{i * SEGMENT_BATCHES:020d}.log" for i in range((n + SEGMENT_BATCHES - 1) // SEGMENT_BATCHES)]
    epochs = [(e, e * 250_000) for e in range((n - 1) // 250_000 + 1)]
    lead = large_log(n, salt=0)
    cut = large_log(n, salt=0)
    bad = n - 5_000
    cut[bad, COLUMNS.index("crc_valid")] = 0
    last_seg = int(cut[bad, COLUMNS.index("segment")])
    fork = large_log(n - 1_000, salt=0)
    tail = large_log(n, salt=7)[n - 1_000:]
    tail[:, COLUMNS.index("partition_leader_epoch")] = epochs[-1][0] + 1
    fork = np.concatenate([fork, tail])
    hw = n - 10_000
    return [
        Replica(1, BatchLog(lead), high_watermark=hw, epoch_checkpoint=epochs, segments=segs,
                recovery=RecoveryPlan(clean_shutdown=True)),
        Replica(2, BatchLog(cut), high_watermark=hw, epoch_checkpoint=epochs, segments=segs,
                recovery=RecoveryPlan(recovers=True, from_segment=last_seg * SEGMENT_BATCHES,
                                      truncate_segment=segs[last_seg],
                                      truncate_position=int(cut[bad, COLUMNS.index("position")]))),
        Replica(3, BatchLog(fork), high_watermark=hw, segments=segs,
                epoch_checkpoint=epochs + [(epochs[-1][0] + 1, n - 1_000)], recovery=RecoveryPlan(clean_shutdown=True)),
    ]


def bench_large(n: int, mode: str, runs: int = 5) -> None:
    reps = large_partition(n)
    times, codes = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        r = replay_partition("bench", 0, reps, kafka_version=mode, leader=1)
        times.append(time.perf_counter() - t0)
        codes = r.verdict_codes()
    times.sort()
    print(f"large: 3 replicas x {n:,} batches ({mode}), restart + replay: best {times[0]:.3f}s, "
          f"median {times[len(times) // 2]:.3f}s (target < 0.5 s); verdicts {codes}")


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
    ap.add_argument("--batches", type=int, default=1_000_000)
    args = ap.parse_args()
    for mode in (args.kafka_version, "2.0.1", "0.11"):
        bench_large(args.batches, mode)
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
