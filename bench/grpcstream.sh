#!/bin/sh
# bench/grpcstream.sh -- `make bench SUITE=grpcstream`: one long gRPC server
# stream through ingressd against its HTTP/1.1 streaming rate, in the same
# run, and a slow gRPC reader (issue 14).  bench/run.sh execs this when
# SUITE=grpcstream.
#
# One ingressd (1 worker), one listener for h2c and HTTP/1.1:
#   /sleep                  -> build/replica-sleep
#   /ingressd.example.Echo/ -> build/replica-grpc-echo
# Loads, for each of ROUNDS rounds, back to back, with one client
# (CLIENT: h2load -n1 -c1, the default, or curl):
#   h1    HTTP/1.1 (h2load --h1): GET /sleep?source=BYTES&rate=0 (the
#         STREAM=down source of bench/run.sh: Content-Length, as fast as
#         credit goes)
#   grpc  h2c: POST /ingressd.example.Echo/Source, the request message
#         BYTES as 8 bytes big-endian; the answer is BYTES in 64 KiB
#         messages, then trailers with grpc-status 0
# each checked (2xx, the byte count; curl also grpc-status), with
# ingressd's VmRSS sampled every 50 ms and the CPU of ingressd, the
# replica and the client.  h2load does not read trailers: the warm-up, a
# 64 MiB call through curl, must end with grpc-status 0.  Then
#   slow  a raw h2c client reading the same call at SLOW_RATE bytes/s for
#         SLOW_SECS (its windows reopened only as it reads), then CANCEL;
#         ingressd's VmRSS sampled, and how far the replica ran ahead
#         (Source's own count, SourceStats)
# bench/grpcstream.py runs each and writes $OUT/results.md and
# results.json; $OUT/raw/ keeps what curl printed.
#
# Environment: QUICK (1 round of 256 MiB, slow 3 s), BYTES (1073741824),
# ROUNDS (3), CLIENT (h2load), SLOW_RATE (20000000), SLOW_SECS (10),
# SLOW_BYTES (BYTES), BUILD, PYTHON.  Only 127.0.0.1; every process started here is stopped by
# its pid.

set -u
cd "$(dirname "$0")/.." || exit 1

if [ "${QUICK:-0}" = 1 ]; then
	d_bytes=268435456 d_rounds=1 d_slow=3
else
	d_bytes=1073741824 d_rounds=3 d_slow=10
fi
BUILD=${BUILD:-build}
BYTES=${BYTES:-$d_bytes}
ROUNDS=${ROUNDS:-$d_rounds}
SLOW_RATE=${SLOW_RATE:-20000000}
SLOW_SECS=${SLOW_SECS:-$d_slow}
SLOW_BYTES=${SLOW_BYTES:-$BYTES}
CLIENT=${CLIENT:-h2load}
OUT=$BUILD/bench-grpcstream
RAW=$OUT/raw
PYTHON=${PYTHON:-python3}
PY="$PYTHON bench/grpcstream.py"

INGRESSD_PID="" REPLICA_PIDS="" TMP=""

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

for v in BYTES ROUNDS SLOW_RATE SLOW_SECS SLOW_BYTES; do
	eval "x=\$$v"
	case $x in ''|*[!0-9]*|0) die "$v must be a positive integer: '$x'" ;;
	esac
done
case $CLIENT in h2load|curl) ;; *) die "CLIENT: h2load or curl" ;; esac
for c in curl "$CLIENT" "$PYTHON" pgrep timeout; do
	command -v "$c" >/dev/null 2>&1 || die "$c not found (make deps;" \
	    "h2load: apt-get install nghttp2-client)"
done
for f in ingressd replica-sleep replica-grpc-echo; do
	[ -x "$BUILD/$f" ] || die "$BUILD/$f missing: run make"
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
	while alive "$1" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	alive "$1" && kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# The replica pids: ingressd's children running KIND's binary.
replica_pid() {
	local c
	for c in $(pgrep -P "$INGRESSD_PID"); do
		grep -q "replica-$1" "/proc/$c/cmdline" 2>/dev/null && echo "$c"
	done
}

cleanup() {
	local p
	trap - EXIT INT TERM
	alive "$INGRESSD_PID" && REPLICA_PIDS=$(pgrep -P "$INGRESSD_PID")
	stop_pid "$INGRESSD_PID"
	for p in $REPLICA_PIDS; do
		alive "$p" && grep -q 'replica-\(sleep\|grpc-echo\)' \
		    "/proc/$p/cmdline" 2>/dev/null && kill -KILL "$p"
	done
	[ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# KIND N: a whole call of N bytes, checked; for the probes and warm-up.
probe() {
	local got
	case $1 in
	h1)	got=$(curl -s --max-time 30 -o /dev/null -w '%{http_code} %{size_download}' \
		    "$URL_H1$2&rate=0") ;;
	grpc)	$PY msg --bytes "$2" --out "$TMP/probe.msg"
		got=$(curl -s --max-time 30 --http2-prior-knowledge -X POST \
		    --data-binary @"$TMP/probe.msg" -H 'te: trailers' \
		    -H 'content-type: application/grpc' -D "$TMP/probe.head" \
		    -o /dev/null -w '%{http_code}' "$URL_GRPC")
		grep -qi '^grpc-status: *0' "$TMP/probe.head" ||
		    got="$got, no grpc-status 0" ;;
	esac
	echo "$got"
}

mkdir -p "$RAW" || die "cannot create $RAW"
rm -f "$RAW"/*
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg.start"
TMP=$(mktemp -d /tmp/ingressd-bench-grpcstream.XXXXXX) || die "mktemp failed"
set -- $($PY ports 2)
[ $# -eq 2 ] || die "could not find 2 free ports"
P_I=$1 P_IA=$2
URL_H1="http://127.0.0.1:$P_I/sleep?source="
URL_GRPC="http://127.0.0.1:$P_I/ingressd.example.Echo/Source"

mkdir -p "$TMP/run"
$PY conf --port "$P_I" --admin "$P_IA" --runtime-dir "$TMP/run" \
    --sleep "$(realpath "$BUILD/replica-sleep")" \
    --grpc "$(realpath "$BUILD/replica-grpc-echo")" --out "$TMP/conf.json"
"$BUILD/ingressd" -c "$TMP/conf.json" >"$RAW/ingressd.log" 2>&1 &
INGRESSD_PID=$!
i=0
while :; do
	alive "$INGRESSD_PID" || die "ingressd exited at start ($RAW/ingressd.log)"
	[ "$(probe h1 12)" = "200 12" ] && [ "$(probe grpc 12)" = 200 ] && break
	[ $i -ge 50 ] && die "ingressd: no answer to the probes" \
	    "(h1: '$(probe h1 12)', grpc: '$(probe grpc 12)')"
	sleep 0.2
	i=$((i + 1))
done
SLEEP_PID=$(replica_pid sleep)
GRPC_PID=$(replica_pid grpc-echo)
log "ingressd pid $INGRESSD_PID, replica-sleep $SLEEP_PID," \
    "replica-grpc-echo $GRPC_PID; $ROUNDS rounds of $BYTES bytes"
$PY msg --bytes "$BYTES" --out "$TMP/big.msg"
sha256sum "$BUILD/ingressd" "$BUILD/replica-sleep" \
    "$BUILD/replica-grpc-echo" >"$RAW/binaries.start" 2>/dev/null
cat >"$RAW/params" <<EOF
BYTES=$BYTES
ROUNDS=$ROUNDS
SLOW_RATE=$SLOW_RATE
SLOW_SECS=$SLOW_SECS
SLOW_BYTES=$SLOW_BYTES
CLIENT=$CLIENT
git=$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src replica 2>/dev/null || echo '+changes')
EOF

# Warm-up, not measured: the replica connections and their buffers; and
# the check h2load cannot make, a long call's grpc-status.
[ "$(probe h1 67108864)" = "200 67108864" ] || die "h1 warm-up failed"
got=$(probe grpc 67108864)
[ "$got" = 200 ] || die "gRPC warm-up (64 MiB through curl): $got"

r=1
while [ $r -le "$ROUNDS" ]; do
	for kind in h1 grpc; do
		alive "$INGRESSD_PID" || die "ingressd exited during the bench"
		if [ $kind = h1 ]; then
			url="$URL_H1$BYTES&rate=0" bp=$SLEEP_PID
		else
			url=$URL_GRPC bp=$GRPC_PID
		fi
		$PY stream --kind $kind --round $r --bytes "$BYTES" --url "$url" \
		    --client "$CLIENT" \
		    --msg "$TMP/big.msg" --proxy-pids "$INGRESSD_PID" \
		    --backend-pids "$bp" --out "$RAW/runs.jsonl" \
		    --raw "$RAW/$kind.$r.txt"
	done
	r=$((r + 1))
done
timeout -k 5 $((SLOW_SECS + 60)) $PY slow --port "$P_I" --bytes "$SLOW_BYTES" \
    --rate "$SLOW_RATE" --secs "$SLOW_SECS" --proxy-pids "$INGRESSD_PID" \
    --out "$RAW/runs.jsonl"
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg.end"

$PY report --raw "$RAW" --md "$OUT/results.md" --json "$OUT/results.json"
st=$?
log "results: $OUT/results.md, raw outputs: $RAW/"
exit $st
