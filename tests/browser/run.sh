#!/usr/bin/env bash
# run.sh - the console's browser tests as one test program of tests/run.sh:
# node --test runs tests/browser/*.test.mjs (Debian's chromium through
# playwright-core, against the sluiced of $SLUICE_BIN) and this prints the
# cmocka-style "[  PASSED  ] N test(s)" and "[  FAILED  ] N test(s)" lines
# the runner counts. Screenshots of every page go to build/browser-shots/
# (build/san/browser-shots/ for the sanitized programs).
#
# usage: tests/browser/run.sh   (SLUICE_BIN as for the other tests; default bin)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
export SLUICE_BIN=${SLUICE_BIN:-bin}
case $SLUICE_BIN in
  */san/*) export SLUICE_SHOTS=${SLUICE_SHOTS:-build/san/browser-shots} ;;
  *) export SLUICE_SHOTS=${SLUICE_SHOTS:-build/browser-shots} ;;
esac
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
missing=""
command -v node >/dev/null 2>&1 || missing="node (Debian's nodejs)"
[ -x "${SLUICE_CHROMIUM:-/usr/bin/chromium}" ] || missing="$missing chromium"
[ -f tests/browser/node_modules/playwright-core/package.json ] || missing="$missing playwright-core (make browser-deps)"
if [ -n "$missing" ]; then
  echo "browser tests: missing$missing; make test installs them"
  echo "[  FAILED  ] 1 test(s), listed below:"
  exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
node --test --test-concurrency=1 --test-reporter=tap tests/browser/ >"$out" 2>&1
rc=$?
cat "$out"
pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out" | tail -1)
fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out" | tail -1)
pass=${pass:-0} fail=${fail:-0}
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
echo "[  PASSED  ] $pass test(s)."
if [ "$fail" -ne 0 ]; then
  echo "[  FAILED  ] $fail test(s), listed below:"
  grep '^not ok' "$out"
  exit 1
fi
exit 0
