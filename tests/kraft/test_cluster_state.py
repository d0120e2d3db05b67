"""Brokers, features and configs folded from metadata records, as ClusterControlManager and friends replay them."""

from __future__ import annotations

from kforensics.formats.metadata_records import decode_metadata_record, encode_metadata_record
from kforensics.kraft.cluster_state import ClusterState


def fold(*records) -> ClusterState:
    s = ClusterState()
    for i, (kind, version, data) in enumerate(records):
        # through the codec, so the field names are the decoder's
        d = decode_metadata_record(encode_metadata_record(kind, version, data))
        s.apply(d["type"], d["data"], i)
    return s


def register(b, epoch, fenced=True):
    return ("RegisterBrokerRecord", 1, {"brokerId": b, "incarnationId": "AAAAAAAAAAAAAAAAAAAAAA", "brokerEpoch": epoch,
                                        "endPoints": [], "features": [], "rack": None, "fenced": fenced,
                                        "inControlledShutdown": False})


def test_registration_fencing_and_controlled_shutdown():
    # BrokerRegistrationFencingChange: 1 fences, -1 unfences; InControlledShutdownChange 1 (4.1.0)
    s = fold(register(1, 10), register(2, 11), register(3, 12, fenced=False),
             ("BrokerRegistrationChangeRecord", 1, {"brokerId": 1, "brokerEpoch": 10, "fenced": -1}),
             ("BrokerRegistrationChangeRecord", 1, {"brokerId": 3, "brokerEpoch": 12, "inControlledShutdown": 1}),
             ("UnfenceBrokerRecord", 0, {"id": 2, "epoch": 11}),
             ("FenceBrokerRecord", 0, {"id": 2, "epoch": 11}))
    assert s.active_brokers() == {1}  # 2 fenced again, 3 shutting down
    assert s.brokers[1].epoch == 10
    s.apply("UnregisterBrokerRecord", {"brokerId": 1, "brokerEpoch": 10}, 9)
    assert s.active_brokers() == set()


def test_features_and_topic_configs_with_their_provenance():
    s = fold(("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21}),
             ("FeatureLevelRecord", 0, {"name": "eligible.leader.replicas.version", "featureLevel": 1}),
             ("ConfigRecord", 0, {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2"}),
             ("ConfigRecord", 0, {"resourceType": 2, "resourceName": "orders", "name": "unclean.leader.election.enable",
                                  "value": "true"}))
    assert (s.metadata_version, s.elr_enabled) == (21, True)
    assert s.topic_config("orders", "unclean.leader.election.enable") == ("true", "topic config of orders")
    assert s.topic_config("orders", "min.insync.replicas") == ("2", "cluster default config")
    value, where = s.topic_config("other", "unclean.leader.election.enable")
    assert value == "false" and "default" in where
    s.apply("ConfigRecord", {"resourceType": 2, "resourceName": "orders", "name": "unclean.leader.election.enable",
                             "value": None}, 9)
    assert s.topic_config("orders", "unclean.leader.election.enable")[0] == "false"
    s.apply("FeatureLevelRecord", {"name": "eligible.leader.replicas.version", "featureLevel": 0}, 10)
    assert s.elr_enabled is None
