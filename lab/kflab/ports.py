"""Loopback ports for the lab's clusters, reserved under a lock so that concurrent clusters never collide.

A port is picked below the kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``), so no
client connection of the workload or of Kafka can take it between the pick and the JVM's bind, and it is
written to a reservation file (``lab/.cache/ports.json``) with the reserving process's pid, under an exclusive
``flock``: another harness process (a parallel campaign's worker, a test worker) skips it while that pid runs
and for at most ``HOLD_S`` seconds (the longest life of a lab JVM).
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import socket
import time
from pathlib import Path

HOLD_S = 1500  # a JVM lives at most cluster.MAX_LIFE_S (1200 s) plus its 15 s kill-after
LOW = 20000  # the lab's range: [LOW, start of the ephemeral range)


def default_file() -> Path:
    from .jars import CACHE

    return CACHE / "ports.json"


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _bindable(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _live_entries(table: dict, now: float) -> dict:
    """The reservations still held: their process runs and they are younger than HOLD_S."""
    return {p: e for p, e in table.items() if _alive(int(e["pid"])) and now - float(e["t"]) < HOLD_S}


def reserve(n: int, path: Path | None = None, pid: int | None = None) -> list[int]:
    """n distinct loopback ports no live reservation holds and nothing is bound to, reserved for pid
    (default: this process) until it exits or HOLD_S passes."""
    path = Path(path or default_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    pid = os.getpid() if pid is None else pid
    high = _ephemeral_low()
    low = LOW if high - LOW >= 1000 else 10000  # a machine whose ephemeral range starts low
    pick = random.SystemRandom()
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            table = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            table = {}  # an unreadable file: start afresh (a torn write of a SIGKILLed harness)
        now = time.time()
        table = _live_entries(table, now)
        got: list[int] = []
        for _ in range(50 * n + 200):  # bounded: the range holds thousands of ports
            if len(got) == n:
                break
            port = pick.randrange(low, high)
            if str(port) in table or port in got or not _bindable(port):
                continue
            got.append(port)
        if len(got) < n:
            raise RuntimeError(f"no {n} free loopback ports in [{low}, {high})")
        for port in got:
            table[str(port)] = {"pid": pid, "t": now}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(table))
        tmp.replace(path)
    return got


def release(ports: list[int], path: Path | None = None) -> None:
    """Give reserved ports back (a cluster that has stopped); unknown ports are ignored."""
    path = Path(path or default_file())
    if not path.exists():
        return
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            table = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        for port in ports:
            table.pop(str(port), None)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(table))
        tmp.replace(path)
