#!/usr/bin/env bash
# Run each cmocka test binary given as an argument; print each binary's
# result and one closing line "N passed, N failed, N skipped" counting test
# cases.  A case that calls cmocka's skip() is counted as skipped, never as
# passed; the skipped cases are named under their binary's line.
set -u
# third-party leaks on purpose-made corrupt input (see the file)
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
passed=0; failed=0; skipped=0; bad_bins=()
# sum of the N in the summary lines "[  TAG  ] N test(s)..." of $out
count() {
  printf '%s\n' "$out" | sed -n "s/^\[  $1 *\] \([0-9]*\) test.*/\1/p" | awk '{s+=$1} END {print s+0}'
}
for t in "$@"; do
  name=$(basename "$t")
  t0=$(date +%s)
  out=$("$t" 2>&1); rc=$?
  secs=$(( $(date +%s) - t0 ))
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
done
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ ${#bad_bins[@]} -eq 0 ]
