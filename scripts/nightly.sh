#!/usr/bin/env bash
# The nightly regression run: each nightly config into a fresh run directory,
# then `annlab compare` against the committed baseline of that config
# (results/baselines/nightly/<config name>/: cells.jsonl and machine.json).
#
#   scripts/nightly.sh            run + compare; exit 1 on any regression
#   scripts/nightly.sh --baseline run + replace the committed baselines
#
# NIGHTLY_CONFIGS overrides the list (space-separated paths).  Each run
# directory gets report.md (the Markdown report to paste into a pull
# request) and compare.png (both runs' recall-QPS curves); summary.md
# concatenates the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
configs=${NIGHTLY_CONFIGS:-configs/nightly.json configs/nightly-glove.json configs/nightly-fashion.json}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
summary=results/nightly/summary-$stamp.md
mkdir -p results/nightly
status=0
for config in $configs; do
  name=$(basename "$config" .json)
  run=results/nightly/$name-$stamp
  base=results/baselines/nightly/$name
  ./annlab run "$config" --out "$run"
  if [ "${1:-}" = "--baseline" ]; then
    mkdir -p "$base"
    for f in cells.jsonl machine.json; do
      cp "$run/$f" "$base/$f.tmp" && mv "$base/$f.tmp" "$base/$f"
    done
    echo "nightly: baseline $base refreshed from $run (commit it to keep it)"
    continue
  fi
  if [ ! -f "$base/cells.jsonl" ]; then
    echo "nightly: no baseline at $base/cells.jsonl; run 'make nightly-baseline' first" >&2
    status=2
    continue
  fi
  rc=0
  ./annlab compare "$base" "$run" --report "$run/report.md" --plot "$run/compare.png" || rc=$?
  cat "$run/report.md" >> "$summary"
  echo >> "$summary"
  echo "nightly: $name: report $run/report.md, plot $run/compare.png"
  [ "$rc" -le "$status" ] || status=$rc
done
[ "${1:-}" = "--baseline" ] || echo "nightly: summary $summary"
exit $status
