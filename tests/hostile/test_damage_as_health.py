"""Damage that must not read as health (issue 22): evidence not read is reported as unknown, not as healthy, and
no conclusion is drawn from it.  Every input is built here, below ``tmp_path``.

What Kafka does, cited at apache/kafka 3.9.0:

* ``CheckpointFile.read`` (server-common/src/main/java/org/apache/kafka/server/common/CheckpointFile.java) reads
  a checkpoint whole through a ``BufferedReader``: there is no size limit, so a leader-epoch checkpoint of
  350 000 well-formed lines (``LeaderEpochCheckpointFile.Formatter.fromString``, storage/src/main/java/org/apache/
  kafka/storage/internals/checkpoint/LeaderEpochCheckpointFile.java) loads.  A file kforensics chose not to read
  is therefore no file Kafka cannot load.
"""

from __future__ import annotations

import json

from kforensics.replay.report import replay_all
from kforensics.scenario import ScenarioBuilder, load_scenario
from tests.hostile.helpers import findings_of, run_json

#: 350 000 entries: about 4.9 MB, over the 4 MiB kforensics reads of a leader-epoch checkpoint
BIG_EPOCHS = 350_000


def _big_checkpoint() -> bytes:
    lines = [f"{e} {e}" for e in range(BIG_EPOCHS)]
    return (f"0\n{BIG_EPOCHS}\n" + "\n".join(lines) + "\n").encode()


def _two_brokers(tmp_path, *, checkpoint: bytes | None = None) -> object:
    sb = ScenarioBuilder("cap", brokers=[1, 2], controller=False)
    sb.elect(1, epoch=0).produce(4).replicate(2, up_to=2)
    sb.high_watermark(1, 2).high_watermark(2, 2)
    sb.shut_down_cleanly(1).shut_down_cleanly(2)
    if checkpoint is not None:
        sb.epoch_checkpoint_file(1, checkpoint)
    return load_scenario(sb.write(tmp_path / "cap"))


def test_an_epoch_checkpoint_over_the_read_cap_is_not_read_and_nothing_is_concluded(tmp_path):
    sc = _two_brokers(tmp_path, checkpoint=_big_checkpoint())
    cp = sc.brokers[1][0] / "orders-0" / "leader-epoch-checkpoint"
    assert cp.stat().st_size > 4 << 20
    doc = run_json("scan", str(sc.brokers[1][0]))
    capped = findings_of(doc, "FILE_TOO_LARGE")
    assert [f["file"] for f in capped] == [str(cp)] and "not read" in capped[0]["message"]
    assert not findings_of(doc, "LOG_LOAD_FAILS"), "a file not read says nothing of whether Kafka loads it"
    (p,) = doc["partitions"]
    assert p["recovery"]["epoch_checkpoint_unreadable"] is False and p["recovery"]["load_fails"] is False
    # replay: broker 1 is not taken offline for a file kforensics did not read, and it (the longer log) leads
    rep = replay_all(sc.brokers)
    (part,) = rep.partitions
    roles = {r.broker_id: r.role for r in part.replicas}
    assert roles[1] != "offline" and part.leader == 1
    assert not any(v.code == "LOG_LOAD_FAILS" for r in part.replicas for v in r.verdicts)


# --------------------------------------------------------------------------- evidence that cannot be read
#
# Root reads every file whatever its mode, and the tests may run as root: the commands then run as an
# unprivileged user (``setpriv``) in a child process, so ``open`` and ``scandir`` really fail with EACCES on the
# copies the test makes unreadable (never the fixtures).

import os  # noqa: E402
import shutil  # noqa: E402
import stat  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.conftest import ROOT  # noqa: E402
from tests.hostile.helpers import CLI  # noqa: E402

NOBODY = 65534


def _as_unprivileged(*args: str) -> subprocess.CompletedProcess:
    """The command run by a user to whom mode 000 means what it says."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: file permissions cannot make evidence unreadable")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run([*prefix, *CLI, *map(str, args)], capture_output=True, text=True, timeout=300, cwd="/",
                          env={**os.environ, "HOME": "/tmp"})


@pytest.fixture
def shared_tmp():
    """A temporary dir the unprivileged user can traverse (pytest's own is private to its user)."""
    d = Path(tempfile.mkdtemp(prefix="kf-unreadable-"))
    d.chmod(0o755)
    yield d
    for p in [d, *d.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)
    shutil.rmtree(d)


def _copy_scenario(name: str, dest: Path) -> Path:
    shutil.copytree(ROOT / "fixtures" / "scenarios" / name, dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _unreadable(p: Path) -> None:
    p.chmod(0)
    assert not stat.S_IMODE(p.stat().st_mode)


def test_an_unreadable_segment_is_unknown_in_scan_and_not_judged_in_replay(shared_tmp):
    sc = _copy_scenario("healthy-3-brokers", shared_tmp / "s")
    seg = sc / "broker-2" / "orders-0" / "00000000000000000000.log"
    _unreadable(seg)
    r = _as_unprivileged("scan", sc / "broker-2", "--format", "json")
    doc = json.loads(r.stdout)
    assert [f["file"] for f in findings_of(doc, "UNREADABLE_FILE")] == [str(seg)]
    (p,) = [p for p in doc["partitions"] if p["dir_name"] == "orders-0"]
    assert p["complete"] is False and "could not be read" in p["recovery"]["unknown"]
    # the unread batches' epochs are unknown: no comparison blames the checkpoint for them
    assert not [f for f in doc["findings"] if f["code"].startswith("EPOCH_") and f["file"].startswith(str(seg.parent))]
    text = _as_unprivileged("scan", sc / "broker-2").stdout
    row = next(line for line in text.splitlines() if line.startswith("orders-0"))
    assert "recovered, no loss" not in row and "unknown" in row
    assert "nothing lost" not in text.splitlines()[0]
    # replay: broker 2's replica is not judged (and not "OK"); replay exits 1, its answer does not say "every OK"
    brokers = [sc / f"broker-{b}" for b in (1, 2, 3)]
    rj = _as_unprivileged("replay", *brokers, "--format", "json")
    assert rj.returncode == 1, rj.stderr
    verdicts = {r["broker_id"]: [v["code"] for v in r["verdicts"]] for r in json.loads(rj.stdout)["partitions"][0]
                ["replicas"]}
    assert verdicts[2] == ["NOT_JUDGED"]
    import jsonschema

    schema = json.loads((ROOT / "docs" / "schemas" / "replay.schema.json").read_text())
    jsonschema.validate(json.loads(rj.stdout), schema)  # NOT_JUDGED and the role "unknown" are in the schema
    rt = _as_unprivileged("replay", *brokers)
    assert "every replica OK" not in rt.stdout and "NOT_JUDGED" in rt.stdout


def test_an_unreadable_partition_dir_is_not_a_log_retention_removed(shared_tmp):
    sc = _copy_scenario("healthy-3-brokers", shared_tmp / "s")
    d = sc / "broker-2" / "orders-0"
    _unreadable(d)
    r = _as_unprivileged("scan", sc / "broker-2", "--format", "json")
    doc = json.loads(r.stdout)
    assert not findings_of(doc, "NO_SEGMENTS"), "an unlisted dir is not an empty one"
    assert [f["file"] for f in findings_of(doc, "UNREADABLE_DIR")] == [str(d)]
    (p,) = [p for p in doc["partitions"] if p["dir_name"] == "orders-0"]
    assert p["complete"] is False and "could not be listed" in p["recovery"]["unknown"]
    brokers = [sc / f"broker-{b}" for b in (1, 2, 3)]
    rj = _as_unprivileged("replay", *brokers, "--format", "json")
    assert rj.returncode == 1, rj.stderr
    (part,) = json.loads(rj.stdout)["partitions"]
    verdicts = {r["broker_id"]: [v["code"] for v in r["verdicts"]] for r in part["replicas"]}
    assert verdicts[2] == ["NOT_JUDGED"] and verdicts[1] != ["NOT_JUDGED"]
