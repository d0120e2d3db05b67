#!/usr/bin/env bash
# Installs what kforensics needs on a fresh machine, idempotently:
# Java 17 (Spark needs it) from Debian packages when `java` is missing,
# then a virtualenv in .venv with kforensics and its test extras.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "== installing Java 17 (needed by Spark)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing Chromium (the report tests open the report in a real browser)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -m pip install -q -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import kforensics' || { echo "setup: kforensics did not install" >&2; exit 1; }
# bytecode of the package, once, as a regular install has it: an editable install under PYTHONDONTWRITEBYTECODE
# compiles every module again at every start (about 0.3 s of each command, test and Spark worker)
.venv/bin/python -m compileall -q kforensics lab/kflab >/dev/null || echo "setup: bytecode not compiled" >&2
# Kafka lab (tests/lab): the newest Kafka's jars from Maven Central, cached in ~/.m2 and lab/.cache
if command -v mvn >/dev/null 2>&1; then
  (cd lab && ../.venv/bin/python -c 'from kflab import jars; print(jars.ensure_jars(jars.NEWEST))') \
    || echo "setup: Kafka jars not fetched; the live lab tests (tests/lab/test_live.py) will skip"
fi
# compile the kernels once (numba), and link them as a native library so that commands start without numba;
# a machine without a C compiler driver keeps numba's kernels (slower start, same results)
KFORENSICS_KERNELS=native .venv/bin/python -c 'from kforensics.log import kernels; kernels.get()' 2>/dev/null \
  || echo "setup: native kernels not built (no C compiler?); numba's kernels will be used" >&2
# Object storage (docs/object-storage.md): s3proxy, a real S3-compatible server the tests start on loopback
# (tests/objectstore), and Hadoop's S3A connector for the Hadoop inside pyspark (Spark on s3a://), both from Maven
# Central into scripts/s3/.cache (git-ignored)
if command -v mvn >/dev/null 2>&1; then
  S3PROXY=2.6.0
  [ -f "scripts/s3/.cache/s3proxy/s3proxy-$S3PROXY-jar-with-dependencies.jar" ] \
    || mvn -q dependency:copy -Dartifact="org.gaul:s3proxy:$S3PROXY:jar:jar-with-dependencies" \
         -DoutputDirectory=scripts/s3/.cache/s3proxy >/dev/null \
    || echo "setup: s3proxy not fetched; the object-store tests (tests/objectstore) will skip"
  HADOOP=$(.venv/bin/python -c 'from kforensics.spark.session import hadoop_version; print(hadoop_version() or "")' \
           2>/dev/null || true)
  if [ -n "$HADOOP" ] && [ ! -f "scripts/s3/.cache/s3a-$HADOOP/hadoop-aws-$HADOOP.jar" ]; then
    mvn -q -f scripts/s3/pom.xml -Dhadoop.version="$HADOOP" dependency:copy-dependencies >/dev/null \
      || echo "setup: Hadoop's S3A connector not fetched; spark on s3a:// needs --conf spark.jars.packages"
  fi
fi
# an archive of Spark's classes that a local session's driver JVM maps (kforensics/spark/class_archive.py): it
# starts seconds sooner; without one it starts as before
.venv/bin/python -m kforensics.spark.class_archive \
  || echo "setup: no archive of Spark's classes; local Spark sessions start without it" >&2
