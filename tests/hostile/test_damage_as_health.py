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
from tests.hostile.helpers import findings_of, run, run_json

#: 350 000 entries: about 4.9 MB, over the 4 MiB kforensics reads of a leader-epoch checkpoint
BIG_EPOCHS = 350_000


def _big_checkpoint() -> bytes:
    lines = [f"{e} {e}" for e in range(BIG_EPOCHS)]
    return ("0\n%d\n" % BIG_EPOCHS + "\n".join(lines) + "\n").encode()


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
