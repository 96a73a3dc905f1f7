#!/usr/bin/env bash
# The whole 1M reproduction from nothing (issue 18 item 5): the seven paper
# configs of configs/paper/ at 1M, one after the other, each into its own
# fixed run directory, so the script is resumable: run it again after an
# interruption (Ctrl-C, a reboot, a failed cell) and it goes on where it
# stopped (`annlab run --resume`: finished cells are kept, transient
# failures retried).  Before each config it prints where it is and
# `annlab run --dry-run`'s estimate of what that config still needs (from
# this machine's earlier runs of it; what was never timed here is named,
# not guessed).  Datasets are prepared on demand by `annlab run`; indexes
# go to the shared build cache (index_root), so configs that use the same
# build build it once.
#
#   scripts/reproduce-1m.sh                  the real datasets (Cohere 1M, GIST 1M)
#   STANDIN=1 scripts/reproduce-1m.sh        the generated stand-ins (synth-768-cosine-cal5-1m,
#                                            the Cohere stand-in fitted to all five recall figures
#                                            published on the real set, its rows in topic order;
#                                            synth-960-l2-1m): what this machine can run offline
#                                            (earlier: synth-768-cosine-cal-doc-1m until the
#                                            2026-12-06 afternoon, synth-768-cosine-cal-1m before)
#   ONLY="cohere-effort sector-gist" ...     a subset, in the order given
#   SHARE_BUILDS=1                           the document-database search configs (effort,
#                                            memcap, memcap-matched, rss-1m: no index_root of
#                                            their own) use
#                                            cohere-build's index root, so the six 1M indexes
#                                            are built once instead of twice (54 min
#                                            less here); run cohere-build first, e.g.
#                                            ONLY="cohere-build cohere-rss-1m cohere-effort
#                                            cohere-memcap", so that its build table times
#                                            every build from the vectors
#   OUT=DIR                                  where the runs go (default results/reproduce-1m[-standin])
#   DRY=1                                    print the plan and the estimates only
#   ANNLAB_BIN=PATH                          the annlab program (default ./annlab)
#
# A config whose run finished with no transient failure has
# OUT/<config>/DONE (the run directory, time, commit); delete it to run that
# config again.  Cells recorded oom, timeout, error or partial are results
# of the run (the memcap table expects oom rows) and do not hold it back.  Exit status: 0 when every
# config finished, 1 at the first config whose run failed (its log is
# printed; run the script again to resume), 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${ANNLAB_BIN:-./annlab}   # the program (default: the one `make` links at the root)
[ -x "$BIN" ] || { echo "reproduce-1m: $BIN missing: run make first" >&2; exit 2; }
command -v jq >/dev/null || { echo "reproduce-1m: jq missing (Debian package 'jq')" >&2; exit 2; }
STANDIN=${STANDIN:-0}
case "$STANDIN" in 0|1) ;; *) echo "reproduce-1m: STANDIN='$STANDIN': 0 or 1" >&2; exit 2 ;; esac
SHARE_BUILDS=${SHARE_BUILDS:-0}
case "$SHARE_BUILDS" in 0|1) ;; *) echo "reproduce-1m: SHARE_BUILDS='$SHARE_BUILDS': 0 or 1" >&2; exit 2 ;; esac
BUILD_ROOT=$(jq -r '.index_root' configs/paper/cohere-build.json)
ALL="cohere-effort cohere-memcap cohere-memcap-matched cohere-rss-1m cohere-build sector-cohere sector-gist"
ONLY=${ONLY:-$ALL}
for c in $ONLY; do
  [ -f "configs/paper/$c.json" ] || { echo "reproduce-1m: ONLY names '$c': no configs/paper/$c.json (known: $ALL)" >&2; exit 2; }
done
OUT=${OUT:-results/reproduce-1m$([ "$STANDIN" = 1 ] && echo -standin)}
mkdir -p "$OUT"

total=$(echo $ONLY | wc -w)
i=0
t_start=$(date +%s)
for c in $ONLY; do
  i=$((i + 1))
  dir="$OUT/$c"
  mkdir -p "$dir"
  if [ -f "$dir/DONE" ]; then
    echo "[$i/$total] $c: done earlier ($(cat "$dir/DONE"))"
    continue
  fi
  cfg="configs/paper/$c.json"
  if [ "$STANDIN" = 1 ] || [ "$SHARE_BUILDS" = 1 ]; then
    # the same config, changed only as asked: on the generated stand-ins (dataset and run
    # name) and/or with the build table's index root (configs without a root of their own)
    cfg="$dir/config.json"
    jq --arg standin "$STANDIN" --arg share "$SHARE_BUILDS" --arg root "$BUILD_ROOT" '
        (if $standin == "1" then
           .dataset |= (if . == "cohere-768-cosine-1m" then "synth-768-cosine-cal5-1m"
                        elif . == "gist-960-euclidean" then "synth-960-l2-1m" else . end)
           | .name += "-standin"
         else . end)
        | (if $share == "1" and .index_root == null then .index_root = $root else . end)' \
        "configs/paper/$c.json" > "$cfg.tmp"
    mv "$cfg.tmp" "$cfg"
  fi
  run="$dir/run"
  echo "[$i/$total] $c ($(date -u +%H:%M:%S) UTC, $(( ($(date +%s) - t_start) / 60 )) min into this invocation): $cfg -> $run"
  "$BIN" run "$cfg" --out "$run" --dry-run 2>&1 | grep -E '^(estimated time|[0-9]+ cells)' | sed 's/^/    /' || true
  [ "${DRY:-0}" = 1 ] && continue
  resume=()
  [ -f "$run/config.json" ] && resume=(--resume)
  log="$dir/run.log"
  if ! "$BIN" run "$cfg" --out "$run" "${resume[@]}" 2>&1 | tee -a "$log"; then
    echo "reproduce-1m: $c failed; its log: $log (run the script again to resume)" >&2
    exit 1
  fi
  # a cell that failed transiently (a full disk, a lock) is run again by the next --resume
  transient=$(grep -Eo '; [0-9]+ transient' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  if [ "${transient:-0}" != 0 ]; then
    echo "reproduce-1m: $c: $transient cell(s) failed transiently; run the script again to retry them" >&2
    exit 1
  fi
  echo "$run $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" > "$dir/DONE.tmp"
  mv "$dir/DONE.tmp" "$dir/DONE"
  echo "[$i/$total] $c: finished: $run/tables.md"
done
[ "${DRY:-0}" = 1 ] || echo "reproduce-1m: every config finished under $OUT ($(( ($(date +%s) - t_start) / 60 )) min)"
