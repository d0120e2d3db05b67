"""Properties of the replay on random crash histories, written to disk and read back as `replay` reads them.

A history is what a cluster under Kafka's rules (2.0.1+) could have written:
the controller hands out increasing epochs and records its elections and ISR
changes (an election outside the ISR is unclean, and its record says so);
leaders append in their epoch; followers truncate to the prefix they share
with the leader and copy it; commits raise the ISR's high watermarks; a crash
loses a broker's unflushed tail (sometimes tearing a batch) while its
checkpoints survive; a clean shutdown leaves the marker.  Then a last
election, and the replay from every broker's restart.

Checked: the replay ends; on 2.0.1+ every follower converges and ends as a
prefix of the leader (no damage Kafka could not recover is in these
histories, and no epochs go backwards), and a committed loss has its cause
named on the leader; UNCLEAN_ELECTION appears, as verdict or finding,
exactly when the history had an unclean election.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kforensics.kraft.timeline import build_timeline
from kforensics.replay.group import replay_group
from kforensics.replay.inputs import load_replicas
from kforensics.scenario import ScenarioBuilder, load_scenario
from kforensics.epoch.versions import parse_kafka_version

BROKERS = [1, 2, 3]
MODES = ("0.10", "0.11", "2.0.0", "2.0.1", "2.8", "latest")
KIP_279_FIXED = ("2.0.1", "2.8", "latest")

_OPS = {
    "elect": st.tuples(st.just("elect"), st.sampled_from(BROKERS), st.booleans()),
    "produce": st.tuples(st.just("produce"), st.integers(1, 3)),
    "follow": st.tuples(st.just("follow"), st.sampled_from(BROKERS), st.integers(0, 2)),
    "commit": st.tuples(st.just("commit")),
    "crash": st.tuples(st.just("crash"), st.sampled_from(BROKERS), st.integers(0, 3), st.booleans()),
    "restart": st.tuples(st.just("restart"), st.sampled_from(BROKERS)),
    "shrink": st.tuples(st.just("shrink"), st.sampled_from(BROKERS)),
    # every broker loses power at once: the ISR stays as the controller last wrote it
    "power_loss": st.tuples(st.just("power_loss"), st.lists(st.integers(0, 3), min_size=3, max_size=3),
                            st.booleans()),
}
# weights: a history needs many appends and fetches between the faults for the faults to cost anything
op = st.one_of(*[_OPS[k] for k in ("produce", "produce", "produce", "follow", "follow", "follow", "commit",
                                   "commit", "crash", "crash", "restart", "restart", "elect", "elect", "shrink",
                                   "power_loss")])


class History:
    """Applies random operations to a scenario builder, keeping only the ones Kafka's rules allow."""

    def __init__(self) -> None:
        self.sb = ScenarioBuilder("history", brokers=BROKERS)
        self.up = set(BROKERS)
        self.epoch = -1
        self.unclean = False

    @property
    def isr(self) -> list[int]:
        return self.sb._isr

    def leo(self, b: int) -> int:
        return self.sb.brokers[b].leo

    def elect(self, b: int, may_be_unclean: bool) -> None:
        if b not in self.up or (b not in self.isr and not may_be_unclean):
            return
        self.epoch += 1
        unclean = b not in self.isr
        self.unclean |= unclean
        self.sb.elect(b, epoch=self.epoch, record_epoch=True, unclean=unclean)

    def ensure_leader(self) -> int:
        """A live leader: the controller elects a live ISR member, after the brokers restart if none is up."""
        if self.sb.leader in self.up and self.sb.leader in self.isr:
            return self.sb.leader
        if not any(b in self.up for b in self.isr):
            self.up |= set(BROKERS)
        self.elect(next(b for b in self.isr if b in self.up), False)
        return self.sb.leader

    def apply(self, o) -> None:
        kind = o[0]
        leader = self.ensure_leader() if kind in ("produce", "follow", "commit") else self.sb.leader
        live_leader = leader in self.up
        if kind == "elect":
            self.elect(o[1], o[2])
        elif kind == "produce" and live_leader:
            self.sb.produce(o[1])
        elif kind == "follow" and live_leader and o[1] != leader and o[1] in self.up:
            end = self.leo(leader)
            self.sb.follow(o[1], up_to=end - o[2])
            if self.leo(o[1]) == end and o[1] not in self.isr:
                self.sb.isr(self.isr + [o[1]])
        elif kind == "commit" and live_leader:
            # followers that have not caught up drop out of the ISR (replica.lag.time.max.ms); the rest commit
            caught_up = [b for b in self.isr if b in self.up and self.leo(b) == self.leo(leader)]
            if caught_up != self.isr:
                self.sb.isr(caught_up)
            hw = self.leo(leader)
            for b in self.isr:
                if b in self.up and (self.sb.brokers[b].hw or 0) < hw:
                    self.sb.high_watermark(b, hw)
        elif kind == "crash" and o[1] in self.up:
            b = o[1]
            self.sb.crash(b, keep_to=max(0, self.leo(b) - o[2]), torn_bytes=30 if o[3] else None)
            self.up.discard(b)
            # the controller drops it from the ISR while another member is up (it keeps the last one)
            if b in self.isr and any(x in self.up for x in self.isr if x != b):
                self.sb.isr([x for x in self.isr if x != b])
            if b == leader and any(x in self.up for x in self.isr):
                self.elect(next(x for x in self.isr if x in self.up), False)  # the controller moves leadership
        elif kind == "power_loss":
            for b, lose in zip(BROKERS, o[1]):
                if b in self.up:
                    self.sb.crash(b, keep_to=max(0, self.leo(b) - lose), torn_bytes=30 if o[2] and lose else None)
            self.up.clear()
        elif kind == "restart" and o[1] not in self.up:
            self.up.add(o[1])
        elif kind == "shrink" and o[1] != leader and o[1] in self.isr and len(self.isr) > 1:
            self.sb.isr([x for x in self.isr if x != o[1]])

    def finish(self, pick: int, may_be_unclean: bool) -> None:
        """Every broker still up stops cleanly; then the controller's last election, and everyone follows."""
        for b in sorted(self.up):
            self.sb.shut_down_cleanly(b)
        candidates = [b for b in BROKERS if b in self.isr] or BROKERS
        leader = BROKERS[pick % 3] if may_be_unclean else candidates[pick % len(candidates)]
        unclean = leader not in self.isr
        self.unclean |= unclean
        self.sb.then("elect", leader=leader, epoch=self.epoch + 1, unclean=unclean)
        for b in BROKERS:
            if b != leader:
                self.sb.then("follow", broker=b)


@given(st.lists(op, min_size=5, max_size=40), st.integers(0, 2), st.booleans())
@settings(max_examples=int(os.environ.get("KF_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_replay_of_crash_histories_ends_converges_and_names_unclean_elections_only_when_they_happened(
        ops, pick, may_be_unclean):
    h = History()
    h.elect(1, False)
    for o in ops:
        h.apply(o)
    h.finish(pick, may_be_unclean)
    event(f"history: committed {max((b.hw or 0) for b in h.sb.brokers.values()) > 0}, "
          f"crashed {sum(b.frozen_epochs is not None for b in h.sb.brokers.values())}")
    with tempfile.TemporaryDirectory() as tmp:
        sc = load_scenario(h.sb.write(Path(tmp) / "h"))
        timeline = build_timeline(sc.metadata)
        replicas = load_replicas(sc.brokers).groups[(sc.topic, sc.partition)]
        for mode in MODES:
            rp = replay_group(sc.topic, sc.partition, replicas, kafka_version=parse_kafka_version(mode), events=sc.events,
                              timeline=timeline)
            codes = rp.verdict_codes()
            for c in sorted({c for cs in codes.values() for c in cs}):
                event(f"{mode} {c}")
            unclean = any("UNCLEAN_ELECTION" in c for c in codes.values()) or any(
                f.code == "UNCLEAN_ELECTION" for f in rp.findings)
            assert unclean == h.unclean, (mode, codes)
            assert "LOG_LOAD_FAILS" not in str(codes)  # a torn tail never stops a broker
            if mode in KIP_279_FIXED:
                # a committed loss has a named cause on the leader
                leader_codes = codes[rp.leader]
                if any("LOSS_COMMITTED" in c for c in codes.values()):
                    assert {"LEADER_LACKS_COMMITTED", "UNCLEAN_ELECTION"} & set(leader_codes), (mode, codes)
                assert not any("NOT_CONVERGING" in c for c in codes.values()), (mode, codes)
                assert not [f for f in rp.findings if f.code == "LOG_MATCHING_VIOLATED"], (mode, rp.findings)
                leader = next(r for r in rp.replicas if r.role == "leader")
                for r in rp.replicas:
                    assert r.log_end_offset_after <= leader.log_end_offset_after


# ------------------------------------------------------------------ hostile evidence
_I64 = st.one_of(st.integers(-3, 40), st.sampled_from([-(1 << 63), (1 << 63) - 1, (1 << 31) - 1, -(1 << 31)]))
_row = st.tuples(_I64, _I64, st.integers(-2, 9), st.integers(0, 3), st.integers(-1, 5), st.integers(0, 200),
                 st.integers(-1, 2), st.sampled_from([0, 1, 2]), st.integers(0, 1), st.integers(-1, 1),
                 st.integers(-1, 500))


@st.composite
def hostile_replica(draw, broker: int):
    from kforensics.recovery.plan import RecoveryPlan
    from kforensics.replay.replica import BatchLog, Replica

    rows = draw(st.lists(_row, max_size=12))
    plan = draw(st.one_of(st.none(), st.builds(
        RecoveryPlan, recovers=st.booleans(), clean_shutdown=st.booleans(), from_segment=st.sampled_from([None, 0, 5]),
        truncate_segment=st.sampled_from([None, "00000000000000000000.log", "nope.log"]),
        truncate_position=st.integers(-1, 600), lost_first_offset=st.sampled_from([None, 0, 3]),
        lost_last_offset=st.sampled_from([None, 2, 9]), damage_kept=st.sampled_from([None, "00000000000000000000.log"]),
        damage_kept_position=st.integers(0, 600), load_fails=st.booleans(),
        epoch_checkpoint_unreadable=st.booleans())))
    checkpoint = draw(st.one_of(st.none(), st.lists(st.tuples(st.integers(-2, 9), _I64), max_size=5)))
    return Replica(broker, BatchLog.from_rows(rows) if rows else BatchLog.empty(), log_start=draw(_I64),
                   high_watermark=draw(st.one_of(st.none(), _I64)), epoch_checkpoint=checkpoint,
                   cleaner_offset=draw(st.one_of(st.none(), st.integers(-1, 20))),
                   segments=["00000000000000000000.log"], recovery=plan)


@given(hostile_replica(1), hostile_replica(2), hostile_replica(3), st.sampled_from(MODES), st.integers(1, 3))
@settings(max_examples=int(os.environ.get("KF_EXAMPLES", "150")) * 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_replay_of_arbitrary_damaged_replicas_ends_with_verdicts_and_never_raises(a, b, c, mode, leader):
    from kforensics.replay.engine import replay_partition

    rp = replay_partition("t", 0, [a, b, c], kafka_version=parse_kafka_version(mode), leader=leader)
    assert {r.broker_id for r in rp.replicas} == {1, 2, 3}
    assert all(r.verdicts for r in rp.replicas)  # every replica is judged, whatever the evidence
