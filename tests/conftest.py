"""Shared test helpers: where ../shared lives, and skips when it is absent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings as _hypothesis_settings

# Property tests draw the same examples on every run unless KF_RANDOM=1: a build passes or fails for a reason in
# the code, not in the dice (run with KF_RANDOM=1 and a large KF_EXAMPLES to search for new counterexamples).
_hypothesis_settings.register_profile("kforensics", derandomize=True)
_hypothesis_settings.register_profile("random", derandomize=False)
_hypothesis_settings.load_profile("random" if os.environ.get("KF_RANDOM") == "1" else "kforensics")


ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ORACLE = SHARED / "oracle" / "fixtures"
REALDATA = SHARED / "realdata"


def need_shared(path: Path) -> Path:
    """Skip the calling test when a ../shared resource is missing (a user's fresh clone)."""
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared (oracle fixtures, real broker data) is not beside this checkout")
    return path


def oracle_cases() -> list[str]:
    index = ORACLE / "index.json"
    if not index.exists():
        return []
    return [c["case"] for c in json.loads(index.read_text(encoding="utf-8"))["cases"]]


def load_manifest(case: str) -> dict:
    return json.loads((need_shared(ORACLE) / "manifests" / f"{case}.json").read_text(encoding="utf-8"))


@pytest.fixture
def oracle_dir() -> Path:
    return need_shared(ORACLE)


@pytest.fixture
def realdata_dir() -> Path:
    return need_shared(REALDATA)


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for the whole test session."""
    pytest.importorskip("pyspark")
    import shutil

    if shutil.which("java") is None:
        pytest.skip("no java: Spark needs Java 17 (scripts/setup.sh installs it)")
    from kforensics.spark.job import session

    s = session("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def file_tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_generator(script: Path, out: Path) -> None:
    """Run a fixtures/make_*.py generator's ``main`` into ``out``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(script.stem, script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(out)


def entry_records(batch, *, with_data: bool = False):
    """The records of one entry and the finding that stopped decoding them (None when none did)."""
    from kforensics.log.records import EntryRecords

    decoder = EntryRecords(batch, with_data=with_data)
    records = list(decoder)
    return records, decoder.error


def deep_entry(batch, *, with_data: bool = False) -> dict:
    """One entry as Kafka's accessors show it, records included (the oracle manifests' shape, snake_case)."""
    from kforensics.log.records import EntryRecords, batch_entry
    from kforensics.serialize import to_jsonable

    entry = batch_entry(batch)
    if batch.magic < 2 and entry.base_offset is None and batch.raw is not None:
        entry.base_offset, entry.record_count = EntryRecords(batch).summary()
    records, error = entry_records(batch, with_data=with_data)
    d = to_jsonable(entry)
    d["records"] = [to_jsonable(r) if not with_data else {**to_jsonable(r), "key": r.key, "value": r.value}
                    for r in records]
    d["records_error"] = None if error is None else to_jsonable(error)
    return d


@pytest.fixture
def forks(monkeypatch):
    """The pids of the processes this test forks (a pytest worker has children of its own: Spark's JVM, ...)."""
    pids: list[int] = []
    fork = os.fork

    def recorded() -> int:
        pid = fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recorded)
    return pids


def all_reaped(pids: list[int]) -> bool:
    """Whether there were forked processes and every one has ended and been reaped (none left running or a
    zombie)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return bool(pids)
