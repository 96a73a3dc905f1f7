#!/usr/bin/env bash
# Prove the 1M path (issue 8 item 3): prepare synth-768-cosine-1m (generate
# base, queries, warm-up and exact ground truth), check the bundle, then build
# diskann-sector and diskann-record (RocksDB) at R 64, L_build 100, alpha 1.2,
# 96-byte PQ, each step in its own process under /usr/bin/time -v.  Wall
# time, CPU time, peak RSS and exit status of every step, plus bytes on disk,
# go into summary.json and summary.md in the output directory.
#
#   scripts/prove-1m.sh                      1,000,000 vectors (the registry preset)
#   N=20000 scripts/prove-1m.sh              a small n to check the script itself
#   OUT=DIR THREADS=2 SHARE_GRAPH=1 ...      see below
#
# Environment:
#   N            vectors (default 1000000; 1000000 uses the preset synth-768-cosine-1m,
#                any other n the same generator, seed and shape with --n N)
#   OUT          output directory (default results/prove-1m/<UTC time>-n<N>): the
#                bundle, both indexes, the time -v logs and the summaries
#   DATA         an existing bundle to use instead of generating one (skips step 1)
#   SHARE_GRAPH  1: the record build reuses the sector build's PQ codebook and
#                Vamana graph (the build specs' artifact_dir), as `annlab run` can; default 0,
#                so each build time is a full build from the vectors
#   KEEP         1: keep the indexes (default 1); 0 deletes them after measuring
#
# The script stops at the first failing step (its log is printed) and the
# summary still records every step that ran.  Nothing is half-written: the
# summaries are written to temporary names and renamed.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000000}
case "$N" in ''|*[!0-9]*) echo "prove-1m: N='$N' is not a number of vectors" >&2; exit 2 ;; esac
[ "$N" -ge 1000 ] || { echo "prove-1m: N=$N: at least 1000 vectors (the queries and warm-up come from the same generator)" >&2; exit 2; }
OUT=${OUT:-results/prove-1m/$(date -u +%Y%m%dT%H%M%SZ)-n$N}
SHARE_GRAPH=${SHARE_GRAPH:-0}
KEEP=${KEEP:-1}
BIN=./annlab
[ -x "$BIN" ] || { echo "prove-1m: $BIN missing: run make first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "prove-1m: /usr/bin/time missing (Debian package 'time')" >&2; exit 2; }
command -v jq >/dev/null || { echo "prove-1m: jq missing (Debian package 'jq')" >&2; exit 2; }

# The commit the binary was built from: read now, not when the summary is
# written (the checkout may move while a long build runs).
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || COMMIT="$COMMIT (dirty)"
mkdir -p "$OUT/logs" "$OUT/index"
steps="$OUT/steps.jsonl"
: > "$steps"
ARTIFACT_DIR=
if [ "$SHARE_GRAPH" = 1 ]; then
  ARTIFACT_DIR="$OUT/index/artifacts"   # the build specs' artifact_dir
  mkdir -p "$ARTIFACT_DIR"
fi

# Seconds from time -v's "h:mm:ss" or "m:ss.ss".
to_seconds() { awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }' <<<"$1"; }

# run_step NAME CMD...: run CMD under time -v, append one JSON line to steps.jsonl.
run_step() {
  local name=$1; shift
  local log="$OUT/logs/$name.log" tv="$OUT/logs/$name.time"
  echo "prove-1m: $name: $*"
  local rc=0
  /usr/bin/time -v -o "$tv" "$@" >"$log" 2>&1 || rc=$?
  local wall user sys rss
  wall=$(to_seconds "$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tv")")
  user=$(sed -n 's/^\s*User time (seconds): //p' "$tv")
  sys=$(sed -n 's/^\s*System time (seconds): //p' "$tv")
  rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$tv")
  jq -cn --arg step "$name" --arg cmd "$*" --argjson rc "$rc" --argjson wall "${wall:-null}" \
     --argjson user "${user:-null}" --argjson sys "${sys:-null}" --argjson rss_kb "${rss:-null}" \
     '{step: $step, command: $cmd, exit_status: $rc, wall_seconds: $wall,
       cpu_seconds: (if $user == null then null else $user + $sys end),
       peak_rss_bytes: (if $rss_kb == null then null else $rss_kb * 1024 end)}' >> "$steps"
  if [ "$rc" -ne 0 ]; then
    echo "prove-1m: $name failed (exit $rc); its output:" >&2
    tail -20 "$log" >&2
    summarize
    exit 1
  fi
}

summarize() {
  local tmp="$OUT/summary.json.tmp.$$"
  jq -s --argjson n "$N" --arg bundle "$DATA" --arg share "$SHARE_GRAPH" \
     --arg commit "$COMMIT" \
     --arg cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" \
     --arg nproc "$(nproc)" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
     --arg mem "$(awk '/MemTotal/ {print $2 * 1024}' /proc/meminfo)" \
     '{n: $n, bundle: $bundle, share_graph: ($share == "1"), git_commit: $commit,
       machine: {cpu: $cpu, cpus: ($nproc | tonumber), mem_bytes: ($mem | tonumber), loadavg_at_end: $load},
       steps: .}' "$steps" > "$tmp"
  for ix in sector record; do
    if [ -f "$OUT/index/$ix/build.json" ]; then
      jq --arg ix "$ix" --argjson b "$(cat "$OUT/index/$ix/build.json")" \
         --argjson du "$(du -sb "$OUT/index/$ix" | cut -f1)" \
         '.indexes[$ix] = {build_json: $b, bytes_on_disk: $du}' "$tmp" > "$tmp.2" && mv "$tmp.2" "$tmp"
    fi
  done
  mv "$tmp" "$OUT/summary.json"
  local md="$OUT/summary.md.tmp.$$"
  {
    echo "# prove-1m: n = $N"
    echo
    echo "Machine: $(jq -r '.machine.cpu' "$OUT/summary.json"), $(nproc) CPUs; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Graph shared between the builds: $([ "$SHARE_GRAPH" = 1 ] && echo yes || echo no, each build starts from the vectors)."
    echo
    echo "| step | wall (s) | CPU (s) | peak RSS (MiB) | exit |"
    echo "|---|--:|--:|--:|--:|"
    jq -r '"| \(.step) | \(.wall_seconds // "-") | \(.cpu_seconds // "-" | if type == "number" then (. * 100 | round / 100) else . end) | \(if .peak_rss_bytes then (.peak_rss_bytes / 1048576 | round) else "-" end) | \(.exit_status) |"' "$steps"
    echo
    for ix in sector record; do
      [ -f "$OUT/index/$ix/build.json" ] && echo "- $ix index: $(du -sh "$OUT/index/$ix" | cut -f1) on disk"
    done
    echo
    echo "Commands: see summary.json (.steps[].command); logs in logs/."
  } > "$md"
  mv "$md" "$OUT/summary.md"
}

# 1. the bundle: generate (base, queries, warm-up, exact ground truth), then verify
if [ -z "${DATA:-}" ]; then
  if [ "$N" -eq 1000000 ]; then
    DATA="$OUT/synth-768-cosine-1m"
    run_step generate "$BIN" dataset generate --preset synth-768-cosine-1m --out "$DATA"
  else
    DATA="$OUT/synth-768-cosine-n$N"
    run_step generate "$BIN" dataset generate --n "$N" --dim 768 --metric cosine --seed 42 \
      --name "synth-768-cosine-n$N" --out "$DATA"
  fi
fi
run_step verify "$BIN" dataset verify "$DATA"

# 2. the two DiskANN layouts, same graph parameters
build_params='{"R": 64, "L_build": 100, "alpha": 1.2, "pq_bytes": 96}'
spec() { # spec ENGINE DIR BUILD_JSON
  jq -n --arg e "$1" --arg d "$(realpath "$DATA")" --arg i "$(realpath -m "$2")" --argjson b "$3" \
     --arg a "$ARTIFACT_DIR" \
     '{engine: $e, dataset_dir: $d, index_dir: $i, build: $b} + (if $a == "" then {} else {artifact_dir: $a} end)'
}
spec diskann-sector "$OUT/index/sector" "$build_params" > "$OUT/sector.spec.json"
spec diskann-record "$OUT/index/record" "$(jq -c '. + {kv: "rocksdb"}' <<<"$build_params")" > "$OUT/record.spec.json"
run_step build-diskann-sector "$BIN" build "$OUT/sector.spec.json"
run_step build-diskann-record "$BIN" build "$OUT/record.spec.json"

summarize
[ "$KEEP" = 1 ] || rm -rf "$OUT/index/sector" "$OUT/index/record"
cat "$OUT/summary.md"
echo "prove-1m: $OUT/summary.json"
