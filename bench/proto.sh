#!/bin/sh
# bench/proto.sh -- `make bench SUITE=h2`, `SUITE=tls` or `SUITE="h2 tls"`:
# ingressd's HTTP/2, gRPC and TLS front edges against nginx and HAProxy,
# in the same run (issues 14 and 15).  bench/run.sh execs this when SUITE
# names one of them.
#
# Targets (one worker / thread each):
#   ingressd  build/ingressd: /hello -> build/replica-hello, gRPC
#             /ingressd.example.Echo/ -> build/replica-grpc-echo
#   nginx     nginx (bench/nginx/h2-proxy.conf) -> the origin nginx
#   haproxy   HAProxy (bench/haproxy/h2.cfg) -> the origin nginx
# The origin (bench/nginx/h2-origin.conf) answers /hello over HTTP/1.1 and
# a gRPC-shaped reply (200, application/grpc, an empty message, trailer
# grpc-status 0) over h2c.
#
# Loads (tools), for each round the targets run back to back:
#   h2      h2load -c H2_CONNS -m H2_STREAMS -n H2_N   GET /hello over h2c
#   grpc    the same with -d MSG (5 bytes: an empty message) and gRPC's
#           headers, POST /ingressd.example.Echo/Unary over h2c
#   h1      wrk -t1 -c CONNS -d DURATION  GET /hello, HTTP/1.1 keep-alive
#   tls     wrk -t1 -c CONNS -d DURATION  https://.../hello, keep-alive
#   tlsnew  the same with -H 'Connection: close': a full handshake each
# SUITE=h2 runs "h2 grpc h1", SUITE=tls "tls tlsnew h1"; TOOLS overrides.
# Around every run, utime+stime of the proxy and of its backend (the
# replicas, the origin nginx) from /proc/PID/stat: CPU µs per request; the
# client's from GNU time.  TICKETS=0: no session tickets on any of the
# three, so every tlsnew connection is a full handshake.
# bench/proto.py parses, prints, checks the issues' targets and writes
# $OUT/results.md and results.json; $OUT/raw/ keeps what the tools printed.
#
# Only 127.0.0.1; every process started here is stopped by its pid.

set -u
cd "$(dirname "$0")/.." || exit 1

if [ "${QUICK:-0}" = 1 ]; then
	d_rounds=1 d_dur=2 d_n=50000
else
	d_rounds=3 d_dur=4 d_n=200000
fi
SUITE=${SUITE:-h2 tls}
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-$d_rounds}
DURATION=${DURATION:-$d_dur}
CONNS=${CONNS:-100}
H2_N=${H2_N:-$d_n}
H2_CONNS=${H2_CONNS:-10}
H2_STREAMS=${H2_STREAMS:-100}
TARGETS=${TARGETS:-ingressd nginx haproxy}
INSTALL=${INSTALL:-1}
TICKETS=${TICKETS:-1}
d_tools=""
for s in $SUITE; do
	case $s in
	h2)	d_tools="$d_tools h2 grpc" ;;
	tls)	d_tools="$d_tools tls tlsnew" ;;
	*)	printf 'bench: SUITE: unknown %s (h2, tls; grpcstream runs alone)\n' \
		    "$s" >&2; exit 2 ;;
	esac
done
TOOLS=${TOOLS:-$d_tools h1}
OUT=$BUILD/bench-proto
RAW=$OUT/raw
NGINX=/usr/sbin/nginx
PYTHON=${PYTHON:-python3}
PY="$PYTHON bench/proto.py"
GRPC_PATH=/ingressd.example.Echo/Unary

PIDS="" INGRESSD_PID="" ORIGIN_PID="" NGINX_PID="" HAPROXY_PID=""
REPLICA_PIDS="" TMP=""

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

for v in ROUNDS DURATION CONNS H2_N H2_CONNS H2_STREAMS; do
	eval "x=\$$v"
	case $x in ''|*[!0-9]*|0) die "$v must be a positive integer: '$x'" ;;
	esac
done
case $TICKETS in 0) NGX_TICKETS=off HA_NO_TICKETS=no-tls-tickets ;;
1) NGX_TICKETS=on HA_NO_TICKETS="" ;;
*) die "TICKETS must be 0 or 1: '$TICKETS'" ;; esac
# The client's CPU too: against a server that lets it resume, a client
# does less per handshake.  GNU time prints it after the tool's output.
CLIENT_TIME=""
[ -x /usr/bin/time ] && CLIENT_TIME="/usr/bin/time -f client-cpu:%U:%S"
for t in $TOOLS; do
	case $t in h2|grpc|h1|tls|tlsnew) ;; *) die "TOOLS: unknown '$t'" ;; esac
done
for t in $TARGETS; do
	case $t in ingressd|nginx|haproxy) ;; *) die "TARGETS: unknown '$t'" ;;
	esac
done
for c in wrk h2load curl "$PYTHON" timeout pgrep "$NGINX"; do
	command -v "$c" >/dev/null 2>&1 || die "$c not found (make deps;" \
	    "h2load: apt-get install nghttp2-client)"
done
for f in ingressd replica-hello replica-grpc-echo tls/server.pem \
    tls/server.key; do
	[ -r "$BUILD/$f" ] || die "$BUILD/$f missing: run make"
done
CERT=$(realpath "$BUILD/tls/server.pem") KEY=$(realpath "$BUILD/tls/server.key")

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

descendants() {
	local c
	for c in $(pgrep -P "$1"); do
		echo "$c"
		descendants "$c"
	done
}

cleanup() {
	local p
	trap - EXIT INT TERM
	alive "$INGRESSD_PID" && REPLICA_PIDS=$(descendants "$INGRESSD_PID")
	for p in $PIDS; do stop_pid "$p"; done
	for p in $REPLICA_PIDS; do
		alive "$p" && grep -q 'replica-\(hello\|grpc-echo\)' \
		    "/proc/$p/cmdline" 2>/dev/null && kill -KILL "$p"
	done
	[ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail_target() {
	log "$1 FAILED: $2"
	printf '%s\t%s\n' "$1" "$2" >>"$RAW/failed.tsv"
}

need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	[ "$INSTALL" = 1 ] || return 1
	log "installing $2 (Debian) for the bench"
	INGRESSD_DEPS_EXTRA="$2" sh scripts/deps.sh >&2 || return 1
	command -v "$1" >/dev/null 2>&1
}

# TEMPLATE OUT DIR: fill in the @NAME@s of the templates.
fill() {
	sed -e "s|@PREFIX@|$3|g" -e "s|@PORT@|$4|g" -e "s|@H1_PORT@|$5|g" \
	    -e "s|@TLS_PORT@|$6|g" -e "s|@UPSTREAM_PORT@|$P_ORIGIN|g" \
	    -e "s|@GRPC_PORT@|$P_OGRPC|g" -e "s|@CERT@|$CERT|g" \
	    -e "s|@KEY@|$KEY|g" -e "s|@PEM@|$TMP/haproxy.pem|g" \
	    -e "s|@TICKETS@|$NGX_TICKETS|g" -e "s|@NO_TICKETS@|$HA_NO_TICKETS|g" \
	    -e 's|@GRPC_MSG@|\x00\x00\x00\x00\x00|g' "$1" >"$2"
}

# The URL target T is measured at with tool TOOL.
url_of() {
	local p
	case $1.$2 in
	ingressd.*)	p=$P_I ;;	# one listener: h2c and HTTP/1.1
	nginx.h1)	p=$P_N1 ;;
	nginx.*)	p=$P_N ;;
	haproxy.h1)	p=$P_H1 ;;
	haproxy.*)	p=$P_H ;;
	esac
	case $2 in
	tls|tlsnew)
		case $1 in ingressd) p=$P_IT ;; nginx) p=$P_NT ;;
		haproxy) p=$P_HT ;; esac
		echo "https://127.0.0.1:$p/hello" ;;
	grpc)	echo "http://127.0.0.1:$p$GRPC_PATH" ;;
	*)	echo "http://127.0.0.1:$p/hello" ;;
	esac
}

proxy_pids() {
	case $1 in
	ingressd)	echo "$INGRESSD_PID" ;;
	nginx)		echo "$NGINX_PID" $(pgrep -P "$NGINX_PID") ;;
	haproxy)	echo "$HAPROXY_PID" ;;
	esac
}

backend_pids() {
	case $1 in
	ingressd)	descendants "$INGRESSD_PID" | tr '\n' ' ' ;;
	*)		echo "$ORIGIN_PID" $(pgrep -P "$ORIGIN_PID") ;;
	esac
}

ticks() {
	local p n t=0
	for p in "$@"; do
		alive "$p" || { echo NA; return; }
		n=$(sed 's/^.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')
		t=$((t + n))
	done
	echo "$t"
}

# The three probes every target must pass before it is measured.
check_target() {
	local t="$1" body
	body=$(curl -s --max-time 2 --http2-prior-knowledge "$(url_of "$t" h2)")
	[ "$body" = "Hello world!" ] || { echo "h2c /hello: '$body'"; return 1; }
	body=$(curl -s --max-time 2 "$(url_of "$t" h1)")
	[ "$body" = "Hello world!" ] || { echo "HTTP/1.1 /hello: '$body'"; return 1; }
	body=$(curl -sk --max-time 2 --http1.1 "$(url_of "$t" tls)")
	[ "$body" = "Hello world!" ] || { echo "https /hello: '$body'"; return 1; }
	body=$(curl -s --max-time 2 --http2-prior-knowledge -X POST \
	    --data-binary @"$TMP/msg" -H 'content-type: application/grpc' \
	    -H 'te: trailers' "$(url_of "$t" grpc)" | od -An -c | tr -d ' \n')
	[ "$body" = '\0\0\0\0\0' ] || { echo "gRPC Unary: '$body'"; return 1; }
}

wait_target() {
	local t="$1" pid="$2" i=0 why
	while [ $i -lt 50 ]; do
		alive "$pid" || { fail_target "$t" "exited at start"; return 1; }
		why=$(check_target "$t") && return 0
		sleep 0.2
		i=$((i + 1))
	done
	fail_target "$t" "$why"
	return 1
}

start_origin() {
	mkdir -p "$TMP/origin"
	fill bench/nginx/h2-origin.conf "$TMP/origin/nginx.conf" "$TMP/origin" \
	    "$P_ORIGIN" 0 0
	"$NGINX" -p "$TMP/origin/" -c "$TMP/origin/nginx.conf" \
	    -e "$TMP/origin/error.log" >"$RAW/origin.log" 2>&1 &
	ORIGIN_PID=$!
	PIDS="$ORIGIN_PID $PIDS"
}

start_ingressd() {
	mkdir -p "$TMP/ingressd/run"
	$PY ingressd-conf --port "$P_I" --tls-port "$P_IT" --admin "$P_IA" \
	    --cert "$CERT" --key "$KEY" --runtime-dir "$TMP/ingressd/run" \
	    --tickets "$TICKETS" \
	    --hello "$(realpath "$BUILD/replica-hello")" \
	    --grpc "$(realpath "$BUILD/replica-grpc-echo")" \
	    --out "$TMP/ingressd/bench.json"
	"$BUILD/ingressd" -c "$TMP/ingressd/bench.json" >"$RAW/ingressd.log" 2>&1 &
	INGRESSD_PID=$!
	PIDS="$INGRESSD_PID $PIDS"
	wait_target ingressd "$INGRESSD_PID"
}

start_nginx() {
	mkdir -p "$TMP/nginx"
	fill bench/nginx/h2-proxy.conf "$TMP/nginx/nginx.conf" "$TMP/nginx" \
	    "$P_N" "$P_N1" "$P_NT"
	"$NGINX" -p "$TMP/nginx/" -c "$TMP/nginx/nginx.conf" \
	    -e "$TMP/nginx/error.log" >"$RAW/nginx.log" 2>&1 &
	NGINX_PID=$!
	PIDS="$NGINX_PID $PIDS"
	wait_target nginx "$NGINX_PID"
}

start_haproxy() {
	need haproxy haproxy || { fail_target haproxy "not installed"; return 1; }
	cat "$CERT" "$KEY" >"$TMP/haproxy.pem"
	mkdir -p "$TMP/haproxy"
	fill bench/haproxy/h2.cfg "$TMP/haproxy/h2.cfg" "$TMP/haproxy" \
	    "$P_H" "$P_H1" "$P_HT"
	haproxy -db -f "$TMP/haproxy/h2.cfg" >"$RAW/haproxy.log" 2>&1 &
	HAPROXY_PID=$!
	PIDS="$HAPROXY_PID $PIDS"
	wait_target haproxy "$HAPROXY_PID"
}

run_one() {
	local target="$1" tool="$2" round="$3" url pp bp p0 p1 b0 b1 rc load
	local out="$RAW/$target.$tool.$round.txt"
	url=$(url_of "$target" "$tool")
	pp=$(proxy_pids "$target")
	bp=$(backend_pids "$target")
	load=$(cut -d' ' -f1 /proc/loadavg)
	p0=$(ticks $pp)
	b0=$(ticks $bp)
	case $tool in
	h2)	$CLIENT_TIME timeout -k 5 300 h2load -c "$H2_CONNS" -m "$H2_STREAMS" \
		    -n "$H2_N" "$url" ;;
	grpc)	$CLIENT_TIME timeout -k 5 300 h2load -c "$H2_CONNS" -m "$H2_STREAMS" \
		    -n "$H2_N" -d "$TMP/msg" -H 'content-type: application/grpc' \
		    -H 'te: trailers' "$url" ;;
	h1|tls)	$CLIENT_TIME timeout -k 5 $((DURATION + 30)) wrk -t1 -c"$CONNS" \
		    -d"${DURATION}s" --latency "$url" ;;
	tlsnew)	$CLIENT_TIME timeout -k 5 $((DURATION + 30)) wrk -t1 -c"$CONNS" \
		    -d"${DURATION}s" --latency -H 'Connection: close' "$url" ;;
	esac >"$out" 2>&1
	rc=$?
	p1=$(ticks $pp)
	b1=$(ticks $bp)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$tool" \
	    "$round" "$rc" "$p0" "$p1" "$b0" "$b1" "$out" "$load" \
	    >>"$RAW/runs.tsv"
	log "round $round $tool $target: rc $rc, $(grep -Eo \
	    '(^Requests/sec: *[0-9.]+|finished in [^,]*, [0-9.]+ req/s)' "$out" |
	    grep -Eo '[0-9.]+( req/s)?$' | tr -d ' req/s') req/s"
}

mkdir -p "$RAW" || die "cannot create $RAW"
rm -f "$RAW"/*.txt "$RAW"/*.tsv "$RAW"/*.log "$RAW/params" "$RAW"/loadavg.*
: >"$RAW/runs.tsv"
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg.start"
sha256sum "$BUILD/ingressd" "$BUILD/replica-hello" \
    "$BUILD/replica-grpc-echo" >"$RAW/binaries.start" 2>/dev/null
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

TMP=$(mktemp -d /tmp/ingressd-bench-proto.XXXXXX) || die "mktemp failed"
chmod 755 "$TMP"
printf '\0\0\0\0\0' >"$TMP/msg"
set -- $($PY ports 11)
[ $# -eq 11 ] || die "could not find 11 free ports"
P_I=$1 P_IT=$2 P_IA=$3 P_N=$4 P_N1=$5 P_NT=$6 P_H=$7 P_H1=$8 P_HT=$9
P_ORIGIN=${10} P_OGRPC=${11}

start_origin
ACTIVE=""
for t in $TARGETS; do
	case $t in
	ingressd)	start_ingressd ;;
	nginx)		start_nginx ;;
	haproxy)	start_haproxy ;;
	esac && ACTIVE="$ACTIVE $t"
done
cat >"$RAW/params" <<EOF
SUITE=$SUITE
ROUNDS=$ROUNDS
DURATION=$DURATION
CONNS=$CONNS
H2_N=$H2_N
H2_CONNS=$H2_CONNS
H2_STREAMS=$H2_STREAMS
TOOLS=$(echo $TOOLS)
TARGETS=$(echo $ACTIVE)
TICKETS=$TICKETS
EOF
log "targets:${ACTIVE:- none}; tools: $TOOLS; $ROUNDS rounds"

# Warm-up, not measured: every proxy opens its upstream connections (up to
# H2_CONNS x H2_STREAMS of them for nginx) and the replicas their pools.
for tool in $TOOLS; do
	for target in $ACTIVE; do
		url=$(url_of "$target" "$tool")
		case $tool in
		h2)	timeout -k 5 60 h2load -c "$H2_CONNS" -m "$H2_STREAMS" \
			    -n $((H2_CONNS * H2_STREAMS * 4)) "$url" ;;
		grpc)	timeout -k 5 60 h2load -c "$H2_CONNS" -m "$H2_STREAMS" \
			    -n $((H2_CONNS * H2_STREAMS * 4)) -d "$TMP/msg" \
			    -H 'content-type: application/grpc' \
			    -H 'te: trailers' "$url" ;;
		*)	timeout -k 5 30 wrk -t1 -c"$CONNS" -d1s "$url" ;;
		esac >/dev/null 2>&1
	done
done

r=1
while [ $r -le "$ROUNDS" ]; do
	for tool in $TOOLS; do
		for target in $ACTIVE; do
			set -- $(proxy_pids "$target")
			alive "$1" || { fail_target "$target" \
			    "exited during the bench"; continue; }
			run_one "$target" "$tool" "$r"
		done
	done
	r=$((r + 1))
done
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg.end"
# ingressd's TLS counters: how many of its handshakes were resumed.
curl -s --max-time 5 "http://127.0.0.1:$P_IA/-/metrics" 2>/dev/null |
    grep '^ingressd_tls_handshakes' >"$RAW/ingressd.tls-metrics.txt"
for d in origin nginx; do
	cp "$TMP/$d/error.log" "$RAW/$d.error.log" 2>/dev/null
done

$PY report --raw "$RAW" --md "$OUT/results.md" --json "$OUT/results.json"
st=$?
log "results: $OUT/results.md, raw outputs: $RAW/"
case " $ACTIVE " in *" ingressd "*) ;; *) exit 1 ;; esac
exit $st
