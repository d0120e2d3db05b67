"""A cluster on 127.0.0.1: three brokers (1, 2, 3) and their metadata quorum.

KRaft: one dedicated controller (node 100).  A dedicated controller keeps the quorum alive while brokers
are frozen or killed (in combined mode, freezing two brokers would freeze two of three voters and no ISR
would ever shrink).  ZooKeeper mode (``jars.zk_mode``): one ZooKeeper server (node 0, from the zookeeper
jar Kafka depends on) and brokers with ``zookeeper.connect``; one of the brokers is the controller.
"""

from __future__ import annotations

import base64
import fcntl
import shutil
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import jars, procs
from .ports import reserve as reserve_ports

CONTROLLER = 100
ZOOKEEPER = 0
BROKERS = (1, 2, 3)
JVM_OPTS = [
    "-Xmx256m",
    "-Xms48m",
    "-Xss512k",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:MaxDirectMemorySize=128m",
    "-Djava.awt.headless=true",
]
MAX_LIFE_S = 1200  # every JVM is SIGKILLed by its timeout wrapper after this, whatever happens to the harness

LOG4J2 = """status = warn
appender.c.type = Console
appender.c.name = C
appender.c.layout.type = PatternLayout
appender.c.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.c.ref = C
logger.seg.name = org.apache.kafka.storage.internals.log.LogSegment
logger.seg.level = DEBUG
logger.req.name = kafka.request.logger
logger.req.level = WARN
"""
LOG4J1 = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.storage.internals.log.LogSegment=DEBUG
log4j.logger.kafka.log.LogSegment=DEBUG
log4j.logger.kafka.request.logger=WARN
"""

# Why each override: small heaps and few threads for 2 cores; one partition for the internal topics
# (small evidence); small preallocated indexes (copies stay small); quick ISR shrink and fencing so a
# frozen broker leaves the ISR within seconds; no preferred-leader rebalance, so the leader observed
# after a restart is the one the election chose.
BROKER_CONF = {
    "num.network.threads": 2,
    "num.io.threads": 2,
    "num.replica.fetchers": 1,
    "background.threads": 2,
    "num.recovery.threads.per.data.dir": 1,
    "log.cleaner.threads": 1,
    "log.cleaner.dedupe.buffer.size": 4194304,
    "num.partitions": 1,
    "default.replication.factor": 3,
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 1,
    "group.initial.rebalance.delay.ms": 0,
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": 4000,
    "broker.heartbeat.interval.ms": 500,
    "log.index.size.max.bytes": 10240,
    "unclean.leader.election.enable": "false",
    "controlled.shutdown.enable": "true",
}
# ZooKeeper mode: a short session so a killed broker's registration goes (and the controller elects) within
# seconds; the KRaft-only keys are left out.
ZK_BROKER_CONF = {k: v for k, v in BROKER_CONF.items() if k != "broker.heartbeat.interval.ms"} | {
    "zookeeper.session.timeout.ms": 6000,
    "zookeeper.connection.timeout.ms": 20000,
}
# tickTime 500 ms lets the brokers' 6 s session through (ZooKeeper bounds sessions to 2..20 ticks); no admin
# server (it would need Jetty and a port), one node, loopback only.
ZK_CONF = {
    "tickTime": 500,
    "initLimit": 10,
    "syncLimit": 5,
    "maxClientCnxns": 0,
    "admin.enableServer": "false",
    "clientPortAddress": "127.0.0.1",
}
CONTROLLER_CONF = {
    "broker.session.timeout.ms": 5000,
    "num.io.threads": 2,
    "num.network.threads": 1,
    "background.threads": 2,
    "log.index.size.max.bytes": 10240,
}


def _props(d: dict) -> str:
    return "".join(f"{k}={v}\n" for k, v in d.items())


def node_name(node: int) -> str:
    if node == ZOOKEEPER:
        return "zookeeper"
    return f"controller-{node}" if node == CONTROLLER else f"broker-{node}"


def meta_node(version: str) -> int:
    """The node that holds the metadata: ZooKeeper (ZooKeeper mode) or the KRaft controller."""
    return ZOOKEEPER if jars.zk_mode(version) else CONTROLLER


def nodes(version: str) -> tuple[int, ...]:
    """Every node of a cluster of this version, the metadata node first."""
    return (meta_node(version),) + BROKERS


class Cluster:
    """Processes of one cluster, their configs under run_dir/conf, data under data_root, logs under run_dir/logs."""

    def __init__(self, run_dir: Path, version: str, data_root: Path, tag: str = "live", net=None):
        self.run_dir, self.version, self.data_root, self.tag = Path(run_dir), version, Path(data_root), tag
        self.net = net  # a netns.NetPlan: every node in its own network namespace; None: all on 127.0.0.1
        self.conf_dir = self.run_dir / "conf" / tag
        self.log_dir = self.run_dir / "logs" / tag
        self.procs: dict[int, procs.Proc] = {}
        self.ports: dict[int, int] = {}
        self.started_at: dict[int, float] = {}
        self.zk = jars.zk_mode(version)
        self.meta = meta_node(version)
        self.nodes = nodes(version)

    # -- configuration -------------------------------------------------------------------------
    def data_dir(self, node: int) -> Path:
        return self.data_root / node_name(node)

    def addr(self, node: int) -> str:
        return self.net.addr(node) if self.net else "127.0.0.1"

    def configure(self) -> None:
        """Pick free loopback ports and write every node's server.properties and logging config."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # reserved under the lab's lock, below the ephemeral range: concurrent clusters never share a port
        ports = reserve_ports(1 + len(BROKERS))
        self.ports = dict(zip(self.nodes, ports))
        for node in self.nodes:
            (self.conf_dir / f"{node_name(node)}.properties").write_text(
                _props(self.node_conf(node, self.data_dir(node)))
            )
        (self.conf_dir / "log4j2.properties").write_text(LOG4J2)
        (self.conf_dir / "log4j.properties").write_text(LOG4J1)

    def node_conf(self, node: int, data: Path) -> dict:
        if self.zk:
            return self.zk_node_conf(node, data)
        voters = f"{CONTROLLER}@{self.addr(CONTROLLER)}:{self.ports.get(CONTROLLER, 9093)}"
        base = {
            "node.id": node,
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(data),
        }
        if node == CONTROLLER:
            port = self.ports.get(node, 9093)
            return {
                **base,
                "process.roles": "controller",
                "listeners": f"CONTROLLER://{self.addr(node)}:{port}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                **CONTROLLER_CONF,
            }
        port = self.ports.get(node, 9092)
        return {
            **base,
            "process.roles": "broker",
            "listeners": f"PLAINTEXT://{self.addr(node)}:{port}",
            "advertised.listeners": f"PLAINTEXT://{self.addr(node)}:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            **BROKER_CONF,
        }

    def zk_node_conf(self, node: int, data: Path) -> dict:
        """ZooKeeper mode: the ZooKeeper server's zoo.cfg, or a broker registered through zookeeper.connect."""
        if node == ZOOKEEPER:
            return {
                "dataDir": str(data),
                "clientPort": self.ports.get(node, 2181),
                **ZK_CONF,
                "clientPortAddress": self.addr(node),
            }
        port = self.ports.get(node, 9092)
        return {
            "broker.id": node,
            "zookeeper.connect": self.zk_connect(),
            "log.dirs": str(data),
            "listeners": f"PLAINTEXT://{self.addr(node)}:{port}",
            "advertised.listeners": f"PLAINTEXT://{self.addr(node)}:{port}",
            **ZK_BROKER_CONF,
        }

    def zk_connect(self) -> str:
        return f"{self.addr(ZOOKEEPER)}:{self.ports.get(ZOOKEEPER, 2181)}"

    def bootstrap(self) -> str:
        return ",".join(f"{self.addr(b)}:{self.ports[b]}" for b in BROKERS)

    # -- processes -----------------------------------------------------------------------------
    def java_argv(self, main: str, args: list[str]) -> list[str]:
        logcfg = (
            f"-Dlog4j2.configurationFile={self.conf_dir / 'log4j2.properties'}"
            if jars.major(self.version) >= 4
            else f"-Dlog4j.configuration=file:{self.conf_dir / 'log4j.properties'}"
        )
        return [jars.java_bin(self.version), *JVM_OPTS, logcfg, "-cp", jars.classpath(self.version), main, *args]

    def start(self, node: int) -> None:
        """Start one node (its JVM log appends to logs/<tag>/<node>.log)."""
        conf = self.conf_dir / f"{node_name(node)}.properties"
        log = self.log_dir / f"{node_name(node)}.log"
        main = "org.apache.zookeeper.server.ZooKeeperServerMain" if node == ZOOKEEPER else "kafka.Kafka"
        argv = (self.net.exec_prefix(node) if self.net else []) + self.java_argv(main, [str(conf)])
        self.procs[node] = procs.spawn(node_name(node), argv, str(log), MAX_LIFE_S)
        self.started_at[node] = time.time()

    def start_all(self, brokers=BROKERS) -> None:
        self.start(self.meta)
        if self.zk:
            self.wait_zookeeper()
        for b in brokers:
            self.start(b)

    def kill9(self, node: int) -> None:
        if node in self.procs:
            self.procs.pop(node).kill()

    def freeze(self, node: int) -> None:
        import signal

        self.procs[node].signal(signal.SIGSTOP)

    def thaw(self, node: int) -> None:
        import signal

        self.procs[node].signal(signal.SIGCONT)

    def kill_all(self) -> None:
        """kill -9 every node of this cluster (brokers first, then the controller or ZooKeeper)."""
        for node in sorted(self.procs, key=lambda n: n == self.meta):
            self.kill9(node)

    def stop_clean(self, timeout_s: float = 40.0) -> dict[int, bool]:
        """SIGTERM brokers (controlled shutdown), then the controller; SIGKILL what has not ended in time."""
        out = {}
        with ThreadPoolExecutor(len(BROKERS)) as ex:
            futs = {b: ex.submit(self.procs[b].terminate, timeout_s) for b in BROKERS if b in self.procs}
            for b, f in futs.items():
                out[b] = f.result()
                self.procs.pop(b, None)
        if self.meta in self.procs:
            out[self.meta] = self.procs.pop(self.meta).terminate(timeout_s / 2)
        return out

    def alive(self, node: int) -> bool:
        return node in self.procs and self.procs[node].alive()

    def log_text(self, node: int) -> str:
        p = self.log_dir / f"{node_name(node)}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    # -- ZooKeeper mode ------------------------------------------------------------------------
    def wait_zookeeper(self, timeout_s: float = 60) -> None:
        """Until ZooKeeper accepts connections on its client port (or has exited: an error)."""
        import socket

        def up():
            if not self.alive(ZOOKEEPER):
                raise RuntimeError("ZooKeeper exited at start")
            with socket.create_connection((self.addr(ZOOKEEPER), self.ports[ZOOKEEPER]), timeout=1):
                return True

        procs.wait_for("ZooKeeper listening", up, timeout_s, 0.3)

    def registered(self, broker: int) -> bool:
        """ZooKeeper mode: the broker's log says it has started (registered in ZooKeeper, serving)."""
        return f"[KafkaServer id={broker}] started" in self.log_text(broker)

    def zk_get(self, paths: list[str], timeout_s: int = 60) -> dict[str, str | None]:
        """The data of ZooKeeper znodes, read with the zookeeper jar's own shell (ZooKeeperMain, commands on
        its standard input, one JVM for all): path -> data, None where the node is absent."""
        script = "".join(f"get {p}\n" for p in paths) + "quit\n"
        argv = ["timeout", "--signal=KILL", str(timeout_s)] + self.java_argv(
            "org.apache.zookeeper.ZooKeeperMain", ["-server", self.zk_connect()]
        )
        # one stream: "Node does not exist" goes to stderr, data to stdout, and the answers pair by order
        r = subprocess.run(
            argv,
            input=script,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout_s + 10,
            check=False,
            start_new_session=True,
        )
        return parse_zk_shell(r.stdout, paths)


def parse_zk_shell(out: str, paths: list[str]) -> dict[str, str | None]:
    """Pair the answers of ``get`` commands with their paths: each answer is one data line, or a
    ``KeeperErrorCode = NoNode for <path>`` line (None), or another KeeperException (``error: <line>``: not
    read, e.g. ConnectionLoss); the lab reads only JSON znodes, and ZooKeeperMain's other lines (prompt,
    connection, log) do not start with '{'."""
    answers: list[str | None] = []
    for line in out.splitlines():
        line = line.strip()
        if "KeeperErrorCode = NoNode" in line or "Node does not exist" in line:
            answers.append(None)
        elif "KeeperErrorCode" in line:
            answers.append(f"error: {line}")
        elif line.startswith("{"):
            answers.append(line)
    return dict(zip(paths, answers + [None] * (len(paths) - len(answers))))


def _cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def template(version: str, timeout_s: int = 240) -> Path:
    """Formatted (empty) storage of every node for this version, made once and copied per run."""
    root = jars.CACHE / "templates" / version
    if (root / ".complete").exists():
        return root
    if jars.zk_mode(version):  # nothing to format: brokers write meta.properties, ZooKeeper its dataDir
        jars.ensure_jars(version)
        for node in nodes(version):
            (root / node_name(node)).mkdir(parents=True, exist_ok=True)
        (root / ".complete").write_text("ok\n")
        return root
    jars.ensure_jars(version)
    root.parent.mkdir(parents=True, exist_ok=True)
    # one builder at a time (two test workers or two campaigns may ask at once): the others wait, then use it
    with open(root.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / ".complete").exists():
            return root
        return _format_template(root, version, timeout_s)


def _format_template(root: Path, version: str, timeout_s: int) -> Path:
    """Format every node's storage of this version into ``root`` (the caller holds the template lock)."""
    tmp = root.with_name(version + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    c = Cluster(tmp, version, tmp / "data", tag="format")
    c.configure()
    cid = _cluster_id()

    def fmt(node: int) -> subprocess.CompletedProcess:
        conf = c.conf_dir / f"{node_name(node)}.properties"
        argv = ["timeout", "--signal=KILL", str(timeout_s)] + c.java_argv(
            "kafka.tools.StorageTool", ["format", "-t", cid, "-c", str(conf), "--ignore-formatted"]
        )
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s + 10, start_new_session=True, check=False
        )

    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(fmt, (CONTROLLER,) + BROKERS))
    bad = [r for r in results if r.returncode != 0]
    if bad:
        raise RuntimeError(f"kafka-storage format failed: {(bad[0].stdout + bad[0].stderr)[-1500:]}")
    shutil.rmtree(root, ignore_errors=True)
    (tmp / "data").rename(root)
    shutil.rmtree(tmp, ignore_errors=True)
    (root / "cluster.id").write_text(cid)
    (root / ".complete").write_text("ok\n")
    return root


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a directory exactly, keeping sparse files sparse (preallocated indexes)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--sparse=always", str(src), str(dst)], check=True, timeout=120)


def new_cluster(run_dir: Path, version: str, net=None) -> Cluster:
    """A cluster whose data dirs are fresh copies of the formatted template, configured and not started
    (in the network namespaces of net, a netns.NetPlan, when given)."""
    t = template(version)
    data = Path(run_dir) / "data"
    for node in nodes(version):
        copy_tree(t / node_name(node), data / node_name(node))
    c = Cluster(run_dir, version, data, net=net)
    c.configure()
    return c
