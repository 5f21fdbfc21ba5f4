#!/bin/sh
# bench/profile.sh -- where ingressd and replica-hello spend their time.
#
#   sh bench/profile.sh                    # perf, then callgrind
#   PROFILER=perf DURATION=10 sh bench/profile.sh
#
# perf: ingressd (workers 1) and its replica-hello under
#   perf record -F 999 --call-graph dwarf -p INGRESSD,REPLICA
# while `wrk -t1 -c100 -dDURATIONs --latency /hello` runs; then the same
# while curl uploads UPLOAD_BYTES (Content-Length) to replica-sleep ?sink,
# and while it downloads them from ?source.  Reports per process: shares by
# library, top symbols, its own functions, inclusive (children) shares.
# callgrind: ingressd under valgrind --tool=callgrind --trace-children=yes
# (so the replicas too); after a warm-up the counters are dumped and reset,
# then `ab -k -n CG_N -c 50 /hello` runs and the second dump holds that
# load alone: instructions (Ir) per request and the top functions.
#
# Output: $BUILD/bench/profile/ (summary.md, the reports, the raw data).
# Environment: PROFILER (perf, callgrind or both: default both), DURATION
# (10), UPLOAD_BYTES (1073741824), CG_N (20000), PERF_TOP (25), BUILD.
# Only 127.0.0.1; every process started is stopped by its pid.

set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build}
PROFILER=${PROFILER:-both}
DURATION=${DURATION:-10}
UPLOAD_BYTES=${UPLOAD_BYTES:-1073741824}
CG_N=${CG_N:-20000}
PERF_TOP=${PERF_TOP:-25}
OUT=$BUILD/bench/profile
PY="${PYTHON:-python3} bench/bench.py"
PIDS="" TMP="" INGRESSD_PID="" KIDS=""

log() { printf 'profile: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

for c in wrk ab curl timeout pgrep; do
	command -v "$c" >/dev/null 2>&1 || die "$c not found (make deps)"
done
for f in ingressd replica-hello replica-sleep; do
	[ -x "$BUILD/$f" ] || die "$BUILD/$f missing (make all)"
done

alive() {
	local st
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ]
}

stop_pid() {
	local i=0
	alive "$1" || { wait "$1" 2>/dev/null; return 0; }
	kill -TERM "$1" 2>/dev/null
	while alive "$1" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	alive "$1" && kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# ingressd first (it stops its replicas), then anything left of ours.
stop_all() {
	local p
	for p in $PIDS; do stop_pid "$p"; done
	for p in $KIDS; do
		alive "$p" && grep -q 'replica-' "/proc/$p/cmdline" 2>/dev/null &&
		    kill -KILL "$p" 2>/dev/null
	done
	PIDS="" KIDS="" INGRESSD_PID=""
}

cleanup() {
	trap - EXIT INT TERM
	stop_all
	[ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# WRAPPER...: start ingressd (under WRAPPER, e.g. valgrind), wait for
# /hello; sets INGRESSD_PID, HELLO_PID, SLEEP_PID.
start_ingressd() {
	local i=0 ports
	ports=$($PY ports 2)
	P=$(echo "$ports" | sed -n 1p) A=$(echo "$ports" | sed -n 2p)
	mkdir -p "$TMP/run"
	$PY ingressd-conf --port "$P" --admin "$A" --runtime-dir "$TMP/run" \
	    --replica "$BUILD/replica-hello" --sleep-replica \
	    "$BUILD/replica-sleep" --out "$TMP/conf.json" || return 1
	"$@" "$BUILD/ingressd" -c "$TMP/conf.json" >"$OUT/ingressd.log" 2>&1 &
	INGRESSD_PID=$!
	PIDS="$INGRESSD_PID"
	while [ $i -lt 300 ]; do
		alive "$INGRESSD_PID" || return 1
		[ "$(curl -s --max-time 5 "http://127.0.0.1:$P/hello")" = \
		    "Hello world!" ] &&
		    curl -sf --max-time 5 -o /dev/null \
		    "http://127.0.0.1:$P/sleep?ms=0" && break
		sleep 0.1
		i=$((i + 1))
	done
	[ $i -lt 300 ] || return 1
	HELLO_PID=$($PY replica-pids "127.0.0.1:$A" --deployment hello)
	SLEEP_PID=$($PY replica-pids "127.0.0.1:$A" --deployment sleep)
	KIDS=$(pgrep -P "$INGRESSD_PID" | tr '\n' ' ')
	log "ingressd $INGRESSD_PID, replica-hello $HELLO_PID," \
	    "replica-sleep $SLEEP_PID"
}

# NAME PIDS CMD...: perf record the pids while CMD runs.
perf_during() {
	local name="$1" pids="$2" rec
	shift 2
	perf record -F 999 --call-graph dwarf,16384 -o "$OUT/perf-$name.data" \
	    -p "$pids" >"$OUT/perf-$name.log" 2>&1 &
	rec=$!
	sleep 0.5
	"$@" >"$OUT/load-$name.txt" 2>&1
	kill -INT "$rec" 2>/dev/null
	wait "$rec"
}

# NAME: three reports of one recording, every share of all its samples
# (bench.py profile-summary splits them by process): by process and
# library; by process, library and symbol (self); by process and symbol
# (inclusive, from the dwarf call chains).  perf report's --comm filter
# drops some libraries from a --sort dso report here: hence no filters.
perf_report() {
	set -- -i "$OUT/perf-$1.data" --stdio -g none "$OUT/perf-$1"
	perf report "$1" "$2" "$3" "$4" "$5" --no-children --sort comm,dso \
	    2>/dev/null | clean >"$6-dso.txt"
	perf report "$1" "$2" "$3" "$4" "$5" --no-children \
	    --sort comm,dso,symbol --percent-limit 0.02 2>/dev/null |
	    clean >"$6-self.txt"
	perf report "$1" "$2" "$3" "$4" "$5" --children --sort comm,symbol \
	    --percent-limit 0.5 2>/dev/null | clean >"$6-children.txt"
}

clean() {
	grep -v '^#' | grep -v '^$' | sed 's/ *- *- *$//'
}

run_perf() {
	local url up
	command -v perf >/dev/null 2>&1 || { log "no perf: skipped"; return 1; }
	start_ingressd || die "ingressd did not start (see $OUT/ingressd.log)"
	url="http://127.0.0.1:$P"
	perf_during hello "$INGRESSD_PID,$HELLO_PID" timeout -k 5 \
	    $((DURATION + 30)) wrk -t1 -c100 -d"${DURATION}s" --latency \
	    "$url/hello"
	truncate -s "$UPLOAD_BYTES" "$TMP/upload.bin"
	perf_during upload "$INGRESSD_PID,$SLEEP_PID" timeout -k 5 300 \
	    curl -sS -o /dev/null -w '%{http_code} %{size_upload} %{time_total}\n' \
	    -X POST -T "$TMP/upload.bin" -H 'Expect:' \
	    "$url/sleep?sink=1000000000000"
	perf_during download "$INGRESSD_PID,$SLEEP_PID" timeout -k 5 300 \
	    curl -sS -o /dev/null -w '%{http_code} %{size_download} %{time_total}\n' \
	    "$url/sleep?source=$UPLOAD_BYTES&rate=0"
	stop_all
	for n in hello upload download; do
		perf_report "$n"
	done
}

# PID: dump (and reset) its callgrind counters; wait for the file.
cg_dump() {
	callgrind_control -d "$1" >/dev/null 2>&1
}

run_callgrind() {
	local url f
	command -v valgrind >/dev/null 2>&1 || { log "no valgrind"; return 1; }
	rm -f "$OUT"/callgrind.out.*
	start_ingressd valgrind --tool=callgrind --trace-children=yes \
	    --callgrind-out-file="$OUT/callgrind.out.%p" ||
	    die "ingressd under callgrind did not start"
	url="http://127.0.0.1:$P"
	# Warm-up, then dump: what follows is the load alone.
	ab -k -n 1000 -c 50 "$url/hello" >/dev/null 2>&1
	for p in $INGRESSD_PID $HELLO_PID; do cg_dump "$p"; done
	timeout -k 5 600 ab -k -n "$CG_N" -c 50 "$url/hello" \
	    >"$OUT/load-callgrind.txt" 2>&1
	for p in $INGRESSD_PID $HELLO_PID; do cg_dump "$p"; done
	sleep 1
	for p in ingressd:$INGRESSD_PID replica-hello:$HELLO_PID; do
		f=$(ls "$OUT/callgrind.out.${p#*:}".* 2>/dev/null | sort -t. -k4 -n |
		    tail -n 1)
		[ -n "$f" ] || { log "no callgrind dump for $p"; continue; }
		callgrind_annotate --threshold=100 --inclusive=no "$f" 2>/dev/null |
		    head -n $((PERF_TOP + 40)) >"$OUT/callgrind-${p%%:*}.txt"
		callgrind_annotate --threshold=100 --inclusive=yes "$f" 2>/dev/null |
		    head -n $((PERF_TOP + 40)) \
		    >"$OUT/callgrind-${p%%:*}-inclusive.txt"
		echo "${p%%:*} $f" >>"$OUT/callgrind-files.txt"
	done
	stop_all
}

mkdir -p "$OUT" || die "cannot create $OUT"
rm -f "$OUT"/*.txt "$OUT"/*.data "$OUT"/*.log
TMP=$(mktemp -d /tmp/ingressd-profile.XXXXXX) || die "mktemp failed"
cut -d' ' -f1-3 /proc/loadavg >"$OUT/loadavg.start"
sha256sum "$BUILD/ingressd" "$BUILD/replica-hello" "$BUILD/replica-sleep" \
    >"$OUT/binaries.start" 2>/dev/null
case $PROFILER in
perf)		run_perf ;;
callgrind)	run_callgrind ;;
both)		run_perf; run_callgrind ;;
*)		die "PROFILER: perf, callgrind or both" ;;
esac
$PY profile-summary --dir "$OUT" --build "$BUILD" --requests "$CG_N" \
    --duration "$DURATION" --upload-bytes "$UPLOAD_BYTES" --top "$PERF_TOP" \
    >"$OUT/summary.md"
log "summary: $OUT/summary.md"
