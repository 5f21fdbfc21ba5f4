#!/bin/sh
# Run libFuzzer targets for a bounded time:
#
#	sh tests/fuzz/run.sh [-t SECONDS] [-j JOBS] build-fuzz/fuzz_X ...
#
# For each target fuzz_X:
#  1. every file of the seed corpus tests/fuzz/corpus_X/ and of the
#     regression corpus tests/fuzz/regress_X/ (inputs that once crashed) is
#     run once: a regression fails the run at once;
#  2. then it fuzzes for SECONDS (FUZZ_TIME, default 60) with the
#     dictionary tests/fuzz/X.dict or tests/fuzz/fuzz_X.dict when there is
#     one.  New inputs go to build-fuzz/corpus_X/ (kept between runs, never
#     into the tree); crashes to build-fuzz/artifacts/.
# Up to JOBS targets (FUZZ_JOBS, default 1) run at the same time.  Prints one
# line per target and "fuzz: N passed, M failed"; exits 1 if any target
# crashed, leaked, timed out or could not start.  A crash input is to be
# minimised (BIN -minimize_crash=1 FILE) and added to tests/fuzz/regress_X/.

FUZZ_TIME=${FUZZ_TIME:-60}
FUZZ_JOBS=${FUZZ_JOBS:-1}
OUT=${FUZZ_OUT:-build-fuzz}

while getopts t:j: opt; do
	case $opt in
	t) FUZZ_TIME=$OPTARG ;;
	j) FUZZ_JOBS=$OPTARG ;;
	*) echo "usage: sh tests/fuzz/run.sh [-t SECONDS] [-j JOBS] BIN..." >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	echo "usage: sh tests/fuzz/run.sh [-t SECONDS] [-j JOBS] BIN..." >&2
	exit 2
fi

# The fuzz build's UBSan reports are recoverable: make them fatal here.
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export UBSAN_OPTIONS

HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/artifacts" "$OUT/logs" || exit 1

# One target; its verdict goes to $OUT/logs/NAME.rc.
fuzz_one() {
	bin=$1
	name=$(basename "$bin")
	short=${name#fuzz_}
	log=$OUT/logs/$name.log
	seeds=$HERE/corpus_$short
	regress=$HERE/regress_$short
	work=$OUT/corpus_$short
	dict=
	for d in "$HERE/$short.dict" "$HERE/$name.dict"; do
		[ -f "$d" ] && dict="-dict=$d"
	done
	mkdir -p "$work"
	: >"$log"
	if [ ! -x "$bin" ]; then
		echo "$bin: not built" >>"$log"
		echo 1 >"$OUT/logs/$name.rc"
		return
	fi
	dirs=
	for d in "$seeds" "$regress"; do
		[ -d "$d" ] && dirs="$dirs $d"
	done
	# 1. Seeds and regressions, each once.
	if [ -n "$dirs" ]; then
		# shellcheck disable=SC2086
		if ! "$bin" -runs=0 -timeout=10 -rss_limit_mb=2048 $dirs \
		    >>"$log" 2>&1; then
			echo 1 >"$OUT/logs/$name.rc"
			return
		fi
	fi
	# 2. Fuzz: the seeds are read, new inputs go to the work corpus.
	# shellcheck disable=SC2086
	"$bin" -max_total_time="$FUZZ_TIME" -timeout=10 -rss_limit_mb=2048 \
	    -max_len=65536 -print_final_stats=1 $dict \
	    -artifact_prefix="$OUT/artifacts/$name-" "$work" $dirs \
	    >>"$log" 2>&1
	echo $? >"$OUT/logs/$name.rc"
}

report() {
	name=$(basename "$1")
	rc=$(cat "$OUT/logs/$name.rc" 2>/dev/null || echo 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
	    "$OUT/logs/$name.log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$OUT/logs/$name.log" | tail -n 1)
	if [ "$rc" = 0 ]; then
		echo "PASS $name (${execs:-0} runs, $cov, ${FUZZ_TIME}s)"
		return 0
	fi
	echo "FAIL $name (exit $rc); log $OUT/logs/$name.log:"
	grep -E 'ERROR|SUMMARY|Test unit written|==[0-9]+==|not built' \
	    "$OUT/logs/$name.log" | head -n 20 | sed 's/^/    /'
	return 1
}

passed=0
failed=0
running=""
n=0
for bin in "$@"; do
	rm -f "$OUT/logs/$(basename "$bin").rc"
	fuzz_one "$bin" &
	running="$running $!"
	n=$((n + 1))
	if [ "$n" -ge "$FUZZ_JOBS" ]; then
		wait $running
		running=""
		n=0
	fi
done
[ -n "$running" ] && wait $running

for bin in "$@"; do
	if report "$bin"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
