"""The lab's newer checks without a cluster: transactions left open (Kafka's TransactionsCommand tables
against replay's transactions impact) and the spark front end against replay."""

from __future__ import annotations

import json

from kflab import compare, transactions

# ToolsUtils.prettyPrintTable (tools/src/main/java/org/apache/kafka/tools/ToolsUtils.java, 3.9.0) pads each
# column to its widest cell; DescribeProducersCommand's headers and "None" for no open transaction
# (TransactionsCommand.java, 3.9.0)
HEADERS = "ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset"
ROWS = ["1000 0 0 7 1795772989102 None", "1001 3 2 2 1795772990000 42"]
DESCRIBE_PRODUCERS = "\n".join("\t".join(f"{c:<12}" for c in line.split()) for line in [HEADERS, *ROWS]) + "\n"


def test_describe_producers_table_and_open_transactions():
    rows = transactions.parse_table("WARN a log line that reached stdout\n" + DESCRIBE_PRODUCERS)
    assert [r["ProducerId"] for r in rows] == ["1000", "1001"]
    assert transactions.open_producers(rows) == [1001]
    assert transactions.parse_table("") == [] and transactions.open_producers([]) == []


def _replay(impact):
    part = {"topic": "payments", "partition": 0, "leader": 2, "leader_epoch": 3, "replicas": []}
    return {"partitions": [part], "transactions": impact}


def test_predicted_open_from_the_impact_or_the_leaders_scan():
    scans = {2: {"partitions": [{"topic": "payments", "partition": 0, "open_transactions": [{"producer_id": 7}]}]}}
    assert transactions.predicted_open(_replay([]), scans) == {"payments-0": [7]}
    impact = [
        {
            "topic": "payments",
            "partition": 0,
            "leader": 2,
            "leader_transactions": {"open": [{"producer_id": 9, "hanging": True}]},
            "reopened": [{"producer_id": 11}],
        }
    ]
    assert transactions.predicted_open(_replay(impact), scans) == {"payments-0": [9, 11]}


def test_what_the_restart_does_to_an_open_transaction_decides_whether_it_is_predicted_open():
    # TransactionStateManager (3.9.0): loadTransactionsForTxnTopicPartition completes PrepareCommit/PrepareAbort as
    # the coordinator loads; timedOutTransactions aborts an Ongoing one once start + timeout < now, at a sweep
    # every transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by default)
    due = 1_000_000
    listed = [{"producer_id": 7, "at_restart": "aborted once timed out", "coordinator_timeout_at": due},
              {"producer_id": 8, "at_restart": "completed by the coordinator", "coordinator_timeout_at": None},
              {"producer_id": 9, "at_restart": "stays open", "coordinator_timeout_at": None},
              {"producer_id": 10, "at_restart": "unknown", "coordinator_timeout_at": None}]
    scans = {2: {"partitions": [{"topic": "payments", "partition": 0, "open_transactions": listed}]}}
    sweep = int(transactions.TXN_SWEEP_S * 1000)
    assert transactions.predicted_open(_replay([]), scans, due + sweep + 1) == {"payments-0": [9, 10]}
    assert transactions.predicted_open(_replay([]), scans, due - 1) == {"payments-0": [7, 9, 10]}
    assert transactions.predicted_open(_replay([]), scans, None) == {"payments-0": [7, 9, 10]}  # time unknown
    impact = [{"topic": "payments", "partition": 0, "leader": 2, "leader_transactions": {"open": listed},
               "reopened": [{"producer_id": 11}]}]
    assert transactions.predicted_open(_replay(impact), scans, due + sweep + 1) == {"payments-0": [9, 10, 11]}


def test_transaction_check_agrees_only_on_the_same_producers():
    scans = {"2": {"partitions": [{"topic": "payments", "partition": 0, "open_transactions": []}]}}
    seen = {"transactions": {"open": {"payments-0": []}}}
    [c] = compare.transaction_checks(_replay([]), scans, seen)
    assert c["check"] == "open_transactions" and c["agree"]
    [c] = compare.transaction_checks(_replay([]), scans, {"transactions": {"open": {"payments-0": [1001]}}})
    assert not c["agree"] and c["observed"] == [1001]
    # Kafka 2.8: no DescribeProducers, nothing observed, no check
    assert compare.transaction_checks(_replay([]), scans, {"transactions": {"unavailable": "2.8"}}) == []


def test_spark_against_replay(tmp_path):
    replay = {
        "partitions": [
            {
                "topic": "orders",
                "partition": 0,
                "leader": 1,
                "leader_epoch": 4,
                "replicas": [{"broker_id": 1, "verdicts": [{"code": "OK"}], "log_end_offset_after": 50}],
            }
        ]
    }
    same = {"orders-0/1": {"leader": 1, "leader_epoch": 4, "verdicts": ["OK"], "log_end_offset_after": 50}}
    f = tmp_path / "spark-verdicts.json"
    f.write_text(json.dumps(same))
    [c] = compare.spark_checks(replay, {"json": str(f)})
    assert c["check"] == "spark_vs_replay" and c["agree"]
    f.write_text(json.dumps({"orders-0/1": {**same["orders-0/1"], "leader_epoch": 5}}))
    [c] = compare.spark_checks(replay, {"json": str(f)})
    assert not c["agree"]
    assert compare.spark_checks(replay, None) == []
    [c] = compare.spark_checks(replay, {"error": "spark could not start"})
    assert not c["agree"] and c["error"] == "spark could not start"
