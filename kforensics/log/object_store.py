"""Evidence in object storage (S3 and S3-compatible stores): read-only, ranged, counted, with bounded retries.

A snapshot kept at ``s3://bucket/prefix`` is read through pyarrow's
``S3FileSystem`` (the AWS C++ SDK): every object is opened as a random-access
file, so a read at an offset is one ranged ``GET`` of the bytes asked for,
never a download of the whole object; a "directory" is a key prefix, listed
once (``ListObjectsV2``) with the size of each object kept from the listing.
Only ``HEAD``, ``GET`` and list requests are ever sent: the filesystem is
built with bucket creation and deletion refused, and nothing here opens an
output stream.

Credentials come from the AWS SDK's default chain, as every AWS tool reads
them: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
``AWS_PROFILE`` with ``~/.aws/credentials`` and ``~/.aws/config``, then the
instance's role.  The endpoint of an S3-compatible store (MinIO, Ceph RGW,
s3proxy, ...) comes from ``--s3-endpoint`` (see :func:`configure`), else the
environment variable ``KFORENSICS_S3_ENDPOINT``, else the SDK's own
``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``.  Credentials are never kept,
printed or written here: only the endpoint and the bytes read are reported.

Each request is retried a bounded number of times (:data:`MAX_ATTEMPTS`) with
connect and request timeouts, so a store that stops answering ends the read
with an error (an ``OSError``, which the commands turn into a finding or exit
2), never a hang.
"""

from __future__ import annotations

import io
import os
import posixpath
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..errors import EvidenceUnreadable, InputError
from .arrow_path import ArrowPath, Stat

#: URI schemes read as S3 (``s3a`` is Hadoop's name for the same store; the CLI takes both)
SCHEMES = ("s3", "s3a")
#: the environment variable naming an S3-compatible endpoint (``--s3-endpoint`` wins over it)
ENDPOINT_ENV = "KFORENSICS_S3_ENDPOINT"
#: attempts per request (the first and the retries) before a read fails
MAX_ATTEMPTS = 3
#: seconds to connect, and to wait for a request's answer, before an attempt fails
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 60.0


def is_store_uri(spec: Any) -> bool:
    """Whether ``spec`` names an object in S3 (``s3://`` or ``s3a://``)."""
    return isinstance(spec, str) and spec.split("://", 1)[0].lower() in SCHEMES and "://" in spec


@dataclass
class StoreSettings:
    """Where the store is (``endpoint``) and what the reads cost (``fetched``: bytes and requests, per object)."""

    endpoint: str | None = None
    used: bool = False  # whether this process has read or written a store (Spark then gets the S3A settings)
    fetched_bytes: int = 0
    requests: int = 0
    objects: dict[str, int] = field(default_factory=dict)  # object URI -> bytes fetched of it
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, uri: str, n: int) -> None:
        with self.lock:
            self.fetched_bytes += n
            self.requests += 1
            self.objects[uri] = self.objects.get(uri, 0) + n

    def summary(self) -> dict[str, Any]:
        """What was fetched from the store (JSON-able; no credential, only the endpoint)."""
        return {"endpoint": self.endpoint, "bytes_fetched": self.fetched_bytes, "reads": self.requests,
                "objects_read": len(self.objects)}


SETTINGS = StoreSettings()
_FILESYSTEMS: dict[str | None, Any] = {}


def configure(endpoint: str | None = None) -> StoreSettings:
    """Set the endpoint of an S3-compatible store (``--s3-endpoint``) for the rest of the process."""
    if endpoint:
        _check_endpoint(endpoint)
        SETTINGS.endpoint = endpoint
        _FILESYSTEMS.clear()
    return SETTINGS


def endpoint() -> str | None:
    """The endpoint requests go to: ``--s3-endpoint``, ``KFORENSICS_S3_ENDPOINT``, the SDK's variables, or AWS."""
    return (SETTINGS.endpoint or os.environ.get(ENDPOINT_ENV) or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL") or None)


def _check_endpoint(value: str) -> None:
    parts = urlsplit(value if "://" in value else f"http://{value}")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise InputError(f"--s3-endpoint {value!r} is not http(s)://host[:port] (credentials never go in it)")


def filesystem() -> Any:
    """The process's read-only S3 filesystem for the configured endpoint (built once)."""
    ep = endpoint()
    SETTINGS.used = True
    fs = _FILESYSTEMS.get(ep)
    if fs is None:
        fs = _FILESYSTEMS[ep] = _build(ep)
    return fs


def _build(ep: str | None) -> Any:
    from pyarrow import fs as pafs

    kwargs: dict[str, Any] = {}
    if ep:
        _check_endpoint(ep)
        parts = urlsplit(ep if "://" in ep else f"http://{ep}")
        kwargs.update(endpoint_override=parts.netloc, scheme=parts.scheme)
        # an S3-compatible store: no instance role to ask for, a region only for signing, and the SDK's newer
        # checksum headers (which such stores often refuse with 501) sent only where a request requires them
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
        os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
        kwargs["region"] = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    if os.environ.get("AWS_PROFILE"):
        kwargs["load_frequency"] = 900
    return pafs.S3FileSystem(
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=MAX_ATTEMPTS),
        connect_timeout=CONNECT_TIMEOUT, request_timeout=REQUEST_TIMEOUT,
        allow_bucket_creation=False, allow_bucket_deletion=False, background_writes=False, **kwargs)


def split_store_uri(spec: str) -> tuple[str, str]:
    """``(bucket, key prefix)`` of ``s3://bucket/prefix`` (an :class:`InputError` when no bucket is named)."""
    rest = spec.split("://", 1)[1]
    bucket, _, key = rest.partition("/")
    if not bucket or "?" in rest or "@" in bucket:
        raise InputError(f"{spec}: not s3://bucket[/prefix] (credentials and options never go in the URI)")
    return bucket, key.strip("/")


class StoreError(EvidenceUnreadable):
    """A request to the store failed (no such bucket or key, access denied, bad credentials, no answer)."""

    def __init__(self, uri: str, error: BaseException | str):
        text = explain(error)
        super().__init__(f"{uri}: {text}")
        self.filename = uri
        self.strerror = text


def explain(error: BaseException | str) -> str:
    """A one-line reason for a failed store request, without the SDK's request ids."""
    text = str(error)
    low = text.lower().replace("_", "")  # the SDK's codes come as SIGNATURE_DOES_NOT_MATCH or SignatureDoesNotMatch
    for needle, why in (("nosuchbucket", "no such bucket"), ("no such bucket", "no such bucket"),
                        ("signaturedoesnotmatch", "the credentials were refused (signature does not match)"),
                        ("invalidaccesskeyid", "the credentials were refused (unknown access key)"),
                        ("access denied", "access denied"), ("accessdenied", "access denied"),
                        ("http status 403", "access denied (HTTP 403)"), ("forbidden", "access denied (HTTP 403)"),
                        ("path does not exist", "no such key"), ("nosuchkey", "no such key"),
                        ("couldn't connect", "the store does not answer (connection refused)"),
                        ("curlcode: 7", "the store does not answer (connection refused)"),
                        ("timeout", "the store did not answer in time"),
                        ("timed out", "the store did not answer in time")):
        if needle in low:
            return why
    first = text.splitlines()[0] if text else type(error).__name__
    return first.split(" (Request ID")[0][:300]


class _CountedObject(io.RawIOBase):
    """A read-only, random-access view of one object: each read is a ranged GET, counted in :data:`SETTINGS`.

    A read that fails raises :class:`StoreError`; a read that gets fewer bytes than the object's listed size
    promised ends the object there (a short read), as a cut local file does.
    """

    def __init__(self, uri: str, raw: Any):
        super().__init__()
        self.uri = uri
        self.raw = raw

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def size(self) -> int:
        return self.raw.size()

    def read(self, n: int | None = -1) -> bytes:
        try:
            data = self.raw.read() if n is None or n < 0 else self.raw.read(n)
        except OSError as e:
            raise StoreError(self.uri, e) from None
        self.count(len(data))
        return bytes(data)

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def count(self, n: int) -> None:
        SETTINGS.count(self.uri, n)

    def fileno(self) -> int:
        raise OSError("an object in a store has no file descriptor")

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


class StorePath(ArrowPath):
    """A key or key prefix in an S3 bucket, in the log layer's path protocol (read-only).

    Children listed by :meth:`iterdir` keep what the listing said (kind, size), so walking a snapshot costs one
    list request per "directory", not one request per object.
    """

    def __init__(self, fs: Any, path: str, kind: str | None = None, size: int | None = None):
        super().__init__(fs, path)
        self._kind = kind  # "file", "dir", "none", or None (not asked yet)
        self._size = size

    @classmethod
    def from_uri(cls, uri: str) -> StorePath:
        bucket, key = split_store_uri(uri)
        return cls(filesystem(), posixpath.join(bucket, key) if key else bucket)

    @property
    def uri(self) -> str:
        return f"s3://{self.path}"

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"StorePath({self.uri!r})"

    @property
    def parent(self) -> StorePath:
        return StorePath(self.fs, posixpath.dirname(self.path))

    def __truediv__(self, other: str) -> StorePath:
        return StorePath(self.fs, posixpath.join(self.path, other))

    def _ask(self) -> None:
        from pyarrow import fs as pafs

        if self._kind is not None:
            return
        try:
            info = self.fs.get_file_info(self.path)
        except OSError as e:
            raise StoreError(self.uri, e) from None
        self._kind = {pafs.FileType.File: "file", pafs.FileType.Directory: "dir"}.get(info.type, "none")
        self._size = info.size if info.type == pafs.FileType.File else 0

    def exists(self) -> bool:
        self._ask()
        return self._kind != "none"

    def is_dir(self) -> bool:
        self._ask()
        return self._kind == "dir"

    def is_file(self) -> bool:
        self._ask()
        return self._kind == "file"

    def iterdir(self):
        from pyarrow import fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.path, allow_not_found=False))
        except OSError as e:
            raise StoreError(self.uri, e) from None
        for info in sorted(infos, key=lambda i: i.path):
            kind = "file" if info.type == pafs.FileType.File else "dir"
            yield StorePath(self.fs, info.path, kind, info.size if kind == "file" else 0)

    def stat(self) -> Stat:
        self._ask()
        if self._kind == "none":
            raise FileNotFoundError(2, "no such key", self.uri)
        return Stat(self._size or 0)

    def open_binary(self) -> Any:
        try:
            raw = self.fs.open_input_file(self.path)
        except FileNotFoundError as e:
            raise FileNotFoundError(2, "no such key", self.uri) from e
        except OSError as e:
            raise StoreError(self.uri, e) from None
        return _CountedObject(self.uri, raw)


def _listing_error(root: StorePath) -> str | None:
    """Why a listing of ``root`` fails (a HEAD request's refusal has no body to say whether the credentials or the
    permissions were refused; a listing's has)."""
    from pyarrow import fs as pafs

    try:
        root.fs.get_file_info(pafs.FileSelector(root.path, allow_not_found=True))
    except OSError as e:
        return explain(e)
    return None


def check_exists(spec: str) -> StorePath:
    """The root of a snapshot at ``spec`` after one request saying it is there (an :class:`InputError` naming
    what is missing or refused otherwise: no such bucket, no such key or prefix, access denied, bad credentials)."""
    root = StorePath.from_uri(spec)
    try:
        there = root.exists()
    except StoreError as e:
        raise InputError(f"{spec}: {_listing_error(root) or e.strerror}") from None
    if not there:
        bucket = StorePath(root.fs, split_store_uri(spec)[0])
        try:
            has_bucket = bucket.exists()
        except StoreError:
            has_bucket = True
        raise InputError(f"{spec}: {'no such key or prefix' if has_bucket else 'no such bucket'}")
    return root


def reset() -> None:
    """Forget the endpoint, the filesystems built and the counts (a process that reads several stores, the tests)."""
    SETTINGS.endpoint = None
    SETTINGS.used = False
    SETTINGS.fetched_bytes = SETTINGS.requests = 0
    SETTINGS.objects.clear()
    _FILESYSTEMS.clear()
