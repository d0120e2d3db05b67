"""Object-store benchmark: ``kforensics scan`` of a 1 GiB segment and of a 100-partition ``.tgz`` on a real S3 server
on loopback (s3proxy, filesystem backend; see ``tests/objectstore/s3server.py``) against the same evidence on disk.

    python benchmarks/objectstore_scan.py [--gib 1] [--partitions 100] [--workdir DIR]

What it builds (once per run, in a temporary directory or ``--workdir``):

* ``big``: a log dir with one partition whose segment holds ``--gib`` GiB of valid v2 batches (about 1 MiB each,
  ``tests/objectstore/segments.py``);
* ``many.tgz``: a gzip-compressed tar of a log dir of ``--partitions`` partitions, each a segment of 4 such batches;

each laid once on disk and once as objects in the server's bucket.  Each case runs ``kforensics scan --format json``
in a fresh process (start-up included), one run: on disk, then on ``s3://``.  Printed per case: wall time of each,
the ratio S3 / disk, the bytes fetched from the store (the command's own count, on its standard error) and their
ratio to the object's size, and whether the two JSON documents are equal once the location is named alike.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.objectstore import s3server, segments  # noqa: E402


def scan(env: dict[str, str], target: str) -> tuple[float, str, int | None]:
    """Wall seconds, stdout, and the bytes fetched the command reported (None for a local run)."""
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "kforensics", "scan", "--format", "json", target], cwd=ROOT,
                       env=dict(env, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
    took = time.monotonic() - start
    if p.returncode not in (0, 1):
        raise SystemExit(f"scan {target} exited {p.returncode}: {p.stderr[-2000:]}")
    m = re.search(r"(\d+) bytes fetched", p.stderr)
    return took, p.stdout, int(m.group(1)) if m else None


def many_partitions(root: Path, n: int) -> Path:
    """A .tgz of a log dir of ``n`` partitions, each one segment of 4 batches."""
    batch = segments.batch_template()
    logdir = root / "many"
    for i in range(n):
        part = logdir / f"topic{i:03d}-0"
        part.mkdir(parents=True)
        (part / "00000000000000000000.log").write_bytes(segments.renumbered(batch, 4))
    out = root / "many.tgz"
    with tarfile.open(out, "w:gz") as tar:
        tar.add(logdir, arcname="many")
    return out


def case(name: str, server: s3server.S3Server, local: Path, uri: str, size: int) -> None:
    env = server.env()
    t_disk, out_disk, _ = scan(env, str(local))
    t_s3, out_s3, fetched = scan(env, uri)
    same = out_s3.replace(uri, str(local)) == out_disk
    print(json.dumps({"case": name, "object_bytes": size, "disk_s": round(t_disk, 2), "s3_s": round(t_s3, 2),
                      "s3_over_disk": round(t_s3 / t_disk, 2), "bytes_fetched": fetched,
                      "fetched_over_size": None if fetched is None else round(fetched / size, 3),
                      "same_json": same}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--workdir", type=Path)
    a = ap.parse_args()
    why = s3server.missing()
    if why:
        raise SystemExit(why)
    with tempfile.TemporaryDirectory(dir=a.workdir) as tmp:
        work = Path(tmp)
        server = s3server.start_server(work / "server")
        try:
            big = segments.write_log_dir(server.basedir / "bench" / "big", int(a.gib * (1 << 30)))
            seg = big / "big-0" / "00000000000000000000.log"
            tgz = many_partitions(server.basedir / "bench", a.partitions)
            for f in (server.basedir / "bench").rglob("*"):
                if f.is_file():
                    s3server.object_md5(f)  # as the server keeps it for what it was sent
            # the store's files are the local evidence too: the same bytes, read once through each path
            case(f"segment {a.gib:g} GiB", server, big, "s3://bench/big", seg.stat().st_size)
            case(f"{a.partitions}-partition .tgz", server, tgz, "s3://bench/many.tgz", tgz.stat().st_size)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
