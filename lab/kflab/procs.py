"""Child processes of the lab: each in its own process group, all killed on every exit path.

Every JVM runs under coreutils ``timeout --signal=KILL`` so that it stops by itself even when
this Python process is killed with SIGKILL and no handler runs.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_LIVE: dict[int, Proc] = {}
_CLEANUPS: list[Callable[[], None]] = []  # run after the processes are killed (network namespaces)
_LOCK = threading.Lock()
_HANDLERS_SET = False


class Timeout(Exception):
    """A bounded wait ran out."""


@dataclass
class Proc:
    """One child process group (its leader's pid is the group id)."""

    name: str
    popen: subprocess.Popen
    log_path: str
    stopped: bool = field(default=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        """Send a signal to the whole process group (timeout wrapper and JVM alike)."""
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGSTOP:
            self.stopped = True
        elif sig == signal.SIGCONT:
            self.stopped = False

    def kill(self, wait_s: float = 10.0) -> None:
        """SIGKILL the group and reap the leader (bounded)."""
        self.signal(signal.SIGKILL)
        try:
            self.popen.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            pass
        _forget(self)

    def terminate(self, wait_s: float) -> bool:
        """SIGTERM (a clean shutdown for Kafka), then SIGKILL after wait_s. True if it ended by itself."""
        if self.stopped:
            self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=wait_s)
            clean = True
        except subprocess.TimeoutExpired:
            clean = False
        self.kill()
        return clean


def _forget(p: Proc) -> None:
    with _LOCK:
        _LIVE.pop(p.pid, None)


def kill_all() -> None:
    """Kill every live child group, then run the registered clean-ups (once each); safe to call many times."""
    with _LOCK:
        procs = list(_LIVE.values())
    for p in procs:
        p.kill(wait_s=5.0)
    while _CLEANUPS:
        fn = _CLEANUPS.pop()
        try:
            fn()
        except Exception:  # noqa: BLE001, S110 - one failed clean-up must not stop the others
            pass


def on_cleanup(fn: Callable[[], None]) -> None:
    """Run fn at the next kill_all (every exit path: atexit, signals, the end of each run)."""
    install_handlers()
    with _LOCK:
        _CLEANUPS.append(fn)


def _on_signal(signum, _frame):
    kill_all()
    # re-raise the default behaviour so callers see the interruption
    raise KeyboardInterrupt(f"signal {signum}")


def install_handlers() -> None:
    """atexit plus SIGINT/SIGTERM/SIGHUP handlers that kill every child (main thread only)."""
    global _HANDLERS_SET
    if _HANDLERS_SET:
        return
    atexit.register(kill_all)
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, _on_signal)
    _HANDLERS_SET = True


def spawn(
    name: str, argv: list[str], log_path: str, max_life_s: int, env: dict | None = None, cwd: str | None = None
) -> Proc:
    """Start argv in a new session (own process group), stdout+stderr to log_path, killed after max_life_s."""
    install_handlers()
    # the wrapper gets SIGTERM if the harness dies (PDEATHSIG), forwards it to the JVM (Kafka shuts down) and
    # SIGKILLs it 15 s later; on its own it SIGKILLs the JVM after max_life_s
    full = ["timeout", "--kill-after=15", "--signal=KILL", str(int(max_life_s))] + argv
    with open(log_path, "ab") as out:
        # preexec_fn only calls prctl (async-signal-safe); the lab spawns from one thread at a time
        popen = subprocess.Popen(
            full,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=cwd,
            preexec_fn=_die_with_parent,
        )  # noqa: PLW1509
    p = Proc(name, popen, log_path)
    with _LOCK:
        _LIVE[p.pid] = p
    return p


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the harness process dies, however it dies."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (bound then released; the kernel picks them)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def wait_for(what: str, pred: Callable[[], object], timeout_s: float, interval_s: float = 0.5):
    """Poll pred until it returns a truthy value; raise Timeout after timeout_s (never waits longer)."""
    deadline = time.monotonic() + timeout_s
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - a probe that fails is just "not yet"
            last_exc = e
        if time.monotonic() >= deadline:
            raise Timeout(
                f"{what}: not reached in {timeout_s:.0f}s" + (f" (last error: {last_exc})" if last_exc else "")
            )
        time.sleep(min(interval_s, max(0.0, deadline - time.monotonic())))
