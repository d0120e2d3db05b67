"""The lab's network namespaces (kflab/netns.py): a node reachable through the bridge, cut off by a partition,
back after the heal, and nothing left behind by the teardown.  No Java; skips where ``ip netns add`` is not
permitted (a container without CAP_SYS_ADMIN, or no iproute2)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from kflab import netns, procs

REASON = netns.available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"network namespaces unavailable: {REASON}")


def _reachable(addr: str, port: int, timeout_s: float = 1.0) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _listen(plan: netns.NetPlan, node: int, port: int) -> subprocess.Popen:
    """A TCP listener inside the node's namespace, on its address (accepts for 30 s at most)."""
    code = (
        "import socket,sys,time\n"
        "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        f"s.bind(('{plan.addr(node)}',{port}))\n"
        "s.listen(8); s.settimeout(30); print('up', flush=True)\n"
        "end=time.time()+30\n"
        "while time.time()<end:\n"
        "    try: s.accept()[0].close()\n"
        "    except OSError: pass\n"
    )
    p = subprocess.Popen(plan.exec_prefix(node) + [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "up"
    return p


def _ours(plan: netns.NetPlan) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [n for n in (plan.ns(x) for x in plan.nodes) if n in listed]


def test_partition_cuts_the_node_off_and_heal_brings_it_back():
    plan = netns.make_plan((1, 2))
    listener = None
    try:
        assert len(_ours(plan)) == 2
        listener = _listen(plan, 1, 9092)
        assert _reachable(plan.addr(1), 9092), "the node is not reachable through the bridge"
        plan.partition(1)
        assert not _reachable(plan.addr(1), 9092), "a partitioned node still answers"
        plan.heal(1)
        deadline = time.monotonic() + 10  # the bridge port goes through its states again
        while not _reachable(plan.addr(1), 9092) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _reachable(plan.addr(1), 9092), "the healed node does not answer"
    finally:
        if listener:
            listener.kill()
            listener.wait(5)
        procs.kill_all()  # runs the plan's teardown, as every exit path of the lab does
    assert _ours(plan) == [], "namespaces left behind"
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert plan.bridge not in links and plan.veth(1) not in links


def test_addresses_stay_in_the_labs_own_subnet():
    plan = netns.NetPlan(subnet=7, nodes=(0, 1, 2, 3, 100))
    addrs = [plan.addr(n) for n in plan.nodes]
    assert all(a.startswith("10.200.7.") for a in addrs)
    assert len(set(addrs)) == len(addrs)
    assert all(len(plan.veth(n)) <= 15 for n in plan.nodes) and len(plan.bridge) <= 15  # IFNAMSIZ
