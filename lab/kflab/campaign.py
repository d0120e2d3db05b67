"""A campaign: incidents from a seeded schedule, up to N at once, each its own cluster in its own process.

The schedule is a pure function of the seed, the count, the versions and the scenarios: incident i is the
same (version, scenario, seed) whatever N is.  Each incident runs in a worker process of its own
(``python -m kflab run``): its JVMs, process groups, ports (reserved, ``kflab/ports.py``), network namespaces
(a subnet of its own, ``kflab/netns.py``) and run dir are its own, and its exit paths clean them up
(``kflab/procs.py``).  The campaign process only schedules, collects each ``result.json`` as the worker ends,
and rewrites the summary after every result.

Stopping: ``--max-minutes`` or a file ``STOP`` in the campaign dir stops the starting of incidents (those
running end normally); SIGINT/SIGTERM/SIGHUP stop every worker (SIGTERM: each kills its JVMs and removes its
namespaces), and the campaign ends with the summary of what finished.  A worker is started with
PR_SET_PDEATHSIG, so it is told to stop even if the campaign process is SIGKILLed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .report import write_summary

LAB = Path(__file__).resolve().parents[1]
POLL_S = 0.5  # the campaign's own polling of its workers (not Kafka's)
STOP_GRACE_S = 40  # a stopped worker's time to kill its JVMs and remove its namespaces before SIGKILL


@dataclass(frozen=True)
class Item:
    """One incident of the schedule."""

    index: int
    version: str
    scenario: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.scenario}-{self.version}-s{self.seed}"


def schedule(count: int, seed: int, versions: list[str], scenarios: list[str]) -> list[Item]:
    """The campaign's incidents: versions round-robin, scenario and seed drawn from one seeded stream (the
    same draws as the serial campaign made, so earlier campaigns' seeds name the same incidents)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        version, scenario, s = versions[i % len(versions)], rng.choice(scenarios), rng.randrange(1 << 30)
        out.append(Item(i, version, scenario, s))
    return out


def worker_argv(item: Item, out: Path) -> list[str]:
    """The worker of one incident: ``kflab run`` in a fresh interpreter."""
    return [
        sys.executable,
        "-m",
        "kflab",
        "run",
        item.scenario,
        "--seed",
        str(item.seed),
        "--version",
        item.version,
        "--out",
        str(out),
    ]


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


@dataclass
class Campaign:
    """Runs a schedule with at most ``parallel`` workers; ``argv`` makes a worker's command (tests give a
    stand-in that needs no Java)."""

    out: Path
    items: list[Item]
    parallel: int = 1
    deadline: float = float("inf")  # time.monotonic() after which no incident starts
    argv: Callable[[Item, Path], list[str]] = worker_argv
    print_fn: Callable[[str], None] = field(default=lambda s: print(s, flush=True))
    running: dict[int, tuple[Item, subprocess.Popen, float]] = field(default_factory=dict)
    results: dict[int, dict] = field(default_factory=dict)

    def start(self, item: Item) -> None:
        logs = self.out / "workers"
        logs.mkdir(parents=True, exist_ok=True)
        env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(LAB), os.environ.get("PYTHONPATH")]))}
        with open(logs / f"{item.index:04d}-{item.name}.log", "ab") as log:
            p = subprocess.Popen(
                self.argv(item, self.out),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C reaches the campaign, which stops the workers
                env=env,
                preexec_fn=_die_with_parent,
            )  # noqa: PLW1509
        self.running[item.index] = (item, p, time.monotonic())

    def collect(self, item: Item, rc: int | None, started: float) -> dict:
        """The worker's result.json, or a harness-error result when it left none."""
        path = self.out / item.name / "result.json"
        r = None
        try:
            r = json.loads(path.read_text())
            if r.get("seed") != item.seed or r.get("version") != item.version or r.get("status") is None:
                r = None  # a result of an earlier run of the same dir, or half-written: not this worker's
        except (OSError, ValueError):
            pass
        if r is None:
            r = {
                "scenario": item.scenario,
                "version": item.version,
                "seed": item.seed,
                "run_dir": str(self.out / item.name),
                "status": "interrupted" if rc is None or rc < 0 else "harness-error",
                "error": f"the worker ended (exit {rc}) without a result",
            }
        r["campaign_index"] = item.index
        r["worker_seconds"] = round(time.monotonic() - started, 1)
        return r

    def summary(self) -> dict:
        return write_summary(self.out, [self.results[i] for i in sorted(self.results)])

    def reap(self) -> None:
        for idx, (item, p, t) in list(self.running.items()):
            rc = p.poll()
            if rc is None:
                continue
            del self.running[idx]
            r = self.collect(item, rc, t)
            self.results[idx] = r
            s = self.summary()
            self.print_fn(
                f"[{len(self.results)}/{len(self.items)}] #{idx} {item.scenario} {item.version} seed {item.seed}: "
                f"{r['status']} in {r['worker_seconds']} s; disagreements so far {len(s['disagreements'])}"
            )

    def stopping(self) -> bool:
        return time.monotonic() > self.deadline or (self.out / "STOP").exists()

    def run(self) -> dict:
        """Every incident, at most ``parallel`` at once, until done or stopped; the summary of what ended."""
        self.out.mkdir(parents=True, exist_ok=True)
        pending = list(self.items)
        try:
            while pending or self.running:
                self.reap()
                if pending and self.stopping():
                    self.print_fn(f"stopped starting incidents: {len(pending)} not started")
                    pending = []
                while pending and len(self.running) < self.parallel:
                    self.start(pending.pop(0))
                time.sleep(POLL_S if self.running else 0)
        finally:
            self.stop_all()
        return self.summary()

    def stop_all(self) -> None:
        """SIGTERM every running worker (it kills its JVMs, removes its namespaces), SIGKILL after the grace."""
        for _item, p, _t in self.running.values():
            _signal_group(p, signal.SIGTERM)
        end = time.monotonic() + STOP_GRACE_S
        for _item, p, _t in self.running.values():
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait(timeout=10)
        for idx, (item, p, t) in list(self.running.items()):
            self.results[idx] = self.collect(item, p.returncode, t)
        self.running.clear()


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


def prepare(versions: list[str]) -> None:
    """What every worker would otherwise build at once: the jars and formatted storage of each version, and
    the pinned kforensics ($KFLAB_KFORENSICS_REV) extracted once."""
    from . import cluster, jars

    for v in versions:
        jars.ensure_jars(v)
        cluster.template(v)
    if os.environ.get("KFLAB_KFORENSICS_REV") and not os.environ.get("KFLAB_KFORENSICS"):
        from .predict import pinned

        pinned(os.environ["KFLAB_KFORENSICS_REV"])
