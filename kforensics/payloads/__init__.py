"""Payloads in business terms: keys and values framed for the Confluent Schema Registry, decoded for display.

``wire.py`` is the frame (magic byte 0, a 4-byte schema id), ``registry.py``
reads the schemas from the evidence's ``_schemas`` topic, ``decoders.py``
decodes a framed payload with its schema (Avro through fastavro, JSON Schema
payloads as JSON, other formats through the ``kforensics.payload_decoders``
entry points).  A payload that does not decode stays bytes, with a finding:
never an error.
"""
