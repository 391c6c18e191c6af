#!/usr/bin/env bash
# run.sh - run a libFuzzer target for a bounded time and print one summary line.
#
# usage: tests/fuzz/run.sh FUZZER SECONDS
#
# The seed corpus tests/fuzz/corpus/ is copied afresh into build/fuzz/work/corpus
# and the fuzzer writes the inputs it finds there, never into the repository.
# Findings (crash-*, leak-*, oom-*, timeout-*) go to build/fuzz/artifacts/ and
# are kept across runs; only those written by this run count. The full log is
# build/fuzz/work/fuzz.log. FUZZ_SEED=N repeats a run's mutations.
#
# Prints "fuzz: NAME: N executions in S s (N/s), N crashes (...)". Exits 0 when
# the run found nothing, 1 otherwise, after printing each finding's path, its
# bytes in hex and the stack from the log.
set -u
fuzzer=$1 secs=$2
here=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$fuzzer")
work=build/fuzz/work
arts=build/fuzz/artifacts
log=$work/fuzz.log

# One run at a time in this tree: a second "make test" waits instead of deleting
# the first one's work directory under it.
mkdir -p build/fuzz
if command -v flock >/dev/null 2>&1; then
  exec 9>build/fuzz/lock
  flock 9
fi
rm -rf "$work"
mkdir -p "$work/corpus" "$arts"
cp "$here"/corpus/* "$work/corpus/"
touch "$work/start"

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
seed=()
[ -n "${FUZZ_SEED:-}" ] && seed=(-seed="$FUZZ_SEED")
start=$(date +%s)
timeout -k 10 $((secs + 120)) "$fuzzer" "${seed[@]}" \
  -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -dict="$here/proto.dict" -artifact_prefix="$arts/" \
  "$work/corpus" >"$log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))

# Executions: the final stats, else libFuzzer's "Done N runs", else the last status line.
runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
[ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs in.*/\1/p' "$log" | tail -1)
[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\)[[:space:]].*/\1/p' "$log" | tail -1)
runs=${runs:-0}
secs_done=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
secs_done=${secs_done:-$elapsed}
rate=$(( runs / (secs_done > 0 ? secs_done : 1) ))
cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -1)
corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' "$log" | tail -1)
used_seed=$(sed -n 's/^INFO: Seed: \([0-9]*\).*/\1/p' "$log" | head -1)

found=$(find "$arts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
        -o -name 'timeout-*' \) -newer "$work/start" | sort)
crashes=$(printf '%s\n' "$found" | grep -c '/crash-')
others=$(printf '%s\n' "$found" | grep -cE '/(leak|oom|timeout)-')
extra=""
[ "$others" -gt 0 ] && extra=", $others leaks/ooms/timeouts"

printf 'fuzz: %s: %s executions in %s s (%s/s), %s crashes%s (cov %s, corpus %s, seed %s)\n' \
  "$name" "$runs" "$secs_done" "$rate" "$crashes" "$extra" "${cov:-?}" "${corp:-?}" "${used_seed:-?}"

if [ -z "$found" ] && [ "$rc" -eq 0 ]; then
  exit 0
fi
if [ -z "$found" ]; then
  echo "fuzz: $name exited with status $rc and left no finding; the end of $log:"
  tail -30 "$log" | sed 's/^/    | /'
  exit 1
fi
for f in $found; do
  echo "fuzz: FOUND $f ($(wc -c <"$f") bytes)"
  echo "    hex: $(od -An -tx1 -v "$f" | tr -d ' \n' | cut -c1-512)"
done
echo "fuzz: reproduce with: $fuzzer $(printf '%s\n' "$found" | head -1)"
# the report: from the sanitizer's or libFuzzer's first error line, at most 60 lines
awk '/^==[0-9]+==|runtime error:|^==[0-9]+== ERROR|deadly signal|^ERROR: libFuzzer/ { on = 1 } on' "$log" \
  | head -60 | sed 's/^/    | /'
exit 1
