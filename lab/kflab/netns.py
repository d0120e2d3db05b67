"""Network namespaces for the network-partition incident: each node of the cluster in a namespace of its own,
joined by veth pairs to a bridge in the harness's namespace, on 10.200.<subnet>.0/24 only.

Node n listens on 10.200.<subnet>.<host(n)>; the bridge holds 10.200.<subnet>.254, so the harness (and its
clients) reach every node with no routing or forwarding.  Partitioning a node detaches its veth from the
bridge: it then reaches only the processes inside its own namespace.  Everything made here is removed by
``teardown`` (namespaces, veths, bridge), which ``procs`` calls after killing the processes on every exit
path; namespaces left by a harness that was SIGKILLed are named after its pid and removed by the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
import shutil
import subprocess
from dataclasses import dataclass, field

PREFIX = "kflab"


class Unavailable(Exception):
    """Network namespaces cannot be made here (no ip tool, or not permitted)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and r.returncode != 0:
        raise Unavailable(f"ip {' '.join(args)}: {(r.stderr or r.stdout).strip()}")
    return r


def host(node: int) -> int:
    """The last byte of a node's address: brokers 1..3, ZooKeeper 10, the KRaft controller 100."""
    return {0: 10}.get(node, node)


@dataclass
class NetPlan:
    """The namespaces of one cluster: names, addresses, and what is partitioned now."""

    subnet: int
    nodes: tuple[int, ...]
    made: list[str] = field(default_factory=list)  # namespaces made, for teardown
    bridge_made: bool = False
    cut: set[int] = field(default_factory=set)

    @property
    def bridge(self) -> str:
        return f"kfb{self.subnet}p{os.getpid() % 100000}"

    def ns(self, node: int) -> str:
        return f"{PREFIX}-{os.getpid()}-{self.subnet}-n{node}"

    def veth(self, node: int) -> str:
        return f"kfv{self.subnet}n{node}"

    def addr(self, node: int) -> str:
        return f"10.200.{self.subnet}.{host(node)}"

    def exec_prefix(self, node: int) -> list[str]:
        """argv prefix that runs a command inside the node's namespace (ip exec()s it: same pid)."""
        return ["ip", "netns", "exec", self.ns(node)]

    def setup(self) -> None:
        """Bridge, one namespace and veth pair per node, addresses; undone by teardown on any failure."""
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self.bridge_made = True
            _ip("addr", "add", f"10.200.{self.subnet}.254/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for n in self.nodes:
                ns, v, peer = self.ns(n), self.veth(n), f"kfp{self.subnet}n{n}"
                _ip("netns", "add", ns)
                self.made.append(ns)
                _ip("link", "add", v, "type", "veth", "peer", "name", peer)
                _ip("link", "set", peer, "netns", ns)
                _ip("link", "set", v, "master", self.bridge)
                _ip("link", "set", v, "up")
                _ip("-n", ns, "addr", "add", f"{self.addr(n)}/24", "dev", peer)
                _ip("-n", ns, "link", "set", peer, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except Exception:
            self.teardown()
            raise

    def partition(self, node: int) -> None:
        """Cut the node off from every other node and the harness (its veth leaves the bridge)."""
        _ip("link", "set", self.veth(node), "nomaster")
        self.cut.add(node)

    def heal(self, node: int) -> None:
        _ip("link", "set", self.veth(node), "master", self.bridge)
        self.cut.discard(node)

    def teardown(self) -> None:
        """Delete the namespaces (their veth pairs go with them) and the bridge; safe to call many times."""
        for ns in self.made:
            _ip("netns", "del", ns, check=False)
        self.made.clear()
        for n in self.nodes:  # a veth whose namespace was never made
            _ip("link", "del", self.veth(n), check=False)
        if self.bridge_made:
            _ip("link", "del", self.bridge, check=False)
            self.bridge_made = False


def _stale() -> None:
    """Remove namespaces and bridges of lab harnesses that are no longer running (a SIGKILLed harness)."""
    r = _ip("netns", "list", check=False)
    for m in re.finditer(rf"^{PREFIX}-(\d+)-\d+-n\d+", r.stdout, re.M):
        if not os.path.exists(f"/proc/{m.group(1)}"):
            _ip("netns", "del", m.group(0), check=False)
    r = _ip("-o", "link", "show", "type", "bridge", check=False)
    live = {p % 100000 for p in _pids()}
    for m in re.finditer(r"^\d+: (kfb\d+p(\d+))[:@]", r.stdout, re.M):
        if int(m.group(2)) not in live:
            _ip("link", "del", m.group(1), check=False)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _used_subnets() -> set[int]:
    r = _ip("-o", "addr", "show", check=False)
    return {int(m.group(1)) for m in re.finditer(r"inet 10\.200\.(\d+)\.", r.stdout)}


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot (a probe namespace is made and
    deleted)."""
    if not shutil.which("ip"):
        return "the ip tool (iproute2) is not installed"
    probe = f"{PREFIX}-{os.getpid()}-probe"
    r = _ip("netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"ip netns add is not permitted here: {(r.stderr or r.stdout).strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def make_plan(nodes: tuple[int, ...], rng: random.Random | None = None) -> NetPlan:
    """Namespaces for these nodes on a 10.200.x.0/24 no interface of this machine uses; raises Unavailable."""
    from . import procs

    reason = available()
    if reason:
        raise Unavailable(reason)
    # the seeded draw is over the whole range, whatever other harnesses hold, so the incident's random stream
    # is the same alone or beside concurrent runs; a subnet in use moves to the next free one, chosen and set up
    # under the lab's lock so that two concurrent runs never take the same one
    want = (rng or random.Random()).choice(SUBNETS)
    with _subnet_lock():
        _stale()
        subnet = pick_subnet(want, _used_subnets())
        if subnet is None:
            raise Unavailable("no free 10.200.x.0/24 subnet")
        plan = NetPlan(subnet, nodes)
        procs.on_cleanup(plan.teardown)
        plan.setup()
    return plan


SUBNETS = list(range(1, 250))


def pick_subnet(want: int, used: set[int]) -> int | None:
    """want if no interface uses it, else the next free subnet after it (wrapping); None if all are used."""
    i = SUBNETS.index(want)
    for s in SUBNETS[i:] + SUBNETS[:i]:
        if s not in used:
            return s
    return None


@contextlib.contextmanager
def _subnet_lock():
    """An exclusive lock shared by every lab harness of this machine (lab/.cache/netns.lock)."""
    from .jars import CACHE

    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "netns.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
