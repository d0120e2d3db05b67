"""An acks=1 producer run inside a broker's network namespace (the client on the leader's side of a network
partition): ``python -m kflab.netproducer BOOTSTRAP TOPIC PARTITION RUN_ID OUT_JSON STOP_FILE``.

Writes identified records (``<run>|<topic>|one-ns|<n>|...``) at a steady pace until STOP_FILE exists (or
120 s pass), then writes what it was told (the acknowledgement log) to OUT_JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .workload import Workload

PACE_S = 0.05  # 20 records a second: enough to write a tail while the leader is cut off, small evidence
MAX_S = 120


def main(argv: list[str]) -> int:
    bootstrap, topic, part, run_id, out, stop = argv
    w = Workload(bootstrap, run_id)
    p = w.producer("one")
    deadline = time.monotonic() + MAX_S
    while not Path(stop).exists() and time.monotonic() < deadline:
        p.produce(topic, w.value(topic, "one-ns"), partition=int(part), on_delivery=w.log.on_delivery)
        p.poll(PACE_S)
    p.flush(20)
    Path(out).write_text(json.dumps(w.log.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
