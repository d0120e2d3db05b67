"""KRaft: the controller's metadata log replayed into election timelines, and replicas checked against it."""
