#!/usr/bin/env bash
# Run each cmocka test binary given as an argument; print each binary's
# result and one closing line "N passed, N failed" counting test cases.
set -u
# third-party leaks on purpose-made corrupt input (see the file)
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
passed=0; failed=0; bad_bins=()
for t in "$@"; do
  name=$(basename "$t")
  out=$("$t" 2>&1); rc=$?
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed before its summary
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$rc" -ne 0 ]; then
    bad_bins+=("$name"); printf 'FAIL %s (exit %d)\n' "$name" "$rc"; printf '%s\n' "$out" | tail -40
  else
    printf 'ok   %-28s %3d passed\n' "$name" "$p"
  fi
done
echo "${passed} passed, ${failed} failed"
[ ${#bad_bins[@]} -eq 0 ]
