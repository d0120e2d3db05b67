"""Recovery: what Kafka's log loading does to a partition at the next start (LogLoader), computed, never done."""
