#!/usr/bin/env bash
# run.sh - run every test program and print one closing line: "N passed, N failed".
#
# usage: tests/run.sh TESTDIR:BINDIR [TESTDIR:BINDIR ...]
# Each TESTDIR holds cmocka test programs; each runs with SLUICE_BIN=BINDIR (the
# sluiced/sluice it drives) and a 300 s limit. A program that dies without a
# cmocka summary counts as one failure. Output of failing programs is shown.
#
# SLUICE_TEST_JOBS programs run at once (default 2): every test owns its
# directory, endpoints and ports, and the suite must pass with other work
# beside it anyway, so two at a time only shortens the wait (most of a test's
# time is spent waiting on timers, not on a core). Lines print as programs end.
set -u
jobs_max=${SLUICE_TEST_JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# run_one T BDIR VARIANT ID: runs program T, writes its line (and on failure
# its output's tail) to $tmp/ID.line and "passed failed" to $tmp/ID.count.
run_one() {
  local t=$1 bdir=$2 variant=$3 id=$4 name start rc ms secs p f
  name=$(basename "$t")
  start=$(date +%s%N)
  SLUICE_BIN="$bdir" CMOCKA_MESSAGE_OUTPUT=stdout timeout -k 10 300 "$t" >"$tmp/$id.out" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  secs="$((ms / 1000)).$(( (ms % 1000) / 100 ))s"
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$tmp/$id.out" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$tmp/$id.out" | tail -1)
  p=${p:-0} f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$f" -eq 0 ]; then
    printf 'ok    %-28s %-4s %3d tests  %8s\n' "$name" "$variant" "$p" "$secs" >"$tmp/$id.line"
  else
    { printf 'FAIL  %-28s %-4s %3d passed, %d failed (exit %d)  %8s\n' "$name" "$variant" "$p" "$f" "$rc" "$secs"
      sed 's/^/    | /' "$tmp/$id.out" | tail -80; } >"$tmp/$id.line"
  fi
  echo "$p $f" >"$tmp/$id.count"
  cat "$tmp/$id.line"
}

n=0
for pair in "$@"; do
  tdir=${pair%%:*} bdir=${pair#*:}
  variant=$(basename "$(dirname "$tdir")")
  for t in "$tdir"/test_*; do
    [ -x "$t" ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    n=$((n + 1))
    run_one "$t" "$bdir" "$variant" "$n" &
  done
done
wait
passed=0 failed=0
for i in $(seq 1 "$n"); do
  if [ -e "$tmp/$i.count" ]; then
    read -r p f <"$tmp/$i.count"
  else
    p=0 f=1 # the runner itself was killed
  fi
  passed=$((passed + p)) failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
