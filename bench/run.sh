#!/bin/sh
# bench/run.sh -- `make bench`: ingressd against nginx, measured in one run.
#
# Three targets, all answering GET /hello with the 12 bytes "Hello world!":
#   ingressd      build/ingressd -> 1 build/replica-hello (workers 1)
#   nginx-proxy   nginx proxy_pass (upstream keepalive) -> nginx return 200
#   nginx-direct  that origin nginx alone: the one-hop ceiling
# Each tool (wrk, ab, ab -k) runs the targets interleaved, A B C, for ROUNDS
# rounds, so drift on the machine lands on every target alike.  CPU
# (utime+stime from /proc/PID/stat) of the proxy and of its backend is read
# around every run.  bench/bench.py parses the outputs and prints the table;
# build/bench/results.md gets it as markdown, build/bench/raw/ keeps what
# the tools printed.
#
# Environment: ROUNDS (3), DURATION (wrk seconds, 5), CONNS (100), AB_N
# (10000), TOOLS ("wrk ab abk"), NGINX_KEEPALIVE (idle upstream connections
# nginx-proxy keeps, 64), BUILD (build), SERVER_CPUS / CLIENT_CPUS (taskset
# lists, unset: no pinning), PYTHON (python3).
#
# Only 127.0.0.1.  Every process this script starts is recorded and stopped
# by its pid on exit, and only those.  A missing or broken ingressd makes
# its rows FAILED and the exit status 1; the nginx rows are still measured.

set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-100}
AB_N=${AB_N:-10000}
NGINX_KEEPALIVE=${NGINX_KEEPALIVE:-64}
TOOLS=${TOOLS:-wrk ab abk}

OUT=$BUILD/bench
RAW=$OUT/raw
NGINX=/usr/sbin/nginx
PY="${PYTHON:-python3} bench/bench.py"

PIDS=""			# every process we started, stopped on exit
REPLICA_PIDS=""		# ingressd's children, in case it leaves them behind
INGRESSD_PID=""
TMP=""

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

for v in ROUNDS DURATION CONNS AB_N NGINX_KEEPALIVE; do
	eval "x=\$$v"
	case $x in ''|*[!0-9]*) die "$v must be a positive integer: '$x'" ;; esac
	[ "$x" -gt 0 ] || die "$v must be a positive integer"
done
for t in $TOOLS; do
	case $t in wrk|ab|abk) ;; *) die "TOOLS: unknown tool '$t'" ;; esac
done
for c in wrk ab curl "${PYTHON:-python3}" timeout pgrep "$NGINX"; do
	command -v "$c" >/dev/null 2>&1 || die "$c not found (make deps)"
done

# A zombie still answers kill -0: look at the state instead.
alive() {
	local st
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ]
}

# Stop one pid we started: SIGTERM, up to 5 s, then SIGKILL.
stop_pid() {
	local i
	alive "$1" || { wait "$1" 2>/dev/null; return 0; }
	kill -TERM "$1" 2>/dev/null
	i=0
	while alive "$1" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	if alive "$1"; then
		log "pid $1 ignored SIGTERM, killing it"
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
	return 0
}

# Note ingressd's children first: a broken ingressd may leave them behind,
# and cleanup stops those too.
stop_ingressd() {
	if alive "$INGRESSD_PID"; then
		REPLICA_PIDS="$REPLICA_PIDS $(descendants "$INGRESSD_PID")"
	fi
	stop_pid "$INGRESSD_PID"
}

cleanup() {
	trap - EXIT INT TERM
	[ -n "$INGRESSD_PID" ] && stop_ingressd
	for p in $PIDS; do stop_pid "$p"; done
	# A replica outlives a crashed ingressd: stop the ones we saw it
	# start, if that pid is still a replica-hello.
	for p in $REPLICA_PIDS; do
		if alive "$p" && grep -q replica-hello "/proc/$p/cmdline" \
		    2>/dev/null; then
			log "replica $p outlived ingressd, stopping it"
			kill -TERM "$p" 2>/dev/null
			sleep 0.5
			alive "$p" && kill -KILL "$p" 2>/dev/null
		fi
	done
	[ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Prefixes, not functions: "cmd &" must make $! the server's own pid, and a
# function run in the background would be a subshell above it.
PIN_SERVER="" PIN_CLIENT=""
[ -n "${SERVER_CPUS:-}" ] && PIN_SERVER="taskset -c $SERVER_CPUS"
[ -n "${CLIENT_CPUS:-}" ] && PIN_CLIENT="taskset -c $CLIENT_CPUS"
if [ -n "$PIN_SERVER$PIN_CLIENT" ]; then
	command -v taskset >/dev/null 2>&1 || die "taskset not found"
fi

# GET URL once: does it answer STATUS (and, if given, exactly BODY)?
probe() {
	local code
	code=$(curl -s -o "$TMP/probe.body" -w '%{http_code}' --max-time 2 \
	    "$1" 2>/dev/null)
	[ "$code" = "$2" ] || return 1
	[ -z "$3" ] || [ "$(cat "$TMP/probe.body")" = "$3" ]
}

# Poll URL until probe passes, for at most TRIES x 0.1 s, while PID lives.
wait_for() {
	local url="$1" status="$2" body="$3" tries="$4" pid="$5" i=0
	while [ $i -lt "$tries" ]; do
		alive "$pid" || return 1
		probe "$url" "$status" "$body" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

fail_target() {
	local target="$1"
	shift
	log "$target FAILED: $*"
	printf '%s\t%s\n' "$target" "$*" >>"$RAW/failed.tsv"
}

# PREFIX PORT [UPSTREAM_PORT] TEMPLATE: start one nginx, print its pid.
start_nginx() {
	local dir="$1"
	mkdir -p "$dir"
	sed -e "s|@PREFIX@|$dir|g" -e "s|@PORT@|$2|g" \
	    -e "s|@UPSTREAM_PORT@|${3:-0}|g" \
	    -e "s|@KEEPALIVE@|$NGINX_KEEPALIVE|g" "$4" >"$dir/nginx.conf"
	$PIN_SERVER "$NGINX" -p "$dir/" -c "$dir/nginx.conf" \
	    -e "$dir/error.log" >"$dir/stdout.log" 2>&1 &
	NGINX_PID=$!
	PIDS="$NGINX_PID $PIDS"
}

start_ingressd() {
	local kids p
	if [ ! -x "$BUILD/ingressd" ]; then
		fail_target ingressd "$BUILD/ingressd missing"
		return 1
	fi
	if [ ! -x "$BUILD/replica-hello" ]; then
		fail_target ingressd "$BUILD/replica-hello missing"
		return 1
	fi
	mkdir -p "$TMP/ingressd/run"
	$PY ingressd-conf --port "$P_INGRESSD" --admin "$P_ADMIN" \
	    --runtime-dir "$TMP/ingressd/run" \
	    --replica "$BUILD/replica-hello" --out "$TMP/ingressd/bench.json"
	$PIN_SERVER "$BUILD/ingressd" -c "$TMP/ingressd/bench.json" \
	    >"$RAW/ingressd.log" 2>&1 &
	INGRESSD_PID=$!
	PIDS="$INGRESSD_PID $PIDS"
	if ! wait_for "http://127.0.0.1:$P_ADMIN/-/healthz" 200 "" 100 \
	    "$INGRESSD_PID"; then
		if alive "$INGRESSD_PID"; then
			fail_target ingressd "no 200 from GET /-/healthz" \
			    "within 10 s (log: $RAW/ingressd.log)"
		else
			wait "$INGRESSD_PID"
			fail_target ingressd "exited at start, status $?" \
			    "(log: $RAW/ingressd.log)"
		fi
		return 1
	fi
	# Warm-up: the handle resolves and the replica connection warms.
	if ! wait_for "$(url_of ingressd)" 200 "Hello world!" 50 \
	    "$INGRESSD_PID"; then
		fail_target ingressd "GET /hello did not answer 200" \
		    "'Hello world!' within 5 s (log: $RAW/ingressd.log)"
		return 1
	fi
	REPLICA_PIDS=$($PY replica-pids "127.0.0.1:$P_ADMIN" 2>>"$RAW/ingressd.log")
	kids=$(descendants "$INGRESSD_PID" | sort -n | tr '\n' ' ')
	if [ -z "$REPLICA_PIDS" ]; then
		log "GET /-/deployments gave no pids; using ingressd's children"
		REPLICA_PIDS=$kids
	fi
	for p in $REPLICA_PIDS; do
		case " $kids " in *" $p "*) ;; *)
			log "replica pid $p from /-/deployments is not a" \
			    "child of ingressd (children: ${kids:-none})" ;;
		esac
	done
	log "ingressd pid $INGRESSD_PID, replica pids:" $REPLICA_PIDS
	[ -n "$REPLICA_PIDS" ] ||
	    log "no replica pid found: backend CPU will read '-'"
	return 0
}

descendants() {
	local c
	for c in $(pgrep -P "$1"); do
		echo "$c"
		descendants "$c"
	done
}

url_of() {
	case $1 in
	ingressd)	echo "http://127.0.0.1:$P_INGRESSD/hello" ;;
	nginx-proxy)	echo "http://127.0.0.1:$P_PROXY/hello" ;;
	nginx-direct)	echo "http://127.0.0.1:$P_ORIGIN/hello" ;;
	esac
}

# The process whose CPU is "the proxy" (nginx: master + its worker).
proxy_pids() {
	case $1 in
	ingressd)	echo "$INGRESSD_PID" ;;
	nginx-proxy)	echo "$PROXY_PID" $(pgrep -P "$PROXY_PID") ;;
	nginx-direct)	echo "$ORIGIN_PID" $(pgrep -P "$ORIGIN_PID") ;;
	esac
}

# What serves behind the proxy: the replica(s), or the origin nginx.
backend_pids() {
	case $1 in
	ingressd)	echo $REPLICA_PIDS ;;
	nginx-proxy)	echo "$ORIGIN_PID" $(pgrep -P "$ORIGIN_PID") ;;
	nginx-direct)	;;
	esac
}

# utime+stime ticks summed over the pids; "-" for none, "NA" if one is gone.
ticks() {
	local p n t=0
	[ $# -gt 0 ] || { echo -; return; }
	for p in "$@"; do
		alive "$p" || { echo NA; return; }
		n=$(sed 's/^.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')
		[ -n "$n" ] || { echo NA; return; }
		t=$((t + n))
	done
	echo "$t"
}

run_one() {
	local target="$1" tool="$2" round="$3" url pp bp p0 p1 b0 b1 rc rps
	local out="$RAW/$target.$tool.$round.txt"
	url=$(url_of "$target")
	pp=$(proxy_pids "$target")
	bp=$(backend_pids "$target")
	p0=$(ticks $pp)
	b0=$(ticks $bp)
	case $tool in
	wrk)	$PIN_CLIENT timeout -k 5 $((DURATION + 30)) \
		    wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$url" ;;
	ab)	$PIN_CLIENT timeout -k 5 300 \
		    ab -n "$AB_N" -c "$CONNS" "$url" ;;
	abk)	$PIN_CLIENT timeout -k 5 300 \
		    ab -k -n "$AB_N" -c "$CONNS" "$url" ;;
	esac >"$out" 2>&1
	rc=$?
	p1=$(ticks $pp)
	b1=$(ticks $bp)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$tool" \
	    "$round" "$rc" "$p0" "$p1" "$b0" "$b1" "$out" >>"$RAW/runs.tsv"
	rps=$(grep -E '^(Requests/sec|Requests per second):' "$out" |
	    awk '{ print $NF == "(mean)" ? $(NF-2) : $NF }')
	log "round $round $tool $target: rc $rc, ${rps:-no} req/s"
}

mkdir -p "$RAW" || die "cannot create $RAW"
rm -f "$RAW"/*.txt "$RAW/runs.tsv" "$RAW/failed.tsv" "$RAW/ingressd.log" \
    "$RAW/params" "$RAW/loadavg.start"
: >"$RAW/runs.tsv"
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg.start"
printf 'ROUNDS=%s\nDURATION=%s\nCONNS=%s\nAB_N=%s\nTOOLS=%s\nNGINX_KEEPALIVE=%s\n' \
    "$ROUNDS" "$DURATION" "$CONNS" "$AB_N" "$TOOLS" "$NGINX_KEEPALIVE" \
    >"$RAW/params"
TMP=$(mktemp -d /tmp/ingressd-bench.XXXXXX) || die "mktemp failed"

set -- $($PY ports 4)
[ $# -eq 4 ] || die "could not find 4 free ports"
P_INGRESSD=$1 P_ADMIN=$2 P_PROXY=$3 P_ORIGIN=$4

start_nginx "$TMP/origin" "$P_ORIGIN" "" bench/nginx/upstream.conf
ORIGIN_PID=$NGINX_PID
start_nginx "$TMP/proxy" "$P_PROXY" "$P_ORIGIN" bench/nginx/proxy.conf
PROXY_PID=$NGINX_PID
NGINX_OK=1
for t in nginx-direct nginx-proxy; do
	pid=$ORIGIN_PID
	[ $t = nginx-proxy ] && pid=$PROXY_PID
	if ! wait_for "$(url_of $t)" 200 "Hello world!" 50 "$pid"; then
		fail_target $t "no 'Hello world!' within 5 s:" \
		    "$(cat "$TMP"/*/error.log "$TMP"/*/stdout.log 2>/dev/null |
		    tail -n 3 | tr '\n' ' ')"
		NGINX_OK=0
	fi
done

INGRESSD_OK=0
start_ingressd && INGRESSD_OK=1
if [ $INGRESSD_OK -eq 0 ] && [ -n "$INGRESSD_PID" ]; then
	tail -n 20 "$RAW/ingressd.log" >&2
	stop_ingressd
fi

ACTIVE=""
[ $INGRESSD_OK -eq 1 ] && ACTIVE="ingressd"
[ $NGINX_OK -eq 1 ] && ACTIVE="$ACTIVE nginx-proxy nginx-direct"
log "targets:${ACTIVE:- none}; tools: $TOOLS; $ROUNDS rounds"

r=1
while [ $r -le "$ROUNDS" ]; do
	for tool in $TOOLS; do
		for target in $ACTIVE; do
			if [ "$target" = ingressd ] &&
			    ! alive "$INGRESSD_PID"; then
				fail_target ingressd "exited during the bench" \
				    "(log: $RAW/ingressd.log)"
				ACTIVE=$(echo "$ACTIVE" | sed 's/ingressd//')
				INGRESSD_OK=0
				continue
			fi
			run_one "$target" "$tool" "$r"
		done
	done
	r=$((r + 1))
done

$PY report --raw "$RAW" --md "$OUT/results.md" --json "$OUT/results.json"
st=$?
log "results: $OUT/results.md, raw outputs: $RAW/"
[ $INGRESSD_OK -eq 1 ] && [ $NGINX_OK -eq 1 ] && [ $st -eq 0 ] || exit 1
exit 0
