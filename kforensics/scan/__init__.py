"""Scan: one broker's log dir(s) as evidence, partition by partition, with every check and the recovery plan."""
