#!/usr/bin/env bash
# The nightly regression run: run configs/nightly.json into a fresh run
# directory, then compare it with the committed baseline
# (results/baselines/nightly/: cells.jsonl and machine.json only).
#
#   scripts/nightly.sh            run + compare; exit 1 on a regression
#   scripts/nightly.sh --baseline run + replace the committed baseline
#
# The report (report.md) and the overlay plot (compare.png) land in the run
# directory, whose path is printed last.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${NIGHTLY_CONFIG:-configs/nightly.json}
base=results/baselines/nightly
run=results/nightly/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p results/nightly
./annlab run "$config" --out "$run"
if [ "${1:-}" = "--baseline" ]; then
  mkdir -p "$base"
  cp "$run/cells.jsonl" "$base/cells.jsonl.tmp" && mv "$base/cells.jsonl.tmp" "$base/cells.jsonl"
  cp "$run/machine.json" "$base/machine.json.tmp" && mv "$base/machine.json.tmp" "$base/machine.json"
  echo "nightly: baseline refreshed from $run (commit $base to keep it)"
  exit 0
fi
if [ ! -f "$base/cells.jsonl" ]; then
  echo "nightly: no baseline at $base/cells.jsonl; run 'make nightly-baseline' first" >&2
  exit 2
fi
status=0
./annlab compare "$base" "$run" --report "$run/report.md" --plot "$run/compare.png" || status=$?
echo "nightly: report $run/report.md, plot $run/compare.png"
echo "$run"
exit $status
