"""One s3proxy for the object-store tests, with the evidence laid out as objects (see ``s3server``)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from tests.conftest import REALDATA

from . import s3server, segments

FIXTURES = s3server.ROOT / "fixtures" / "brokers" / "damaged"
HIAGE = REALDATA / "hiage__kafka-raft__c5f680e" / "data"


def archive(src: Path, gz: bool) -> bytes:
    """``src`` as a tar (gzip-compressed when ``gz``), its members named below ``src``'s own name."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        tar.add(src, arcname=src.name)
    return buf.getvalue()


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """The running server; bucket ``evidence`` holds the damaged fixture broker (dir, .tar, .tgz, a .tgz cut in
    half) and, when ../shared is there, the three real KRaft brokers of hiage; bucket ``scratch`` is empty; bucket
    ``locked`` holds the damaged broker too, refused to ``s3server.READER``."""
    why = s3server.missing()
    if why:
        pytest.skip(why)
    work = tmp_path_factory.mktemp("s3")
    why = s3server.no_attributes(work)
    if why:
        pytest.skip(why)
    local = work / "local"
    local.mkdir()
    tgz = archive(FIXTURES, gz=True)
    for name, data in (("damaged.tgz", tgz), ("damaged.tar", archive(FIXTURES, gz=False)),
                       ("cut.tgz", tgz[: len(tgz) // 2])):
        (local / name).write_bytes(data)
    segments.write_log_dir(local / "big", 12 << 20)
    with tarfile.open(local / "big.tar", "w") as tar:
        tar.add(local / "big", arcname="big")
    server = s3server.start_server(work)
    server.put_tree(local / "big", "evidence", "big")
    server.put_tree(FIXTURES, "evidence", "damaged")
    server.put_tree(FIXTURES, s3server.DENIED_BUCKET, "damaged")  # there, but the reader is denied it
    for name in ("damaged.tgz", "damaged.tar", "cut.tgz", "big.tar"):
        server.put_tree(local / name, "evidence", f"archives/{name}")
    if HIAGE.is_dir():
        for b in ("kafka1", "kafka2", "kafka3"):
            server.put_tree(HIAGE / b, "evidence", f"hiage/{b}")
    (server.basedir / "scratch").mkdir()
    server.local = local  # the archives as local files, to compare with
    yield server
    server.stop()


@pytest.fixture
def s3env(s3, monkeypatch):
    """This process reads the test store (its endpoint and credentials in the environment)."""
    from kforensics.log import object_store

    for k in list(__import__("os").environ):
        if k.startswith("AWS_") or k == object_store.ENDPOINT_ENV:
            monkeypatch.delenv(k)
    for k, v in s3.env().items():
        if k.startswith("AWS_") or k == object_store.ENDPOINT_ENV:
            monkeypatch.setenv(k, v)
    object_store.reset()
    yield s3
    object_store.reset()
