"""Replay: what Kafka's replication does next to the replicas found on disk, and what that costs (verdicts)."""
