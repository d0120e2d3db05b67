"""A real S3-compatible server on loopback for the tests and the benchmark: s3proxy (Maven Central,
``org.gaul:s3proxy``, fetched by ``scripts/setup.sh``) on its filesystem backend.

A second identity (:data:`READER`) is valid on the server but denied the bucket :data:`DENIED_BUCKET`: a request
the store refuses although it accepts the credentials.

Objects are "uploaded" by laying files under the backend's directory before the server starts (a bucket is a
top-level directory, a key a relative path): the server then serves them as any S3 store does, and its request
log (``LOG_LEVEL=debug``: one ``request: Request(METHOD url)`` line per request) holds only what the code under
test asked for.  The server listens on 127.0.0.1 only, and stops by itself: it runs under ``timeout`` (a hard
limit) and dies with the process that started it (``PR_SET_PDEATHSIG``), so a killed test run leaves nothing.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = "2.6.0"
JAR_NAME = f"s3proxy-{VERSION}-jar-with-dependencies.jar"
#: s3proxy's backend: keys as files under a directory.  Not the older ``filesystem`` backend (jclouds'; deprecated
#: by s3proxy 2.x), which lists every directory as a 4096-byte object of its own name that no request can read
#: (a recursive listing of ``a/b/c`` shows ``a`` and ``a/b`` as objects), and retries a directory's removal for
#: 10 s when it is not empty
BACKEND = "filesystem-nio2"
IDENTITY, SECRET = "kforensics-test", "kforensics-test-secret"
#: a second identity, valid on the server, whose requests for :data:`DENIED_BUCKET` the server refuses (403
#: AccessDenied): its backend is a gateway (jclouds' ``s3`` provider) to this same server as :data:`IDENTITY`,
#: which may not use that bucket (the bucket locator gives it to :data:`READER` alone), so every request the
#: gateway forwards is refused upstream (403) and the gateway answers AccessDenied; s3proxy has no bucket policies
READER, READER_SECRET = "kforensics-reader", "kforensics-reader-secret"
DENIED_BUCKET = "locked"
#: seconds after which the server stops whatever happens (the tests take far less)
LIFETIME = 900
_REQUEST = re.compile(r"request: Request\((\w+) (\S+)\)")


def jar() -> Path | None:
    """The s3proxy jar: where the set-up puts it, else in the local Maven repository."""
    for p in (ROOT / "scripts" / "s3" / ".cache" / "s3proxy" / JAR_NAME,
              Path.home() / ".m2" / "repository" / "org" / "gaul" / "s3proxy" / VERSION / JAR_NAME):
        if p.is_file():
            return p
    return None


def missing() -> str | None:
    """Why no server can start here (None when one can)."""
    if shutil.which("java") is None:
        return "no java: s3proxy needs Java 17 (scripts/setup.sh installs it)"
    if jar() is None:
        return f"no {JAR_NAME}: scripts/setup.sh fetches it from Maven Central into scripts/s3/.cache/s3proxy"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux: the timeout still stops it


@dataclass
class S3Server:
    """A running s3proxy: ``endpoint``, the backend ``basedir`` (bucket dirs), its ``log`` file."""

    basedir: Path
    log: Path
    port: int
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a command that reads this store (its endpoint and credentials)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(KFORENSICS_S3_ENDPOINT=self.endpoint, AWS_ACCESS_KEY_ID=IDENTITY, AWS_SECRET_ACCESS_KEY=SECRET,
                   AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_CONFIG_FILE=os.devnull)
        env.update(extra)
        return env

    def put_tree(self, src: Path, bucket: str, prefix: str) -> str:
        """Lay ``src`` (a directory or a file) as objects under ``s3://bucket/prefix``; returns that URI."""
        dst = self.basedir / bucket / prefix
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, dst)
        for f in [dst] if dst.is_file() else (p for p in dst.rglob("*") if p.is_file()):
            object_md5(f)
        return f"s3://{bucket}/{prefix}"

    def start(self, timeout: float = 60.0) -> S3Server:
        conf = self.basedir.parent / "s3proxy.conf"
        conf.write_text(f"s3proxy.endpoint={self.endpoint}\ns3proxy.authorization=aws-v2-or-v4\n"
                        f"s3proxy.identity={IDENTITY}\ns3proxy.credential={SECRET}\n"
                        f"jclouds.provider={BACKEND}\njclouds.identity={IDENTITY}\njclouds.credential={SECRET}\n"
                        f"jclouds.filesystem.basedir={self.basedir}\n", encoding="utf-8")
        gateway = self.basedir.parent / "s3proxy-gateway.conf"
        gateway.write_text(f"s3proxy.endpoint={self.endpoint}\ns3proxy.authorization=aws-v2-or-v4\n"
                           f"s3proxy.identity={READER}\ns3proxy.credential={READER_SECRET}\n"
                           f"s3proxy.bucket-locator.1={DENIED_BUCKET}\n"
                           f"jclouds.provider=s3\njclouds.endpoint={self.endpoint}\n"
                           f"jclouds.identity={IDENTITY}\njclouds.credential={SECRET}\n", encoding="utf-8")
        env = dict(os.environ, LOG_LEVEL="debug", JETTY_LOG_LEVEL="warn")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                ["timeout", "--kill-after=5", str(LIFETIME), "java", "-Xmx256m", "-XX:TieredStopAtLevel=1",
                 "-jar", str(jar()), "--properties", str(conf), "--properties", str(gateway)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"s3proxy exited: {self.log.read_text(errors='replace')[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"s3proxy did not start in {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def requests(self) -> list[tuple[str, str]]:
        """Every request the server received so far: ``(method, url)``."""
        return _REQUEST.findall(self.log.read_text(errors="replace"))


def object_md5(path: Path) -> None:
    """What the backend keeps beside an object it was sent (its MD5, the ETag), on our copy laid as the object:
    ``filesystem-nio2`` lists and serves no file without it.  (Java's user-defined attribute ``user.content-md5``
    is the Linux extended attribute ``user.user.content-md5``.)"""
    digest = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    os.setxattr(path, "user.user.content-md5", digest.digest())


def no_attributes(directory: Path) -> str | None:
    """Why the backend cannot keep objects under ``directory`` (None when it can): its filesystem must take user
    extended attributes (see :func:`object_md5`)."""
    probe = directory / ".xattr-probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.user.content-md5", b"0" * 16)
    except OSError as e:
        return f"{directory} takes no user extended attributes ({e.strerror}): s3proxy's filesystem-nio2 needs them"
    finally:
        probe.unlink()
    return None


def start_server(workdir: Path) -> S3Server:
    """Start s3proxy on a free loopback port with its backend under ``workdir``."""
    basedir = workdir / "buckets"
    basedir.mkdir(parents=True, exist_ok=True)
    return S3Server(basedir, workdir / "s3proxy.log", _free_port()).start()


def jars_of(pattern: str) -> list[str]:
    return sorted(glob.glob(str(ROOT / "scripts" / "s3" / ".cache" / pattern)))
