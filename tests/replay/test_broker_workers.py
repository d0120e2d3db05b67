"""Brokers loaded side by side (kforensics.replay.broker_workers) give the replay one broker after another gives.

The expected answer is the serial load's (``jobs=1``), whose verdicts the scenario and history tests check against
Kafka's rules; these tests check that workers change nothing of it, nor of its refusals.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.replay import broker_workers, inputs
from kforensics.replay.inputs import load_replicas
from kforensics.replay.report import replay_all
from kforensics.scan.broker import InputError, resolve_log_dirs
from kforensics.scenario import load_scenario
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT, all_reaped

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())
TIERED = sorted(p for p in (ROOT / "fixtures" / "tiered").iterdir() if (p / "scenario.json").exists())


@pytest.fixture
def forking(monkeypatch):
    """Workers allowed in this test process (a pytest worker runs threads of its own, which forbid them), and a
    count of the workers each load used."""
    used: list[int] = []
    count = broker_workers.worker_count

    def counted(jobs, log_dirs):
        used.append(count(jobs, log_dirs))
        return used[-1]

    monkeypatch.setattr(broker_workers, "other_threads", lambda: False)
    monkeypatch.setattr(broker_workers, "worker_count", counted)
    return used


def _document(brokers, sc, jobs: int) -> str:
    report = replay_all(brokers, events=sc.events or None, metadata=sc.metadata, jobs=jobs)
    return json.dumps(to_jsonable(report), sort_keys=True)


@pytest.mark.parametrize("sdir", SCENARIOS + TIERED, ids=lambda p: p.name)
def test_side_by_side_replays_every_scenario_as_one_after_another(sdir, forking):
    sc = load_scenario(sdir)
    serial = _document(sc.brokers, sc, 1)
    assert _document(sc.brokers, sc, 3) == serial
    assert forking[-1] == min(3, len(sc.brokers) - 1) >= 1  # the second load had workers


def _unnamed(tmp_path: Path, sdir: Path) -> list[Path]:
    """The scenario's brokers' partition dirs copied without their meta.properties and root files: brokers that
    nothing names."""
    out = []
    for b, dirs in sorted(load_scenario(sdir).brokers.items()):
        dst = tmp_path / f"b{b}"
        for part in (p for p in dirs[0].iterdir() if p.is_dir()):
            shutil.copytree(part, dst / part.name)
        out.append(dst)
    return out


def test_brokers_nothing_names_are_numbered_in_the_order_given(tmp_path, forking):
    dirs = _unnamed(tmp_path, ROOT / "fixtures" / "scenarios" / "unclean-leader-election")
    dirs.reverse()
    serial, side = load_replicas(dirs, jobs=1, every_summary=True), load_replicas(dirs, jobs=3, every_summary=True)
    assert forking[-1] == 2
    assert serial.broker_ids == side.broker_ids == [-1, -2, -3]
    for key, replicas in serial.groups.items():
        assert [(r.broker_id, r.source) for r in side.groups[key]] == [(r.broker_id, r.source) for r in replicas]
    # every replica and its summary as the numbered broker's (replay's rule: -1, -2, ... in the order given)
    for load in (serial, side):
        assert {key: [r.broker_id for r in replicas] for key, replicas in load.groups.items()} == {
            key: [-1, -2, -3] for key in serial.groups}
        assert [[s.broker_id for s in v] for v in load.summaries.values()] == [[-1, -2, -3]] * len(serial.groups)
    # the replay of brokers nothing names: no scenario events (they name brokers 1 to 3)
    assert (json.dumps(to_jsonable(replay_all(dirs, jobs=3)), sort_keys=True)
            == json.dumps(to_jsonable(replay_all(dirs, jobs=1)), sort_keys=True))


def test_the_partition_dirs_left_out_name_their_numbered_broker(tmp_path, forking):
    dirs = _unnamed(tmp_path, ROOT / "fixtures" / "scenarios" / "healthy-3-brokers")
    for d in dirs:
        shutil.copytree(next(p for p in d.iterdir() if p.is_dir()), d / "t-0.0123456789abcdef0123456789abcdef-delete")
    serial, side = load_replicas(dirs, jobs=1), load_replicas(dirs, jobs=2)
    assert [(o.broker_id, o.path) for o in side.left_out] == [(o.broker_id, o.path) for o in serial.left_out]
    assert sorted(o.broker_id for o in side.left_out) == [-3, -2, -1]


def test_a_worker_that_dies_leaves_its_broker_to_this_process(forking, monkeypatch):
    sc = load_scenario(ROOT / "fixtures" / "scenarios" / "kip101-s2-two-hard-failures")
    serial = _document(sc.brokers, sc, 1)
    here, scan = os.getpid(), inputs.scan_log_dirs

    def dies_in_a_worker(*a, **kw):
        if os.getpid() != here:
            os._exit(9)  # as the kernel's OOM killer would end it
        return scan(*a, **kw)

    monkeypatch.setattr(inputs, "scan_log_dirs", dies_in_a_worker)
    assert _document(sc.brokers, sc, 3) == serial
    assert forking[-1] >= 1


def test_a_refusal_in_a_worker_is_the_one_given_one_after_another(forking, monkeypatch):
    sc = load_scenario(ROOT / "fixtures" / "scenarios" / "healthy-3-brokers")
    scan = inputs.scan_log_dirs

    def refuses_broker_2(dirs, **kw):
        if any("broker-2" in str(d) for d in dirs):
            raise InputError(f"{dirs[0]} cannot be read")
        return scan(dirs, **kw)

    monkeypatch.setattr(inputs, "scan_log_dirs", refuses_broker_2)
    for jobs in (1, 3):
        with pytest.raises(InputError, match="broker-2 cannot be read"):
            load_replicas(sc.brokers, jobs=jobs)


def test_a_broker_given_twice_is_refused_as_one_after_another(forking):
    b1 = ROOT / "fixtures" / "scenarios" / "healthy-3-brokers" / "broker-1"
    b2 = ROOT / "fixtures" / "scenarios" / "healthy-3-brokers" / "broker-2"
    said = []
    for jobs in (1, 3):
        with pytest.raises(InputError, match="broker 1") as e:
            load_replicas([b1, b2, b1], jobs=jobs)
        said.append(str(e.value))
    assert said[0] == said[1]


def _dirs(*dirs) -> list[list]:
    return [resolve_log_dirs([d]) for d in dirs]


def test_workers_only_where_they_are_safe_and_pay(monkeypatch):
    scen = ROOT / "fixtures" / "scenarios" / "healthy-3-brokers"
    three = _dirs(scen / "broker-1", scen / "broker-2", scen / "broker-3")
    monkeypatch.setattr(broker_workers, "other_threads", lambda: False)
    assert broker_workers.worker_count(3, three) == 2  # this process loads the third
    assert broker_workers.worker_count(2, three) == 2
    assert broker_workers.worker_count(None, three) == min(broker_workers.cores(), 2)
    assert broker_workers.worker_count(1, three) == 0
    assert broker_workers.worker_count(8, three[:1]) == 0
    archived = three[:1] + [[object()]]  # a source that is no local directory
    assert broker_workers.worker_count(8, archived) == 0
    monkeypatch.undo()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert broker_workers.worker_count(8, three) == 0  # a threaded process is not forked
    finally:
        stop.set()
        thread.join()


def test_jobs_on_the_command_line(tmp_path):
    scen = ROOT / "fixtures" / "scenarios" / "unclean-leader-election"
    r = CliRunner().invoke(main, ["replay", "--scenario", str(scen), "--jobs", "0"])
    assert r.exit_code == 2 and "--jobs" in r.output
    # a fresh process has no other thread: the default loads the brokers side by side
    out = {}
    for jobs in ("1", "3"):
        got = subprocess.run([sys.executable, "-m", "kforensics", "replay", "--scenario", str(scen), "--format",
                              "json", "--jobs", jobs], capture_output=True, text=True, cwd=ROOT)
        assert got.returncode == 1, got.stderr
        out[jobs] = got.stdout
    assert out["1"] == out["3"] and json.loads(out["3"])["partitions"]


def test_an_interrupt_ends_the_workers_at_once(monkeypatch, forks):
    """Ctrl-C (or any error) while the workers load: they are ended and reaped, not waited for."""
    scen = ROOT / "fixtures" / "scenarios" / "healthy-3-brokers"
    three = _dirs(scen / "broker-1", scen / "broker-2", scen / "broker-3")
    monkeypatch.setattr(broker_workers, "other_threads", lambda: False)
    here = os.getpid()

    def load(task):
        if os.getpid() != here:
            time.sleep(120)  # a worker still loading
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        list(broker_workers.broker_loads(["b1", "b2", "b3"], three, 3, load))
    assert time.monotonic() - started < 30
    assert len(forks) == 2 and all_reaped(forks)


def test_a_refusal_leaves_no_worker_behind(forking, forks):
    """Every broker is loaded before the loads are grouped, so a broker given twice is refused with every worker
    reaped."""
    b1 = ROOT / "fixtures" / "scenarios" / "healthy-3-brokers" / "broker-1"
    b2 = ROOT / "fixtures" / "scenarios" / "healthy-3-brokers" / "broker-2"
    with pytest.raises(InputError, match="broker 1"):
        load_replicas([b1, b1, b2, b2], jobs=2)
    assert len(forks) == 3 and all_reaped(forks)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three brokers of 2 000 small partition dirs each (the benchmarks' small set, smaller): a fleet whose JSON
    lists a helper converts beside the command (``kforensics.cli.json_out.HELPED_FROM``), and whose scan --out has
    its tables written by one (``kforensics.tables.scan_tables.HELPED_FROM``)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_spark import build

    from kforensics.cli.json_out import HELPED_FROM as JSON_HELPED
    from kforensics.tables.scan_tables import HELPED_FROM as TABLES_HELPED

    partitions = 2000
    assert partitions >= max(JSON_HELPED, TABLES_HELPED)
    return build(tmp_path_factory.mktemp("fleet"), "fleet", 3, partitions, 10, topics=20)


@pytest.mark.parametrize("delay", [0.3, 0.6, 0.9, 1.2, 1.6, 2.2])
def test_ctrl_c_ends_replay_whenever_it_comes(fleet, delay):
    """Ctrl-C at any moment of a replay whose brokers load side by side and whose JSON a helper converts beside
    it: the command ends at once, without a traceback, and leaves no process behind (an interrupt while the workers
    of an executor started could leave it waiting forever, and one amid a fork a worker nobody ended)."""
    _interrupted([sys.executable, "-m", "kforensics", "replay", *map(str, fleet), "--format", "json"], delay)


@pytest.mark.parametrize("delay", [0.2, 0.35, 0.5, 0.65, 0.8, 1.0])
def test_ctrl_c_ends_scan_out_whenever_it_comes(fleet, delay, tmp_path):
    """The same of a scan --out whose tables a helper writes while the document is written (one broker of the
    fleet: 0.6 s on an idle machine, the helper from about 0.45 s)."""
    _interrupted([sys.executable, "-m", "kforensics", "scan", str(fleet[0]), "--format", "json", "--out",
                  str(tmp_path / "out")], delay)


def _interrupted(cmd: list[str], delay: float) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        err = proc.communicate(timeout=60)[1].decode()
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{cmd[3]} still running 60 s after Ctrl-C at {delay} s")
    if proc.returncode in (0, 1):
        return  # the command was over before the interrupt came
    # exit 2 with one line, or (an interrupt as the interpreter starts or ends) death by SIGINT, as shells expect
    assert proc.returncode in (2, -signal.SIGINT) and "Traceback" not in err, err
    assert proc.returncode != 2 or err.strip().endswith("kforensics: aborted"), err
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert not left, f"processes left in the command's session: {left}"


def test_an_error_that_does_not_pickle_is_raised_as_one_after_another(forking, forks, monkeypatch):
    """A worker whose exception cannot be handed back (pickle cannot name its class) leaves its broker to this
    process, which meets the same exception."""
    sc = load_scenario(ROOT / "fixtures" / "scenarios" / "healthy-3-brokers")
    scan = inputs.scan_log_dirs

    class Unnamed(Exception):
        pass

    def fails_on_broker_2(dirs, **kw):
        if any("broker-2" in str(d) for d in dirs):
            raise Unnamed("broker 2 cannot be read")
        return scan(dirs, **kw)

    monkeypatch.setattr(inputs, "scan_log_dirs", fails_on_broker_2)
    for jobs in (1, 3):
        with pytest.raises(Unnamed, match="broker 2 cannot be read"):
            load_replicas(sc.brokers, jobs=jobs)
    assert forking[-1] == 2 and all_reaped(forks)
