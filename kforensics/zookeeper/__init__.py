"""ZooKeeper-mode clusters: Kafka's znodes read from ZooKeeper's data dir, and the ZooKeeper-era controller."""
