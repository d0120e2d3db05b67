"""What goes wrong with a store ends each command within a time limit with a finding or exit 2 and one line saying
why: never a hang, never a traceback.  Each case runs the command line in its own process, against the real server
(or, for a server that stops mid-read, through a relay to it that stops)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from . import s3server
from .s3server import ROOT

#: seconds a failing command may take (retries and timeouts included)
LIMIT = 45


def kforensics(env: dict[str, str], *args: str) -> tuple[int, str, str, float]:
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "kforensics", *args], env=dict(env, PYTHONPATH=str(ROOT)), cwd=ROOT,
                       capture_output=True, text=True, timeout=LIMIT + 30, stdin=subprocess.DEVNULL)
    took = time.monotonic() - start
    assert took < LIMIT, f"{args} took {took:.0f} s"
    assert "Traceback" not in p.stderr and p.returncode != 3, p.stderr
    return p.returncode, p.stdout, p.stderr, took


@pytest.mark.parametrize("uri,why", [("s3://no-such-bucket/x", "no such bucket"),
                                     ("s3://evidence/no/such/prefix", "no such key or prefix")])
def test_missing_bucket_or_key(s3, uri, why):
    for command in ("scan", "spark"):
        code, _, err, _ = kforensics(s3.env(), command, uri, *(["--out", "/tmp/never-written"] if command == "spark"
                                                               else []))
        assert code == 2 and why in err, err


@pytest.mark.parametrize("command", ["scan", "timeline"])
def test_wrong_credentials(s3, command):
    """A secret the store refuses (403 SignatureDoesNotMatch), an access key it does not know (403
    InvalidAccessKeyId): exit 2 naming it, and no secret in what is printed."""
    for env in (s3.env(AWS_SECRET_ACCESS_KEY="not-the-secret"), s3.env(AWS_ACCESS_KEY_ID="nobody-we-know")):
        code, out, err, _ = kforensics(env, command, "s3://evidence/damaged")
        assert code == 2 and "credentials were refused" in err, err
        assert "not-the-secret" not in out + err and s3server.SECRET not in out + err


def test_a_denied_request(s3, tmp_path):
    """Credentials the store accepts, for a bucket it refuses them (403 AccessDenied from the server, see
    ``s3server.READER``): exit 2 saying access was denied (not that the credentials were refused), before Spark
    starts for ``spark``, and nothing written."""
    env = s3.env(AWS_ACCESS_KEY_ID=s3server.READER, AWS_SECRET_ACCESS_KEY=s3server.READER_SECRET)
    uri = f"s3://{s3server.DENIED_BUCKET}/damaged"
    for args in (["scan", uri], ["spark", uri.replace("s3://", "s3a://"), "--out", str(tmp_path / "out")]):
        code, out, err, _ = kforensics(env, *args)
        assert code == 2 and f"{args[1]}: access denied" in err and "credentials" not in err, (args, err)
        assert s3server.READER_SECRET not in out + err
    assert not (tmp_path / "out").exists()


def test_spark_output_to_a_missing_bucket(s3, tmp_path):
    code, _, err, _ = kforensics(s3.env(), "spark", "s3a://evidence/damaged", "--out", "s3a://no-such-bucket/out")
    assert code == 2 and "s3a://no-such-bucket/out: no such bucket" in err, err


def test_a_truncated_archive_object_is_read_as_the_local_file_is(s3):
    code, out, err, _ = kforensics(s3.env(), "scan", "--format", "json", "s3://evidence/archives/cut.tgz")
    local = subprocess.run([sys.executable, "-m", "kforensics", "scan", "--format", "json", str(s3.local / "cut.tgz")],
                           env=dict(s3.env(), PYTHONPATH=str(ROOT)), cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert (code, out.replace("s3://evidence/archives/cut.tgz", str(s3.local / "cut.tgz"))) == (
        local.returncode, local.stdout)
    assert '"ARCHIVE_TRUNCATED"' in out


class Relay:
    """A TCP relay on loopback to the server that stops (closes every connection and its port) once it has passed
    ``limit`` bytes from the server: to the client, the store stops answering in the middle of a read."""

    def __init__(self, port: int, limit: int):
        self.port, self.limit, self.passed = port, limit, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopped = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.port))
            self.conns += [client, server]
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, counted: bool) -> None:
        try:
            while data := src.recv(65536):
                if counted:
                    self.passed += len(data)
                    if self.passed > self.limit:
                        dst.sendall(data[: len(data) // 2])
                        self.stop()
                        return
                dst.sendall(data)
        except OSError:
            pass

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()


def test_the_server_stops_in_the_middle_of_a_read(s3):
    relay = Relay(s3.port, limit=200_000)  # past the listings, inside the 12 MiB segment
    try:
        code, out, err, took = kforensics(s3.env(KFORENSICS_S3_ENDPOINT=relay.endpoint), "scan", "s3://evidence/big")
    finally:
        relay.stop()
    assert relay.passed > 200_000
    # the segment not read is a finding (exit 1) or the scan stops with one line (exit 2)
    assert code in (1, 2), (code, err)
    assert "the store does not answer" in out + err or "UNREADABLE" in out, (out, err)


@pytest.mark.parametrize("snapshot,out,what", [("s3://evidence/damaged", "s3a://evidence/damaged/out", "is inside"),
                                               ("s3a://evidence/damaged", "s3://evidence", "contains"),
                                               ("s3://evidence/damaged", "s3a://evidence/damaged/", "is")])
def test_spark_output_in_or_above_a_bucket_prefix_of_evidence_is_refused(s3, snapshot, out, what):
    code, _, err, _ = kforensics(s3.env(), "spark", snapshot, "--out", out)
    assert code == 2 and f"{what} the evidence" in err, err
    assert not (s3.basedir / "evidence" / "damaged" / "out").exists()
