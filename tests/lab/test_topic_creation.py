"""The lab's topic creation survives a request that times out (3 of 104 campaign-4 incidents on 2.8.2 failed there,
before any incident): sent again, a topic the first request did create counts as created; other errors stop."""

from __future__ import annotations

import pytest

ck = pytest.importorskip("confluent_kafka")

from kflab import workload  # noqa: E402
from kflab.workload import TopicSpec, Workload  # noqa: E402


class _Future:
    def __init__(self, code):
        self.code = code

    def result(self, timeout=None):
        if self.code is not None:
            raise ck.KafkaException(ck.KafkaError(self.code))


class _Admin:
    def __init__(self, answers):
        self.answers, self.calls = list(answers), 0

    def create_topics(self, topics, **kw):
        self.calls += 1
        code = self.answers.pop(0)
        return {t.topic: _Future(code) for t in topics}


def _workload(monkeypatch, answers):
    w = Workload.__new__(Workload)
    w.admin = _Admin(answers)
    waited = []
    monkeypatch.setattr(w, "wait_isr", lambda t, p, n, s: waited.append((t, p)), raising=False)
    return w, waited


def test_a_timed_out_request_is_sent_again_and_an_existing_topic_is_success(monkeypatch):
    w, waited = _workload(monkeypatch, [ck.KafkaError._TIMED_OUT, ck.KafkaError.TOPIC_ALREADY_EXISTS])
    w.create_topics([TopicSpec("orders", 2)], timeout_s=1)
    assert w.admin.calls == 2 and waited == [("orders", 0), ("orders", 1)]


def test_other_errors_and_the_last_timeout_are_raised(monkeypatch):
    w, _ = _workload(monkeypatch, [ck.KafkaError.POLICY_VIOLATION])
    with pytest.raises(ck.KafkaException):
        w.create_topics([TopicSpec("orders")], timeout_s=1)
    w, _ = _workload(monkeypatch, [ck.KafkaError._TIMED_OUT] * 3)
    with pytest.raises(ck.KafkaException):
        w.create_topics([TopicSpec("orders")], timeout_s=1)
    assert w.admin.calls == 3 and workload.KafkaError is ck.KafkaError
