"""The lab's ordered restart reads Kafka's logs right (no Java needed).

The logs are excerpts of a real restart of Kafka 4.4.0 on the frozen evidence of an unclean election
(``data/restart-4.4.0``): brokers were started in the order 3, 1, 2, each meant to wait for the one before it to
be unfenced, yet the controller registered 2 first.  Its log had replayed, at its own start, the metadata log's
old ``BrokerRegistrationChangeRecord(... fenced=-1 ...)`` of every broker, which the old unfence test took for
an unfence after the restart, so the brokers were started all at once and the first JVM up won the election.
"""

from __future__ import annotations

from pathlib import Path

from kflab.cluster import CONTROLLER, node_name
from kflab.observe import _unfenced, active_sessions, registration_order

DATA = Path(__file__).parent / "data" / "restart-4.4.0"
CONTROLLER_LOG = (DATA / "controller-100.log").read_text()
BROKER3_LOG = (DATA / "broker-3.log").read_text()
ACTIVE = CONTROLLER_LOG.index("Becoming the active controller")


class Logs:
    """A cluster as far as its log texts go."""

    def __init__(self, texts: dict[int, str]):
        self.texts = texts

    def log_text(self, node: int) -> str:
        return self.texts.get(node, "")


def test_a_replayed_unfence_is_not_an_unfence():
    # the controller is back and has replayed the log; broker 3 has started but is not yet unfenced
    waiting = BROKER3_LOG[: BROKER3_LOG.index("The broker has been unfenced")]
    c = Logs({CONTROLLER: CONTROLLER_LOG[:ACTIVE], 3: waiting})
    assert "brokerId=3, brokerEpoch=16, fenced=-1" in CONTROLLER_LOG[:ACTIVE]  # the line that misled
    assert not _unfenced(c, 3)
    assert _unfenced(Logs({CONTROLLER: CONTROLLER_LOG, 3: BROKER3_LOG}), 3)


def test_only_lines_after_the_start_count():
    c = Logs({3: BROKER3_LOG})
    assert _unfenced(c, 3, 0)
    assert not _unfenced(c, 3, len(BROKER3_LOG))  # a second start appends to the same log


def test_registration_order_is_the_controllers_actions():
    # "Replayed RegisterBrokerRecord establishing a new incarnation" is the replay of each action: not counted twice
    assert registration_order(CONTROLLER_LOG) == [2, 1, 3]
    assert registration_order(CONTROLLER_LOG[:ACTIVE]) == []


def test_sessions_the_controller_holds_until_they_expire():
    # at the freeze brokers 1 and 3 were unfenced (3 led events-0 with ISR [1, 3]); 2 had been fenced in the
    # incident.  On activation the controller gives 1 and 3 fresh sessions: dead, they can still be elected.
    assert active_sessions(CONTROLLER_LOG[:ACTIVE]) == {1, 3}
    first = CONTROLLER_LOG.index("Registering a new incarnation of broker 2")
    assert active_sessions(CONTROLLER_LOG[:first]) == {1, 3}  # 2 registered while they were held: the race
    fenced_3 = CONTROLLER_LOG.index("Fencing broker 3 at epoch 16 because its session has timed out")
    # by then 2 is back and unfenced, 1's new incarnation registered (fenced), 3 still held
    assert active_sessions(CONTROLLER_LOG[:fenced_3]) == {2, 3}
    back_3 = CONTROLLER_LOG.index("Registering a new incarnation of broker 3")
    assert active_sessions(CONTROLLER_LOG[:back_3]) == {2}
    # and Kafka elected the broker that was back, 2, outside the ISR, when 3's session ran out
    assert "isr: [3] -> [2], leader: 3 -> 2" in CONTROLLER_LOG[fenced_3:back_3]


def test_node_names():
    assert node_name(CONTROLLER) == "controller-100"
