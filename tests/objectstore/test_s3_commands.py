"""``scan``, ``replay``, ``timeline`` and ``dump`` on ``s3://`` print what they print on the same evidence on disk,
byte for byte once the location is named alike; and they only ever read the store."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kforensics.cli import main
from kforensics.log.segment_reader import DEFAULT_WINDOW
from tests.conftest import need_shared

from .conftest import FIXTURES, HIAGE


def run(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def same(s3_args: list[str], local_args: list[str], names: dict[str, str]):
    """Run both; the S3 run's output with its URIs named as the local paths equals the local run's."""
    remote, local = run(*s3_args), run(*local_args)
    assert local.exit_code in (0, 1), local.output
    assert "bytes fetched" in remote.stderr  # what the store cost is said, on standard error
    text = remote.stdout
    for uri, path in names.items():
        text = text.replace(uri, path)
    assert (remote.exit_code, text) == (local.exit_code, local.stdout)
    return remote


def test_scan_of_a_log_dir_and_its_archives(s3env):
    for fmt in ("text", "json"):
        same(["scan", "s3://evidence/damaged", "--format", fmt], ["scan", FIXTURES, "--format", fmt],
             {"s3://evidence/damaged": str(FIXTURES)})
    for name in ("damaged.tgz", "damaged.tar"):
        local = s3env.local / name
        r = same(["scan", f"s3://evidence/archives/{name}", "--format", "json"], ["scan", local, "--format", "json"],
                 {f"s3://evidence/archives/{name}": str(local)})
        doc = json.loads(r.stdout)
        assert doc["summary"]["partitions"] == 8 if "summary" in doc else doc["partitions"]


def test_segment_hashes_are_the_objects_sha256(s3env):
    import hashlib

    doc = json.loads(run("scan", "s3://evidence/damaged", "--format", "json").stdout)
    seen = {f["path"]: f["sha256"] for f in doc["files"] if f.get("sha256")}
    log = "s3://evidence/damaged/orders-0/00000000000000000000.log"
    assert seen[log] == hashlib.sha256((FIXTURES / "orders-0" / "00000000000000000000.log").read_bytes()).hexdigest()


def test_dump_reads_the_head_only(s3env):
    from kforensics.log import object_store

    seg = "orders-0/00000000000000000000.log"
    same(["dump", f"s3://evidence/damaged/{seg}"], ["dump", FIXTURES / seg],
         {f"s3://evidence/damaged/{seg}": str(FIXTURES / seg)})
    seg = "big-0/00000000000000000000.log"
    size = (s3env.local / "big" / seg).stat().st_size
    object_store.reset()
    same(["dump", "--max-bytes", "4096", f"s3://evidence/big/{seg}"],
         ["dump", "--max-bytes", "4096", s3env.local / "big" / seg], {"s3://evidence/big": str(s3env.local / "big")})
    fetched = object_store.SETTINGS.fetched_bytes
    # ranged reads: the segment's head (one read window of the segment reader), not the whole object
    assert 0 < fetched <= DEFAULT_WINDOW < size // 2, (fetched, size)


def test_a_tar_is_indexed_from_its_headers(s3env):
    """Opening a plain .tar in the store reads its member headers with ranged requests, not the members."""
    from kforensics.log import object_store
    from kforensics.log.sources import resolve

    object_store.reset()
    root = resolve("s3://evidence/archives/big.tar")
    assert [p.name for p in root.iterdir()] == ["big"]
    size = (s3env.local / "big.tar").stat().st_size
    assert 0 < object_store.SETTINGS.fetched_bytes < size // 20, (object_store.SETTINGS.fetched_bytes, size)


def test_real_brokers_scan_replay_timeline(s3env):
    """Three real KRaft brokers (Kafka 3.3.1, ../shared/realdata): scan, timeline and replay on S3 print what the
    local runs print."""
    need_shared(HIAGE)
    names = {"s3://evidence/hiage": str(HIAGE)}
    same(["scan", "s3://evidence/hiage/kafka1"], ["scan", HIAGE / "kafka1"], names)
    same(["timeline", "s3://evidence/hiage/kafka1"], ["timeline", HIAGE / "kafka1"], names)
    same(["replay", *(f"s3://evidence/hiage/kafka{i}" for i in (1, 2, 3))],
         ["replay", *(HIAGE / f"kafka{i}" for i in (1, 2, 3))], names)


def test_only_read_requests_reach_the_evidence_bucket(s3env):
    """After the runs above (and this one), the server's request log holds GET and HEAD on ``evidence`` only; a
    write to ``scratch`` shows the log does record writes."""
    from pyarrow import fs as pafs

    assert run("scan", "s3://evidence/damaged").exit_code == 1
    scratch = pafs.S3FileSystem(endpoint_override=s3env.endpoint.split("://")[1], scheme="http", region="us-east-1",
                                access_key=s3env.env()["AWS_ACCESS_KEY_ID"],
                                secret_key=s3env.env()["AWS_SECRET_ACCESS_KEY"])
    with scratch.open_output_stream("scratch/written") as out:
        out.write(b"x")
    requests = s3env.requests()
    on_evidence = {m for m, url in requests if url.split("/", 3)[3].startswith("evidence")}
    assert on_evidence and on_evidence <= {"GET", "HEAD"}, on_evidence
    assert {m for m, url in requests if "/scratch/written" in url} & {"PUT", "POST"}
