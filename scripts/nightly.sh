#!/usr/bin/env bash
# The nightly regression run: each nightly config into a fresh run directory,
# then `annlab compare` against the baseline of that config
# (<baselines>/<config name>/: cells.jsonl, machine.json, config.json).
#
#   scripts/nightly.sh            run + compare; exit 1 on any regression
#   scripts/nightly.sh --baseline run + replace the baselines
#
# Environment:
#   NIGHTLY_CONFIGS          the configs (space-separated paths)
#   NIGHTLY_BASELINE_DIR     where the baselines live (default results/baselines/nightly,
#                            the ones committed; CI keeps its own, made on its runner)
#   NIGHTLY_MAKE_MISSING_BASELINE=1
#                            a config without a baseline gets this night's run as its
#                            baseline (said, nothing compared) instead of exit 2: the
#                            first night on a new runner
# `annlab compare` judges timings only between runs on the same machine
# (machine.json), so a baseline from another machine still gates recall,
# reads and peak RSS.  Each run directory gets report.md (the Markdown
# report to paste into a pull request) and compare.png (both runs' recall-QPS
# curves); summary.md concatenates the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
configs=${NIGHTLY_CONFIGS:-configs/nightly.json configs/nightly-glove.json configs/nightly-fashion.json}
baselines=${NIGHTLY_BASELINE_DIR:-results/baselines/nightly}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
summary=results/nightly/summary-$stamp.md
mkdir -p results/nightly
status=0

keep_as_baseline() { # run dir, baseline dir
  mkdir -p "$2"
  for f in cells.jsonl machine.json config.json; do
    cp "$1/$f" "$2/$f.tmp" && mv "$2/$f.tmp" "$2/$f"
  done
}

for config in $configs; do
  name=$(basename "$config" .json)
  run=results/nightly/$name-$stamp
  base=$baselines/$name
  ./annlab run "$config" --out "$run"
  if [ "${1:-}" = "--baseline" ]; then
    keep_as_baseline "$run" "$base"
    echo "nightly: baseline $base refreshed from $run (commit it to keep it)"
    continue
  fi
  if [ ! -f "$base/cells.jsonl" ]; then
    if [ "${NIGHTLY_MAKE_MISSING_BASELINE:-0}" = 1 ]; then
      keep_as_baseline "$run" "$base"
      echo "nightly: $name: no baseline at $base: this run is now the baseline (made on this machine); nothing compared tonight"
      printf '## %s\n\nFirst night on this runner: `%s` is now the baseline; nothing compared.\n\n' "$name" "$run" >> "$summary"
      continue
    fi
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
