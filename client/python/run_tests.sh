#!/bin/sh
# run_tests.sh - the Python client's pytest suite as one program of tests/run.sh.
#
# Runs client/python/tests with /usr/bin/python3 -m pytest (extra arguments are
# pytest's), shows its report, then prints cmocka's summary lines from its
# counts, "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)." (errors count
# as failures, skips as neither), which run.sh adds to its closing line; it
# exits with pytest's status. SLUICE_BIN (default bin) and SLUICE_LIB (default
# build/rel/libsluice.so.1) are read relative to the repository, two levels
# above this file.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd) || exit 1
cd "$root" || exit 1
export SLUICE_BIN="${SLUICE_BIN:-bin}"
export SLUICE_LIB="${SLUICE_LIB:-build/rel/libsluice.so.1}"
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
/usr/bin/python3 -m pytest -p no:cacheprovider -q -rfE client/python/tests "$@" >"$out" 2>&1
rc=$?
cat "$out"
last=$(grep -E '(passed|failed|error|skipped|no tests ran)' "$out" | tail -1)
count() { echo "$last" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
passed=$(count passed)
failed=$(( $(count failed) + $(count 'errors?') ))
echo "[  PASSED  ] $passed test(s)."
[ "$failed" -eq 0 ] || echo "[  FAILED  ] $failed test(s), listed above."
exit $rc
