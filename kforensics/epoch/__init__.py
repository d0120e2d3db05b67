"""Leader epochs: Kafka's per-release rules, the epoch cache, rebuilding it from batches and comparing caches."""
