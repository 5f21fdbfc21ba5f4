#!/bin/sh
# Run Check unit-test binaries: sh tests/run-unit.sh BIN...
#
# Prints each binary's Check summary line ("NN%: Checks: T, Failures: F,
# Errors: E"), the full output of any binary that failed, and at the end
# "unit: N passed, M failed" summed over all binaries.  Exits non-zero if
# any check failed or a binary crashed, hung or printed no summary.
# Check's fork mode is kept: one crashing test does not hide the others.

UNIT_TIMEOUT=${UNIT_TIMEOUT:-300}
passed=0
failed=0
bad=0
out=$(mktemp "${TMPDIR:-/tmp}/run-unit.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT INT TERM

if [ $# -eq 0 ]; then
	echo "usage: sh tests/run-unit.sh BIN..." >&2
	exit 2
fi

for bin in "$@"; do
	name=$(basename "$bin")
	if command -v timeout >/dev/null 2>&1; then
		timeout "$UNIT_TIMEOUT" "$bin" >"$out" 2>&1
	else
		"$bin" >"$out" 2>&1
	fi
	rc=$?
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$out" | tail -n 1)
	if [ -z "$summary" ]; then
		echo "$name: no Check summary (exit status $rc)"
		cat "$out"
		failed=$((failed + 1))
		bad=1
		continue
	fi
	echo "$name: $summary"
	counts=$(echo "$summary" | sed -E 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/')
	total=${counts%% *}
	nf=${counts#* }
	ne=${nf#* }
	nf=${nf%% *}
	nfail=$((nf + ne))
	passed=$((passed + total - nfail))
	failed=$((failed + nfail))
	if [ "$nfail" -ne 0 ] || [ "$rc" -ne 0 ]; then
		bad=1
		[ "$nfail" -eq 0 ] && echo "$name: exit status $rc" &&
		    failed=$((failed + 1))
		cat "$out"
	fi
done

echo "unit: $passed passed, $failed failed"
exit $bad
