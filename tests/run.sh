#!/usr/bin/env bash
# run.sh - run every test program and print one closing line: "N passed, N failed".
#
# usage: tests/run.sh TESTDIR[:BINDIR] ... [make:TARGET ...]
# A TESTDIR is a build's tests directory (build/rel/tests), whose unit/ and
# e2e/ programs both run, or one of those two alone (build/rel/tests/unit).
# A make:TARGET runs `make TARGET` as one more program (the short campaigns:
# make:crash-ci), which counts as one test, passed when it exits 0; its
# lines are shown either way (what it checked and its seed).
# An end-to-end program runs with SLUICE_BIN=BINDIR (the sluiced, sluice and
# sluice-sink it drives); a unit program runs with SLUICE_BIN an empty
# directory, whatever BINDIR says, so that a unit test which started one of
# our programs would fail. Each program has a 300 s limit (600 s in a
# sanitized build, which runs two to five times slower). A program that
# dies without a cmocka summary counts as one failure. Output of failing
# programs is shown.
#
# SLUICE_TEST_JOBS programs run at once (default 3): every test owns its
# directory, endpoints and ports, and the suite must pass with other work
# beside it anyway, so three at a time only shortens the wait (most of a
# test's time is spent waiting on timers, not on a core). Lines print as
# programs end.
set -u
jobs_max=${SLUICE_TEST_JOBS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nobin="$tmp/no-programs" # SLUICE_BIN of the unit tests: empty
mkdir "$nobin"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# run_one T BDIR VARIANT ID: runs program T, writes its line (and on failure
# its output's tail) to $tmp/ID.line and "passed failed" to $tmp/ID.count.
run_one() {
  local t=$1 bdir=$2 variant=$3 id=$4 name start rc ms secs p f
  name=$(basename "$(dirname "$t")")/$(basename "$t")
  [ "$variant" = make ] && name=$t
  start=$(date +%s%N)
  local limit=300
  [ "$variant" = san ] && limit=600
  if [ "$variant" = make ]; then
    timeout -k 10 "$limit" make --no-print-directory -s "${t#make:}" >"$tmp/$id.out" 2>&1
  else
    SLUICE_BIN="$bdir" CMOCKA_MESSAGE_OUTPUT=stdout timeout -k 10 "$limit" "$t" >"$tmp/$id.out" 2>&1
  fi
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  secs="$((ms / 1000)).$(( (ms % 1000) / 100 ))s"
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$tmp/$id.out" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$tmp/$id.out" | tail -1)
  p=${p:-0} f=${f:-0}
  if [ "$variant" = make ]; then # a campaign: one test, its exit status
    p=1 f=0
    [ "$rc" -eq 0 ] || p=0 f=1
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$f" -eq 0 ]; then
    { printf 'ok    %-28s %-4s %3d tests  %8s\n' "$name" "$variant" "$p" "$secs"
      if [ "$variant" = make ]; then sed 's/^/    | /' "$tmp/$id.out" | tail -20; fi; } >"$tmp/$id.line"
  else
    { printf 'FAIL  %-28s %-4s %3d passed, %d failed (exit %d)  %8s\n' "$name" "$variant" "$p" "$f" "$rc" "$secs"
      sed 's/^/    | /' "$tmp/$id.out" | tail -80; } >"$tmp/$id.line"
  fi
  echo "$p $f" >"$tmp/$id.count"
  cat "$tmp/$id.line"
}

# The programs that take longest (about 30 to 100 s each here, the
# campaigns among them) start first, the sanitized build's before the plain
# one's, so that the run does not end on one of them alone: the rest fill in
# beside them.
slow_first="make:ha-campaign-ci test_bench test_sinkflow make:crash-ci test_python test_browser make:powerloss-ci
            make:fuzz-ci test_backup test_room test_ha_snap test_tags"

# rank T VARIANT: where program T starts: its place in slow_first (two
# digits, then 0 for the sanitized build and 1 for the plain one), or 999
# for every other program.
rank() {
  local name i=0 s
  name=$(basename "$1")
  for s in $slow_first; do
    if [ "$s" = "$name" ]; then
      [ "$2" = san ] && printf '%02d0' "$i" || printf '%02d1' "$i"
      return
    fi
    i=$((i + 1))
  done
  printf '999'
}

tab=$(printf '\t')
list=() # "RANK ORDER TEST SLUICE_BIN VARIANT", tab-separated, one per program
for pair in "$@"; do
  case $pair in
    make:*)
      list+=("$(rank "$pair" make)$tab$(printf '%05d' "${#list[@]}")$tab$pair$tab-${tab}make")
      continue ;;
  esac
  tdir=${pair%%:*} bdir=${pair#*:}
  [ "$bdir" = "$pair" ] && bdir="$nobin" # no BINDIR: unit tests only
  tdir=${tdir%/}
  case $tdir in
    */unit | */e2e) dirs=$tdir ;;
    *) dirs="$tdir/unit $tdir/e2e" ;;
  esac
  variant=${tdir%/tests*}
  variant=$(basename "$variant") # build/rel/tests/unit -> rel
  for d in $dirs; do
    case $d in */unit) sb=$nobin ;; *) sb=$bdir ;; esac
    for t in "$d"/test_*; do
      [ -x "$t" ] || continue
      list+=("$(rank "$t" "$variant")$tab$(printf '%05d' "${#list[@]}")$tab$t$tab$sb$tab$variant")
    done
  done
done
n=0
while IFS=$tab read -r _ _ t sb variant; do
  [ -n "$t" ] || continue
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  n=$((n + 1))
  run_one "$t" "$sb" "$variant" "$n" &
done < <(printf '%s\n' "${list[@]}" | sort)
wait
passed=0 failed=0
if [ "$n" -eq 0 ]; then
  echo "run.sh: no test programs in: $*"
  failed=1
fi
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
