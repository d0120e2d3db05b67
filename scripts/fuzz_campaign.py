#!/usr/bin/env python
"""A long fuzz campaign over every file kind kforensics reads (issue #12, "Hostile evidence").

Runs ``--total`` mutated inputs (default 1,000,000) through kforensics in worker
subprocesses, with the same inputs and judgements as the CI fuzz tests
(``tests/fuzz``): every input is named by (kind, index) and rebuilt from the
seeds, so any reported case is reproducible with ``--replay KIND:INDEX``.

Per input: a CPU-time limit (``--time-limit``, 10 s; a loop burns CPU, while
wall time on a shared machine stretches with its load) with a wall-time
backstop (``--wall-factor`` times the limit, for a read that blocks) and a peak-RSS limit (``--rss-limit-mb``, 500 MB),
measured per input (``/proc/self/clear_refs`` resets the peak, ``VmHWM`` reads
it) and enforced by the parent, which polls each worker's RSS and kills it
past the limit; ``RLIMIT_AS`` is a backstop.  Recorded: crashes (an exception
escaped, exit code 3, or the worker died), hangs (killed at the time limit),
RSS peaks, and "Kafka would refuse but no finding" cases (silent acceptances).
Each reproducing input is saved under ``--out`` (a temp dir by default; never
inside the repository or ../shared), with what happened.

    .venv/bin/python scripts/fuzz_campaign.py --total 1000000 --workers 1
    .venv/bin/python scripts/fuzz_campaign.py --total 1000000 --start 250000   # the rest of a partial run

Inputs run in one fixed order (kinds interleaved, ``--chunk`` inputs at a
time); ``--start N`` skips the first N of that order, so a campaign stopped
part way (or given a deadline with ``--stop-after``) is finished by a second run
with the same ``--total``, ``--seed`` and ``--kinds``: the summary's ``next_start`` is the
position up to which every input has been run.
    .venv/bin/python scripts/fuzz_campaign.py --replay log_v2:1234
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if os.environ.get("KF_FUZZ_PACKAGE_ROOT"):
    # a snapshot of kforensics (and tests/fuzz) to run instead of the checkout: ahead of the editable install
    sys.path.insert(0, os.environ["KF_FUZZ_PACKAGE_ROOT"])
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")
                        and "editable" not in type(f).__module__]

#: share of the inputs each kind gets (normalised)
WEIGHTS = {
    "log_v0": 8, "log_v1": 8, "log_v2": 14, "control": 6, "metadata_log": 5, "kraft_snapshot": 5,
    "offset_index": 3, "time_index": 3, "txn_index": 2,
    "replication_offset_checkpoint": 3, "recovery_point_offset_checkpoint": 2, "log_start_offset_checkpoint": 2,
    "cleaner_offset_checkpoint": 2, "leader_epoch_checkpoint": 3,
    "meta_properties": 3, "partition_metadata": 3, "producer_snapshot": 3, "clean_shutdown": 2, "quorum_state": 3,
    "internal_record": 8, "log_dir": 2,
    # issue #22: archives cut at random points, segments that shrink while read (scripts/fuzz_short_reads.py)
    "archive_cut": 4, "shrinking_file": 4,
}
SAVE_PER_CLASS = 40  # reproducing inputs saved per (kind, category)


def mutation_seed(base: int, kind: str, index: int) -> int:
    return zlib.crc32(f"{base}:{kind}:{index}".encode()) * 1_000_003 + index


def plan(total: int) -> list[tuple[str, int]]:
    """(kind, count) per kind, summing to ``total``."""
    w = sum(WEIGHTS.values())
    counts = {k: total * v // w for k, v in WEIGHTS.items()}
    counts["log_v2"] += total - sum(counts.values())
    return list(counts.items())


# ============================================================================= the worker
def _peak_reset() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _status_kb(field: str, pid: str = "self") -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def worker_main(args) -> None:
    """Read tasks ``kind start count`` on stdin; report every input on stdout (one JSON line each)."""
    try:
        resource.setrlimit(resource.RLIMIT_AS, (args.as_limit_mb << 20, args.as_limit_mb << 20))
    except (ValueError, OSError):
        pass
    from kforensics.log import kernels
    from tests.fuzz import corpus, harness

    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_short_reads as short_reads

    kernels.get()
    seeds = corpus.all_seeds()
    work = Path(args.work)
    # warm up: lazy imports and compiled kernels of every path (the scan, its Parquet tables, the CLI) are paid
    # here, not by the first input of each kind, which would be timed (and killed) for them
    for kind, pool in seeds.items():
        if kind != "internal_record" and pool:
            harness.run_input(harness.Input(kind, pool[0].name, "warm-up", dict(pool[0].files)), work, cli=True,
                              scan=True)
    for kind in short_reads.KINDS:  # warm-up of the CLI's scan path on an archive and of the reader
        short_reads.run(kind, 0, 0, work / kind)
    out = Path(args.out)
    saved: dict[tuple[str, str], int] = defaultdict(int)
    emit = sys.stdout
    for line in sys.stdin:
        kind, start, count = line.split()
        for i in range(int(start), int(start) + int(count)):
            ms = mutation_seed(args.seed, kind, i)
            emit.write(json.dumps({"start": i, "kind": kind}) + "\n")
            emit.flush()
            cli = args.cli_every and i % args.cli_every == 0
            scan = args.scan_every and i % args.scan_every == 0
            full = not args.full_every or i % args.full_every == 0
            _peak_reset()
            t0 = time.monotonic()
            short_size = 0
            try:
                if kind in short_reads.KINDS:
                    inp = None
                    o, short_size = short_reads.run(kind, i, ms, work / kind)
                else:
                    inp = harness.make_input(kind, i, ms, seeds)
                    o = harness.run_input(inp, work, cli=bool(cli), scan=bool(scan), full=bool(full))
            except Exception:  # noqa: BLE001 - the harness itself failed: report it as a crash
                inp = None
                o = harness.Outcome(crash="harness: " + traceback.format_exc())
            dt = time.monotonic() - t0
            rss = _status_kb("VmHWM")
            size = inp.size if inp else (short_size if kind in short_reads.KINDS else 0)
            rec = {"done": i, "kind": kind, "t": round(dt, 4), "rss_kb": rss, "size": size,
                   "crash": bool(o.crash), "silent": len(o.silent), "misreported": len(o.misreported),
                   "false": len(o.false_refusals), "problems": len(o.problems), "findings": o.findings,
                   "cli": bool(cli), "scan": bool(scan), "full": bool(full),
                   "structural": bool(inp and inp.structural), "refusals": o.refusals}
            for cat, items in (("crash", [o.crash] if o.crash else []), ("silent", o.silent),
                               ("misreported", o.misreported), ("problems", o.problems),
                               ("false", o.false_refusals)):
                if items:
                    rec[f"{cat}_text"] = items[0][-1500:]
                    key = (kind, cat if cat != "silent" else "silent:" + _reason(items[0]))
                    if saved[key] < SAVE_PER_CLASS and inp is not None:
                        saved[key] += 1
                        save_case(out / cat, kind, i, inp, {"what": inp.what, "seed": inp.seed_name, cat: items,
                                                            "cli": bool(cli), "scan": bool(scan)})
            emit.write(json.dumps(rec) + "\n")
            emit.flush()


def _reason(text: str) -> str:
    return text.split(" at ")[0].split(" ")[0]


def save_case(where: Path, kind: str, index: int, inp, info: dict) -> Path:
    d = where / f"{kind}-{index}"
    d.mkdir(parents=True, exist_ok=True)
    files = d / "files"
    if inp.kind == "internal_record":
        files.mkdir(exist_ok=True)
        (files / "key.bin").write_bytes(inp.key or b"")
        (files / "value.bin").write_bytes(inp.value or b"")
        info = {**info, "topic": inp.topic, "key_null": inp.key is None, "value_null": inp.value is None}
    else:
        from tests.fuzz.harness import write_files

        write_files(files, inp.files)
    (d / "case.json").write_text(json.dumps({"kind": kind, "index": index, **info}, indent=1, default=str))
    return d


# ============================================================================= the parent
class Worker:
    def __init__(self, wid: int, args, out: Path):
        self.wid = wid
        self.args = args
        self.out = out
        self.proc: subprocess.Popen | None = None
        self.current: tuple[str, int] | None = None
        self.started = 0.0
        self.cpu_started = 0.0
        self.buf = b""
        self.queue_end: tuple[str, int] | None = None  # last index of the running task
        self.task: tuple[str, int, int] | None = None

    def spawn(self) -> None:
        work = Path(self.args.workroot) / f"w{self.wid}"
        cmd = [sys.executable, "-u", os.path.abspath(__file__), "--worker", "--work", str(work),
               "--out", str(self.out), "--seed", str(self.args.seed), "--cli-every", str(self.args.cli_every),
               "--scan-every", str(self.args.scan_every), "--full-every", str(self.args.full_every),
               "--as-limit-mb", str(self.args.as_limit_mb)]
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        if self.args.pythonpath:
            env["KF_FUZZ_PACKAGE_ROOT"] = self.args.pythonpath
            # the snapshot's tests/fuzz looks for ../shared beside itself: point it at the checkout's
            env.setdefault("KF_FUZZ_SHARED", str(ROOT.parent / "shared"))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd=str(ROOT))
        self.buf = b""
        self.current = None

    def send(self, kind: str, start: int, count: int) -> None:
        self.task = (kind, start, count)
        self.proc.stdin.write(f"{kind} {start} {count}\n".encode())
        self.proc.stdin.flush()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_campaign(args) -> dict:
    out = Path(args.out or tempfile.mkdtemp(prefix="kforensics-fuzz-"))
    out.mkdir(parents=True, exist_ok=True)
    for bad in (ROOT, ROOT.parent / "shared"):
        if out.resolve() == bad.resolve() or bad.resolve() in out.resolve().parents:
            sys.exit(f"refusing to write fuzz cases inside {bad}")
    own_workroot = not args.workroot
    args.workroot = args.workroot or tempfile.mkdtemp(prefix="kf-fuzz-work-", dir="/dev/shm" if
                                                      os.path.isdir("/dev/shm") else None)
    kinds = [(k, n) for k, n in plan(args.total) if not args.kinds or k in args.kinds.split(",")]
    chunks: list[tuple[str, int, int]] = []
    for kind, n in kinds:
        for s in range(0, n, args.chunk):
            chunks.append((kind, s, min(args.chunk, n - s)))
    # interleave kinds so a partial run covers every kind
    chunks.sort(key=lambda c: (c[1], c[0]))
    chunks = skip_inputs(chunks, args.start)
    stats = {"kinds": {}, "started": time.time(), "out": str(out), "total_planned": sum(n for _, n in kinds),
             "start": args.start, "next_start": args.start, "total": args.total, "seed": args.seed,
             "limits": {"time_s": args.time_limit, "rss_mb": args.rss_limit_mb}}
    per = stats["kinds"]

    def kstat(kind: str) -> dict:
        return per.setdefault(kind, {"inputs": 0, "crashes": 0, "hangs": 0, "rss_over": 0, "silent": 0,
                                     "silent_inputs": 0, "misreported": 0, "false_refusals": 0, "problems": 0,
                                     "max_rss_mb": 0.0, "max_time_s": 0.0, "max_time_input": None,
                                     "max_rss_input": None, "findings": 0, "cli_runs": 0, "scan_runs": 0,
                                     "full_runs": 0,
                                     "structural_inputs": 0, "refusals_checked": 0,
                                     "refusals_checked_structural": 0, "max_size": 0,
                                     "time_s": 0.0})

    from tests.fuzz import corpus, harness

    seeds = corpus.all_seeds()

    def save_killed(cat: str, kind: str, i: int, note: str) -> None:
        try:
            inp = harness.make_input(kind, i, mutation_seed(args.seed, kind, i), seeds)
            save_case(out / cat, kind, i, inp, {"what": inp.what, "seed": inp.seed_name, cat: note})
        except Exception:  # noqa: BLE001
            pass

    workers = [Worker(w, args, out) for w in range(args.workers)]
    try:
        return _drive(args, out, stats, per, kstat, save_killed, workers, chunks)
    finally:
        for w in workers:
            w.kill()
        if own_workroot:
            shutil.rmtree(args.workroot, ignore_errors=True)


def skip_inputs(chunks: list[tuple[str, int, int]], start: int) -> list[tuple[str, int, int]]:
    """``chunks`` (in campaign order) without their first ``start`` inputs."""
    out = []
    for kind, s, n in chunks:
        if start >= n:
            start -= n
            continue
        out.append((kind, s + start, n - start))
        start = 0
    return out


class Progress:
    """The position in campaign order up to which every input has been run (``--start`` for the rest)."""

    def __init__(self, chunks: list[tuple[str, int, int]], start: int):
        self.chunks = chunks
        self.done = [0] * len(chunks)
        self.first = 0
        self.position = start
        self._by_kind: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
        for c, (k, s, n) in enumerate(chunks):
            self._by_kind[k].append((s, n, c))

    def ran(self, kind: str, index: int) -> None:
        for s, n, c in self._by_kind[kind]:
            if s <= index < s + n:
                self.done[c] += 1
                break
        while self.first < len(self.chunks) and self.done[self.first] >= self.chunks[self.first][2]:
            self.position += self.chunks[self.first][2]
            self.first += 1

    def next_start(self) -> int:
        partial = self.done[self.first] if self.first < len(self.chunks) else 0
        return self.position + partial


def _drive(args, out: Path, stats: dict, per: dict, kstat, save_killed, workers: list, chunks: list) -> dict:
    pending = list(reversed(chunks))
    progress = Progress(chunks, args.start)
    stop_at = time.time() + args.stop_after if args.stop_after else None
    for w in workers:
        w.spawn()
        if pending:
            w.send(*pending.pop())
    last_report = time.time()
    events = open(out / "events.ndjson", "a")
    active = {w.wid: w for w in workers if w.task}
    while active:
        fds = {w.proc.stdout.fileno(): w for w in active.values()}
        ready, _, _ = select.select(list(fds), [], [], 0.2)
        now = time.monotonic()
        for fd in ready:
            w = fds[fd]
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the worker died
                code = w.proc.wait()
                kind, i = w.current if w.current else (w.task[0], w.task[1])
                s = kstat(kind)
                s["crashes"] += 1
                s["inputs"] += 1
                progress.ran(kind, i)
                note = f"worker died (exit {code}, signal {-code if code < 0 else 0})"
                events.write(json.dumps({"event": "died", "kind": kind, "index": i, "note": note}) + "\n")
                save_killed("crash", kind, i, note)
                _restart(w, pending, active, after=i)
                continue
            w.buf += chunk
            while b"\n" in w.buf:
                line, w.buf = w.buf.split(b"\n", 1)
                msg = json.loads(line)
                if "start" in msg:
                    w.current = (msg["kind"], msg["start"])
                    w.started = time.monotonic()
                    w.cpu_started = _cpu_seconds(w.proc.pid)
                    continue
                _account(kstat(msg["kind"]), msg, events)
                progress.ran(msg["kind"], msg["done"])
                w.current = None
                kind, start, count = w.task
                if msg["done"] == start + count - 1:
                    if pending:
                        w.send(*pending.pop())
                    else:
                        w.task = None
                        active.pop(w.wid, None)
        for w in list(active.values()):
            if w.current is None:
                continue
            kind, i = w.current
            elapsed = now - w.started
            # a loop burns CPU: the limit is on the worker's CPU time (a shared machine's load stretches wall time
            # past it for inputs that take a second of CPU); a read that blocks burns none: the wall-time backstop
            cpu = _cpu_seconds(w.proc.pid) - w.cpu_started
            limit = args.time_limit
            rss_mb = _status_kb("VmRSS", str(w.proc.pid)) / 1024
            hang = cpu > limit or elapsed > limit * args.wall_factor
            if hang or rss_mb > args.rss_limit_mb:
                cat = "hang" if hang else "rss"
                w.kill()
                s = kstat(kind)
                s["inputs"] += 1
                if cat == "hang":
                    s["hangs"] += 1
                    s["max_time_s"] = max(s["max_time_s"], round(elapsed, 2))
                else:
                    s["rss_over"] += 1
                    s["max_rss_mb"] = max(s["max_rss_mb"], round(rss_mb, 1))
                progress.ran(kind, i)
                note = f"killed after {elapsed:.1f} s ({cpu:.1f} s of CPU) at {rss_mb:.0f} MB RSS"
                events.write(json.dumps({"event": cat, "kind": kind, "index": i, "note": note}) + "\n")
                save_killed(cat, kind, i, note)
                _restart(w, pending, active, after=i)
        stats["next_start"] = progress.next_start()
        if stop_at is not None and time.time() > stop_at:
            stats["stopped_early"] = True  # the input in flight is not counted: --start next_start runs it
            break
        if time.time() - last_report > args.report_every:
            last_report = time.time()
            _write_summary(out, stats)
            done = sum(s["inputs"] for s in per.values())
            rate = done / max(1e-9, time.time() - stats["started"])
            print(f"[{time.strftime('%H:%M:%S')}] {done}/{stats['total_planned']} inputs, {rate:.0f}/s, "
                  f"crashes {sum(s['crashes'] for s in per.values())}, hangs {sum(s['hangs'] for s in per.values())}, "
                  f"rss>{args.rss_limit_mb}MB {sum(s['rss_over'] for s in per.values())}, "
                  f"silent {sum(s['silent_inputs'] for s in per.values())}", flush=True)
            events.flush()
    events.close()
    for w in workers:
        if stats.get("stopped_early"):
            w.kill()
        elif w.proc and w.proc.poll() is None:
            w.proc.stdin.close()
            w.proc.wait()
    stats["finished"] = time.time()
    _write_summary(out, stats)
    return stats


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _restart(w: Worker, pending: list, active: dict, after: int) -> None:
    """Respawn a killed worker and give it the rest of its task."""
    kind, start, count = w.task
    w.kill()
    w.spawn()
    rest = start + count - (after + 1)
    if rest > 0:
        w.send(kind, after + 1, rest)
    elif pending:
        w.send(*pending.pop())
    else:
        w.task = None
        active.pop(w.wid, None)


def _account(s: dict, msg: dict, events) -> None:
    s["inputs"] += 1
    s["time_s"] += msg["t"]
    s["findings"] += msg["findings"]
    s["cli_runs"] += msg["cli"]
    s["scan_runs"] += msg["scan"]
    s["full_runs"] += msg.get("full", True)
    s["structural_inputs"] += msg.get("structural", False)
    s["refusals_checked"] += msg.get("refusals", 0)
    if msg.get("structural"):
        s["refusals_checked_structural"] += msg.get("refusals", 0)
    s["max_size"] = max(s["max_size"], msg.get("size", 0))
    rss_mb = msg["rss_kb"] / 1024
    if msg["t"] > s["max_time_s"]:
        s["max_time_s"], s["max_time_input"] = round(msg["t"], 3), msg["done"]
    if rss_mb > s["max_rss_mb"]:
        s["max_rss_mb"], s["max_rss_input"] = round(rss_mb, 1), msg["done"]
    if msg["crash"]:
        s["crashes"] += 1
    s["silent"] += msg["silent"]
    s["silent_inputs"] += bool(msg["silent"])
    s["misreported"] += bool(msg["misreported"])
    s["false_refusals"] += bool(msg["false"])
    s["problems"] += bool(msg["problems"])
    if any(msg.get(k) for k in ("crash", "silent", "misreported", "problems")):
        events.write(json.dumps({k: v for k, v in msg.items() if k.endswith("_text") or k in ("done", "kind")})
                     + "\n")


def _write_summary(out: Path, stats: dict) -> None:
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(stats, indent=1))
    tmp.replace(out / "summary.json")


def print_summary(stats: dict) -> None:
    per = stats["kinds"]
    cols = ("inputs", "structural_inputs", "refusals_checked", "crashes", "hangs", "rss_over", "silent_inputs",
            "misreported", "problems", "max_rss_mb", "max_time_s", "max_size")
    print(f"\nfuzz campaign: {stats['out']}")
    w = {c: max(12, len(c)) + 1 for c in cols}
    print(f"{'kind':34}" + "".join(f"{c:>{w[c]}}" for c in cols))
    tot = defaultdict(float)
    for kind in sorted(per):
        s = per[kind]
        print(f"{kind:34}" + "".join(f"{s[c]:>{w[c]}}" for c in cols))
        for c in cols:
            tot[c] = max(tot[c], s[c]) if c.startswith("max") else tot[c] + s[c]
    print(f"{'TOTAL':34}" + "".join(f"{int(tot[c]) if not c.startswith('max') else tot[c]:>{w[c]}}" for c in cols))
    wall = stats.get("finished", time.time()) - stats["started"]
    done = int(tot["inputs"])
    print(f"wall time {wall / 3600:.2f} h ({done / max(wall, 1e-9):.1f} inputs/s); cases saved under {stats['out']}")
    print(f"inputs {stats['start']}..{stats['next_start']} of {stats['total_planned']} run (seed {stats['seed']}, "
          f"--total {stats['total']}); the rest: --start {stats['next_start']}")


def replay(spec: str, args) -> None:
    from tests.fuzz import corpus, harness

    kind, index = spec.split(":")
    i = int(index)
    sys.path.insert(0, str(ROOT / "scripts"))
    import fuzz_short_reads as short_reads

    if kind in short_reads.KINDS:  # rebuilt from its seed, kept in the work dir
        work = Path(tempfile.mkdtemp(prefix="kf-replay-"))
        o, size = short_reads.run(kind, i, mutation_seed(args.seed, kind, i), work / "w")
        print(json.dumps({"kind": kind, "index": i, "size": size, "crash": o.crash, "problems": o.problems},
                         indent=1))
        return
    inp = harness.make_input(kind, i, mutation_seed(args.seed, kind, i), corpus.all_seeds())
    work = Path(tempfile.mkdtemp(prefix="kf-replay-"))
    t0 = time.monotonic()
    o = harness.run_input(inp, work / "w", cli=True, scan=True)
    print(json.dumps({"kind": kind, "index": i, "seed": inp.seed_name, "what": inp.what,
                      "time_s": round(time.monotonic() - t0, 3), "crash": o.crash, "silent": o.silent,
                      "misreported": o.misreported, "problems": o.problems, "false_refusals": o.false_refusals,
                      "files": str(work / "w")}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--total", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", help="where reproducing inputs and the summary go (default: a new temp dir)")
    ap.add_argument("--kinds", help="comma-separated kinds (default: all)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--start", type=int, default=0,
                    help="skip the first N inputs of the campaign's order (resume: the summary's next_start)")
    ap.add_argument("--stop-after", type=float, default=0,
                    help="stop after this many seconds (0: run all); the summary says where to --start again")
    ap.add_argument("--time-limit", type=float, default=10.0, help="CPU seconds an input may take (a hang past it)")
    ap.add_argument("--wall-factor", type=float, default=6.0,
                    help="an input is also a hang past this many times --time-limit of wall time (a blocked read)")
    ap.add_argument("--rss-limit-mb", type=float, default=500.0)
    ap.add_argument("--as-limit-mb", type=int, default=8192, help="RLIMIT_AS of a worker (a backstop)")
    ap.add_argument("--cli-every", type=int, default=100, help="every Nth input also runs through the CLI")
    ap.add_argument("--scan-every", type=int, default=25, help="every Nth input is also scanned in a log dir")
    ap.add_argument("--full-every", type=int, default=4,
                    help="every Nth input also goes through the reader alone, the columnar path, the KRaft "
                         "timeline and per-record JSON (the rest: dump --deep and the model's judgement); 1: all")
    ap.add_argument("--report-every", type=float, default=60.0)
    ap.add_argument("--pythonpath", default="", help="import kforensics from here first (e.g. a snapshot)")
    ap.add_argument("--replay", help="KIND:INDEX: rebuild one input and run it (CLI and scan included)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--workroot", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        worker_main(args)
        return
    if args.replay:
        replay(args.replay, args)
        return
    # a terminated campaign takes its workers with it (they would otherwise finish their task unwatched)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stats = run_campaign(args)
    print_summary(stats)


if __name__ == "__main__":
    main()
