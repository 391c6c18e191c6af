#!/usr/bin/env bash
# run.sh - run every test program and print one closing line: "N passed, N failed".
#
# usage: tests/run.sh TESTDIR:BINDIR [TESTDIR:BINDIR ...]
# Each TESTDIR holds cmocka test programs; each runs with SLUICE_BIN=BINDIR (the
# sluiced/sluice it drives) and a 300 s limit. A program that dies without a
# cmocka summary counts as one failure. Output of failing programs is shown.
set -u
passed=0 failed=0 status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for pair in "$@"; do
  tdir=${pair%%:*} bdir=${pair#*:}
  variant=$(basename "$(dirname "$tdir")")
  for t in "$tdir"/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    start=$(date +%s%N)
    SLUICE_BIN="$bdir" CMOCKA_MESSAGE_OUTPUT=stdout timeout -k 10 300 "$t" >"$tmp/out" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    secs="$((ms / 1000)).$(( (ms % 1000) / 100 ))s"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$tmp/out" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$tmp/out" | tail -1)
    p=${p:-0} f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)) failed=$((failed + f))
    if [ "$f" -eq 0 ]; then
      printf 'ok    %-28s %-4s %3d tests  %8s\n' "$name" "$variant" "$p" "$secs"
    else
      status=1
      printf 'FAIL  %-28s %-4s %3d passed, %d failed (exit %d)  %8s\n' "$name" "$variant" "$p" "$f" "$rc" "$secs"
      sed 's/^/    | /' "$tmp/out" | tail -80
    fi
  done
done
echo "$passed passed, $failed failed"
exit $status
