"""Fuzz tests (issue #12): every file kind kforensics reads, mutated, through the API and the CLI.

Each example is one input named by (kind, seed, mutation seed) and built by
:mod:`tests.fuzz.harness` from kforensics' own encoders' seeds and, when
../shared is beside the checkout, from segments Kafka's client library wrote
and real broker files.  Mutations are raw damage and CRC-valid structural
changes (a field inside a batch changed, the batch re-encoded and its CRC
recomputed), so the deeper validation is what is exercised.  Every input must:

* raise nothing, from the API or the CLI (exit 0, 1 or 2, never 3);
* place every finding in its file, inside it, with a catalogued code;
* where Kafka's own reader would refuse it (modelled independently in
  :mod:`tests.fuzz.kafka_model`), report a finding at that entry naming why.

The sample is bounded for CI; ``KF_FUZZ_EXAMPLES`` scales it (the number of
examples per kind; default 25), and ``scripts/fuzz_campaign.py`` runs the
same inputs by the million.
"""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import corpus, harness, kafka_model, mutate, wire

EXAMPLES = int(os.environ.get("KF_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not os.environ.get("KF_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
CLI = settings(FUZZ, max_examples=max(2, EXAMPLES // 5))
KINDS = [k for k in corpus.KINDS if k != "log_dir"]


def need_shared_seeds() -> dict[str, list[corpus.Seed]]:
    seeds = corpus.seeds_from("shared")
    if not seeds:
        pytest.skip(f"{corpus.SHARED} is absent: ../shared (oracle segments, real broker files) is not beside "
                    "this checkout; the synthetic seeds are fuzzed without it")
    return seeds


def check(outcome: harness.Outcome, inp: harness.Input) -> None:
    where = f"{inp.kind} seed {inp.seed_name}: {inp.what}"
    assert outcome.crash is None, f"{where}\n{outcome.crash}"
    assert not outcome.problems, f"{where}: {outcome.problems}"
    assert not outcome.silent, f"{where}: Kafka refuses, no finding: {outcome.silent}"
    assert not outcome.misreported, f"{where}: {outcome.misreported}"


# ----------------------------------------------------------------------------- the API
@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(index=st.integers(0, 10_000), mseed=st.integers(0, 2**40))
def test_every_kind_survives_mutation_and_refusals_are_reported(tmp_path_factory, kind, index, mseed):
    seeds = corpus.seeds_from("synthetic")
    inp = harness.make_input(kind, index, mseed, seeds)
    check(harness.run_input(inp, tmp_path_factory.mktemp("fuzz") / "w"), inp)


@pytest.mark.shared
@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(index=st.integers(0, 10_000), mseed=st.integers(0, 2**40))
def test_kafka_written_and_real_files_survive_mutation(tmp_path_factory, kind, index, mseed):
    seeds = need_shared_seeds()
    if kind not in seeds:
        pytest.skip(f"no {kind} among ../shared's files")
    inp = harness.make_input(kind, index, mseed, seeds)
    check(harness.run_input(inp, tmp_path_factory.mktemp("fuzz") / "w"), inp)


# ----------------------------------------------------------------------------- the command line and the scan
@pytest.mark.parametrize("kind", KINDS)
@CLI
@given(index=st.integers(0, 10_000), mseed=st.integers(0, 2**40))
def test_every_kind_through_the_cli_and_a_scan(tmp_path_factory, kind, index, mseed):
    """``dump``, ``dump --deep --format json``, ``dump --print-data`` (indexes: ``--verify-index-only``,
    ``--index-sanity-check``), and the file inside a scanned log dir."""
    if kind == "internal_record":
        pytest.skip("internal-topic records are not files: decoded through the API")
    inp = harness.make_input(kind, index, mseed, corpus.all_seeds())
    check(harness.run_input(inp, tmp_path_factory.mktemp("fuzz") / "w", cli=True, scan=True), inp)


@settings(FUZZ, max_examples=max(3, EXAMPLES // 3))
@given(index=st.integers(0, 10), mseed=st.integers(0, 2**40))
def test_damaged_log_dirs_through_scan_json_parquet_and_timeline(tmp_path_factory, index, mseed):
    """A broker log dir (KRaft or not) with one file damaged, removed, emptied, replaced by a directory, or
    a stray one added: ``scan``, ``scan --format json``, ``scan --out``, ``timeline``."""
    inp = harness.make_input("log_dir", index, mseed, corpus.all_seeds())
    check(harness.run_input(inp, tmp_path_factory.mktemp("fuzz") / "w", cli=True), inp)


# ----------------------------------------------------------------------------- the mutations reach deep validation
def test_structural_mutations_reach_every_refusal_kafka_has():
    """The CRC-valid structural mutations are not stopped by the CRC: across the seeds they produce entries
    Kafka refuses for every reason its deep iteration has (so the tests above exercise each check)."""
    seeds = corpus.seeds_from("synthetic")
    reasons: Counter = Counter()
    for kind in corpus.SEGMENT_KINDS:
        for i in range(300):
            rng = random.Random(i)
            seed = seeds[kind][i % len(seeds[kind])]
            m = mutate.segment(seed.files[seed.main], rng)
            if m.structural:
                reasons.update(r.reason for r in kafka_model.judge_segment(m.data))
    expected = {"records", "control", "record_offsets", "header_offsets", "decompress", "codec", "count",
                "inner_crc", "inner_set", "inner_message", "message", "null_wrapper", "framing"}
    assert expected <= set(reasons), expected - set(reasons)
    # and mostly not through the CRC: structural mutations keep it valid
    assert reasons["crc"] < sum(reasons.values()) / 20, reasons


def test_the_model_accepts_every_seed():
    """The reference model refuses nothing Kafka wrote or kforensics encodes (so its refusals are the damage)."""
    damaged = ("corrupt-crc", "truncated-tail", "zero-tail", "zero-gap")  # the oracle's deliberately damaged cases
    for kind, seeds in corpus.all_seeds().items():
        for seed in seeds:
            if any(d in seed.name for d in damaged):
                continue
            for rel, data in seed.files.items():
                k = harness.kind_of_name(rel) if kind == "log_dir" else kind
                if k in corpus.SEGMENT_KINDS:
                    assert not kafka_model.judge_segment(data), (seed.name, rel)
                elif k in harness.CHECKPOINT_KINDS:
                    assert not kafka_model.judge_checkpoint(data, k), (seed.name, rel)
                elif k == "partition_metadata":
                    assert not kafka_model.judge_partition_metadata(data), (seed.name, rel)
                elif k == "producer_snapshot":
                    assert not kafka_model.judge_producer_snapshot(data), (seed.name, rel)
                elif k == "quorum_state":
                    assert not kafka_model.judge_quorum_state(data), (seed.name, rel)


def test_wire_re_encodes_what_it_parses():
    """The independent encoder rebuilds every seed entry byte for byte (so a mutation changes one thing only)."""
    for kind in ("log_v2", "control", "metadata_log", "kraft_snapshot"):
        for seed in corpus.seeds_from("synthetic")[kind]:
            for e in wire.frame(seed.files[seed.main]).entries:
                h = wire.v2_header(e.raw)
                assert wire.v2_build(h, e.raw[wire.V2_HEADER_SIZE:]) == e.raw
                if h["attributes"] & 7 == 0 and h["records_count"]:
                    recs = wire.parse_records(e.raw[wire.V2_HEADER_SIZE:])
                    assert b"".join(r.encode() for r in recs) == e.raw[wire.V2_HEADER_SIZE:]
    for kind in ("log_v0", "log_v1"):
        for seed in corpus.seeds_from("synthetic")[kind]:
            for e in wire.frame(seed.files[seed.main]).entries:
                f = wire.legacy_fields(e.raw)
                assert wire.legacy_build(f["offset"], f["magic"], f["attributes"], f["key"], f["value"],
                                         f["timestamp"]) == e.raw
