#!/usr/bin/env bash
# Run each cmocka test binary given as an argument; print each binary's
# result and one closing line "N passed, N failed, N skipped" counting test
# cases.  A case that calls cmocka's skip() is counted as skipped, never as
# passed; the skipped cases are named under their binary's line.
#
# ANNLAB_TEST_JOBS=N runs up to N binaries at once (default 1, in argument
# order); each binary's lines are printed when it ends, so with N > 1 they
# come in the order the binaries finish.  Every test makes its own
# temporary directories and cgroups, so binaries do not share state.
set -u
# third-party leaks on purpose-made corrupt input (see the file)
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
jobs=${ANNLAB_TEST_JOBS:-1}
case "$jobs" in
  ''|*[!0-9]*|0) echo "tests/run.sh: ANNLAB_TEST_JOBS=$jobs: want a whole number of at least 1" >&2; exit 2 ;;
esac
# With more than one binary at a time, each binary's OpenBLAS gets one
# thread (unless OPENBLAS_NUM_THREADS is set): its idle threads spin in
# sched_yield and take the core the other binary needs (the conformance
# suite at dims 100 and 101 side by side under ASan/UBSan: 164 and 164 s
# against 190 and 180 s, 2026-12-08).
if [ "$jobs" -gt 1 ] && [ -z "${OPENBLAS_NUM_THREADS:-}" ]; then export OPENBLAS_NUM_THREADS=1; fi
passed=0; failed=0; skipped=0; bad_bins=()
work=$(mktemp -d "${TMPDIR:-/tmp}/annlab-run.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
# sum of the N in the summary lines "[  TAG  ] N test(s)..." of $out
count() {
  printf '%s\n' "$out" | sed -n "s/^\[  $1 *\] \([0-9]*\) test.*/\1/p" | awk '{s+=$1} END {print s+0}'
}
# run binary $2 as job $1: its output, exit status and seconds into $work/$1.*
run_one() {
  local t0; t0=$(date +%s)
  "$2" > "$work/$1.out" 2>&1; echo $? > "$work/$1.rc"
  echo $(( $(date +%s) - t0 )) > "$work/$1.secs"
}
# count and print job $1's result (binary $2)
report() {
  local name; name=$(basename "$2")
  out=$(cat "$work/$1.out"); local rc secs; rc=$(cat "$work/$1.rc"); secs=$(cat "$work/$1.secs")
  local p f s
  p=$(count PASSED); f=$(count FAILED); s=$(count SKIPPED)
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed before its summary
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  if [ "$rc" -ne 0 ]; then
    bad_bins+=("$name"); printf 'FAIL %s (exit %d, %d s)\n' "$name" "$rc" "$secs"
    # the failing cases' own lines first (a sanitizer's report can fill the tail)
    printf '%s\n' "$out" | grep -E -B3 '^\[ +(ERROR|LINE|FAILED) +\]' | head -30
    printf -- '--- last lines:\n'; printf '%s\n' "$out" | tail -40
  else
    if [ "$s" -gt 0 ]; then
      printf 'ok   %-28s %3d passed, %d skipped  (%d s)\n' "$name" "$p" "$s" "$secs"
      # cmocka names each skipped case after its count line
      printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([^0-9].*\)/       skipped: \1/p' | sort -u
    else
      printf 'ok   %-28s %3d passed  (%d s)\n' "$name" "$p" "$secs"
    fi
  fi
}
bins=("$@")
declare -A job_of=()   # pid -> index into bins
next=0; running=0
while [ "$next" -lt ${#bins[@]} ] || [ "$running" -gt 0 ]; do
  while [ "$running" -lt "$jobs" ] && [ "$next" -lt ${#bins[@]} ]; do
    run_one "$next" "${bins[$next]}" & job_of[$!]=$next
    next=$((next + 1)); running=$((running + 1))
  done
  done_pid=
  wait -n -p done_pid
  [ -n "$done_pid" ] || { echo "tests/run.sh: wait -n returned no job" >&2; exit 2; }
  i=${job_of[$done_pid]}; unset "job_of[$done_pid]"; running=$((running - 1))
  report "$i" "${bins[$i]}"
done
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ ${#bad_bins[@]} -eq 0 ]
