#!/usr/bin/env bash
# Smoke-run the scaled paper configs end to end on tiny data: each
# configs/paper/*-100k.json (or the configs named as arguments) is rewritten
# with jq onto the 10k preset of the same shape, 20 queries, 1 repeat and
# short QPS passes, then run with `annlab run`; its paper table is printed.
# It proves a config runs and its table renders; its figures are not the
# paper's (10k vectors, 20 queries, whatever load the machine has).
#
#   scripts/paper-smoke.sh                                   every -100k twin
#   scripts/paper-smoke.sh configs/paper/sector-gist-100k.json
#
# Environment: OUT (default results/paper-smoke/<UTC time>), QUERIES (20),
# DATASET (a prepared bundle directory to use instead of the 10k preset, e.g.
# a few real vectors imported with `annlab dataset import`).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/paper-smoke/$(date -u +%Y%m%dT%H%M%SZ)}
QUERIES=${QUERIES:-20}
mkdir -p "$OUT"
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(configs/paper/*-100k.json)
status=0
for cfg in "${configs[@]}"; do
  base=$(basename "$cfg" .json)
  small="$OUT/$base.smoke.json"
  # the 10k preset of the same shape: synth-768-cosine-cal5-*, -cal-*, synth-768-cosine-* or synth-960-l2-*
  jq --argjson q "$QUERIES" --arg dsdir "${DATASET:-}" '
    (if (.dataset | type) == "string" then .dataset else .dataset.path end) as $ds
    | .name = (.name + "-smoke")
    | .dataset = (if $dsdir != "" then {path: $dsdir}
                  elif ($ds | test("synth-960-l2")) then "synth-960-l2-10k"
                  elif ($ds | test("synth-768-cosine-cal5-")) then "synth-768-cosine-cal5-10k"
                  elif ($ds | test("synth-768-cosine-cal-")) then "synth-768-cosine-cal-10k"
                  else "synth-768-cosine-10k" end)
    | .queries = $q | .repeats = 1 | .warmup_queries = $q | .qps_min_seconds = 0.05
    | .timeout_s = 600 | .drop_caches = false
    | .engines |= map(if .engine == "ivfpq-record" then .build.nlist = 128 else . end)
    | .description = ("smoke of " + .name + " on 10k vectors: " + .description)' "$cfg" > "$small"
  echo "== $cfg -> $small"
  if ! ./annlab run "$small" --out "$OUT/$base" > "$OUT/$base.log" 2>&1; then
    echo "paper-smoke: $cfg failed; see $OUT/$base.log" >&2
    tail -5 "$OUT/$base.log" >&2
    status=1
    continue
  fi
  ./annlab table "$OUT/$base" | sed -n '1,/^# Generic tables/p' | sed '$d'
done
exit $status
