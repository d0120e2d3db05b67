"""The Kafka jars of one release, fetched by Maven (lab/pom.xml) into lab/.cache/kafka-<version>/libs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("KFLAB_CACHE", LAB / ".cache"))
NEWEST = "4.4.0"
JDK17 = "/usr/lib/jvm/java-17-openjdk-amd64"


class Unavailable(Exception):
    """Java, Maven or the jars cannot be had here (a reason to skip, not a failure)."""


def libs_dir(version: str) -> Path:
    return CACHE / f"kafka-{version}" / "libs"


def major(version: str) -> int:
    return int(version.split(".")[0])


def java_bin(version: str) -> str:
    """The java to run this Kafka with: JDK 17 where present (every 3.x/4.x runs there), else PATH's."""
    for home in (os.environ.get("KFLAB_JAVA_HOME"), JDK17, os.environ.get("JAVA_HOME")):
        if home and Path(home, "bin", "java").exists():
            return str(Path(home, "bin", "java"))
    j = shutil.which("java")
    if not j:
        raise Unavailable("no java on this machine")
    return j


def _complete(d: Path, version: str) -> bool:
    return d.is_dir() and (d / f"kafka_2.13-{version}.jar").exists() and (d / ".complete").exists()


def ensure_jars(version: str, timeout_s: int = 600) -> Path:
    """Return the libs dir of this version, running Maven (offline first, then online) when it is missing."""
    d = libs_dir(version)
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
        f"-Dkafka.version={version}",
        f"-Dlab.libs={d}",
        "dependency:copy-dependencies",
    ]
    if major(version) < 4:
        argv.insert(4, "-Dlegacy.logging=1")
    env = dict(os.environ, JAVA_HOME=str(Path(java_bin(version)).parents[1]))
    errors = []
    for extra in (["-o"], []):
        try:
            r = subprocess.run(
                argv[:1] + extra + argv[1:], capture_output=True, text=True, timeout=timeout_s, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            errors.append("maven timed out")
            continue
        if r.returncode == 0 and (d / f"kafka_2.13-{version}.jar").exists():
            (d / ".complete").write_text(version + "\n")
            return d
        errors.append((r.stdout + r.stderr)[-800:])
    raise Unavailable(f"Maven could not fetch Kafka {version}: {errors[-1].strip()}")


def classpath(version: str) -> str:
    return str(libs_dir(version)) + "/*"
