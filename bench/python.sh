#!/bin/sh
# bench/python.sh -- the Python replica SDK against the C replica library and
# against plain Python HTTP servers, all doing the same echo (the JSON of
# replica/examples/echo.c and python/examples/echo.py).
#
# Targets, each answering GET .../bench?x=1 with that JSON:
#   py-before       (with BEFORE=DIR) the same ingressd -> 1 echo.py of the
#                   SDK in DIR, another version's python/ (e.g. main's,
#                   copied to /tmp/py-before): before/after in one run
#   py-replica      build/ingressd (workers 1) -> 1 python/examples/echo.py
#   c-replica       the same ingressd           -> 1 build/replica-echo
#   py-asyncio      python/bench/plain_echo.py --mode asyncio, no ingressd
#   py-http.server  python/bench/plain_echo.py --mode threading (stdlib
#                   http.server.ThreadingHTTPServer), no ingressd
# APP=hello answers "Hello world!" instead: python/bench/hello.py (an async
# handler, with --sdk DIR for py-before), build/replica-hello, plain_echo.py
# --hello; py-http.server is left out.
# wrk -t1 -cCONNS -dDURATION --latency runs the targets interleaved, A B C D,
# for ROUNDS rounds (so before and after alternate: report medians).  Around
# each run the CPU time (utime+stime from /proc/PID/stat) of the server
# processes is read: ingressd and the replica for the replica targets, the
# server itself for the others.
#
# Environment: ROUNDS (3), DURATION (wrk seconds, 5), CONNS (50), BUILD
# (build), PYTHON (python3), APP (echo or hello), BEFORE (an SDK dir).
# Needs build/ingressd, build/replica-echo or -hello (make all) and wrk.  Only 127.0.0.1.  Every process started here is
# recorded and stopped by its pid on exit, and only those.
# Output: a table on stdout, also in $BUILD/bench/python.md; what wrk
# printed in $BUILD/bench/python-raw/.  Exit 1 if a target failed to start
# or a run had errors.

set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
PY=${PYTHON:-python3}
OUT=$BUILD/bench
RAW=$OUT/python-raw
APP=${APP:-echo}
BEFORE=${BEFORE:-}
case $APP in
echo) TARGETS="py-replica c-replica py-asyncio py-http.server"
      PYAPP=python/examples/echo.py; CAPP=replica-echo ;;
hello) TARGETS="py-replica c-replica py-asyncio"
       PYAPP=python/bench/hello.py; CAPP=replica-hello ;;
*) printf 'bench/python: APP must be echo or hello\n' >&2; exit 2 ;;
esac

PIDS=""
INGRESSD_PID=""
REPLICA_PIDS=""
TMP=""
STATUS=0

log() { printf 'bench/python: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

for v in ROUNDS DURATION CONNS; do
	eval "x=\$$v"
	case $x in ''|*[!0-9]*) die "$v must be a positive integer: '$x'" ;; esac
	[ "$x" -gt 0 ] || die "$v must be a positive integer"
done
for c in wrk curl "$PY" timeout; do
	command -v "$c" >/dev/null 2>&1 || die "$c not found"
done
[ -x "$BUILD/ingressd" ] && [ -x "$BUILD/$CAPP" ] ||
    die "$BUILD/ingressd and $BUILD/$CAPP are needed: make all"
BEFORE_CMD=""
if [ -n "$BEFORE" ]; then
	[ -f "$BEFORE/ingressd_replica/server.py" ] ||
	    die "BEFORE=$BEFORE: no ingressd_replica/server.py there"
	BEFORE=$(cd "$BEFORE" && pwd)
	TARGETS="py-before $TARGETS"
	if [ "$APP" = echo ]; then
		BEFORE_CMD="\"$PY\", \"$BEFORE/examples/echo.py\""
	else
		BEFORE_CMD="\"$PY\", \"$PYAPP\", \"--sdk\", \"$BEFORE\""
	fi
fi

alive() {
	local st
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ]
}

# SIGTERM, up to 5 s, then SIGKILL: only pids we started.
stop_pid() {
	local i=0
	alive "$1" || { wait "$1" 2>/dev/null; return 0; }
	kill -TERM "$1" 2>/dev/null
	while alive "$1" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	if alive "$1"; then
		log "pid $1 ignored SIGTERM, killing it"
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
	return 0
}

cleanup() {
	trap - EXIT INT TERM
	[ -n "$INGRESSD_PID" ] && stop_pid "$INGRESSD_PID"
	for p in $PIDS; do stop_pid "$p"; done
	# ingressd stops its replicas; one that outlived it is stopped here
	# if that pid is still one of ours.
	for p in $REPLICA_PIDS; do
		if alive "$p" && grep -qE 'echo\.py|hello\.py|replica-' \
		    "/proc/$p/cmdline" 2>/dev/null; then
			log "replica $p outlived ingressd, stopping it"
			kill -KILL "$p" 2>/dev/null
		fi
	done
	[ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

TMP=$(mktemp -d /tmp/ingressd-pybench.XXXXXX) || die "mktemp failed"
mkdir -p "$RAW" || die "cannot create $RAW"
rm -f "$RAW"/*.txt "$RAW"/*.log

free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Poll URL until it answers 200, at most 10 s, while PID lives.
wait_200() {
	local i=0 code
	while [ $i -lt 100 ]; do
		alive "$2" || return 1
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
		    "$1" 2>/dev/null)
		[ "$code" = 200 ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# utime+stime, in clock ticks, of the pids given.
ticks() {
	local t=0 p v
	for p in "$@"; do
		v=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null |
		    awk '{ print $12 + $13 }')
		t=$((t + ${v:-0}))
	done
	echo $t
}

# --- start the servers ---

PORT=$(free_port)
ADMIN=$(free_port)
BEFORE_ROUTE="" BEFORE_DEP=""
if [ -n "$BEFORE_CMD" ]; then
	BEFORE_ROUTE=',
    { "prefix": "/pybefore", "deployment": "pybefore" }'
	BEFORE_DEP=',
    "pybefore": { "spawn": { "command": ['"$BEFORE_CMD"'], "replicas": 1 },
                  "max_ongoing_requests": 1024 }'
fi
cat >"$TMP/ingressd.json" <<EOF
{
  "listen": ["127.0.0.1:$PORT"],
  "admin": "127.0.0.1:$ADMIN",
  "workers": 1,
  "log_level": "warn",
  "runtime_dir": "$TMP/run",
  "routes": [
    { "prefix": "/py", "deployment": "py" },
    { "prefix": "/c", "deployment": "c" }$BEFORE_ROUTE
  ],
  "deployments": {
    "py": { "spawn": { "command": ["$PY", "$PYAPP"],
                       "replicas": 1 }, "max_ongoing_requests": 1024 },
    "c": { "spawn": { "command": ["$BUILD/$CAPP"], "replicas": 1 },
           "max_ongoing_requests": 1024 }$BEFORE_DEP
  }
}
EOF
"$BUILD/ingressd" -c "$TMP/ingressd.json" 2>"$RAW/ingressd.log" &
INGRESSD_PID=$!
wait_200 "http://127.0.0.1:$PORT/py/bench?x=1" "$INGRESSD_PID" &&
    wait_200 "http://127.0.0.1:$PORT/c/bench?x=1" "$INGRESSD_PID" ||
    die "ingressd did not serve /py and /c (see $RAW/ingressd.log)"
if [ -n "$BEFORE" ]; then
	wait_200 "http://127.0.0.1:$PORT/pybefore/bench?x=1" "$INGRESSD_PID" ||
	    die "ingressd did not serve /pybefore (see $RAW/ingressd.log)"
fi
DEPS=$(curl -s --max-time 2 "http://127.0.0.1:$ADMIN/-/deployments")
pid_of() {
	printf '%s' "$DEPS" | "$PY" -c 'import json, sys
print(json.load(sys.stdin)[sys.argv[1]]["replicas"][0]["pid"])' "$1"
}
PY_REPLICA=$(pid_of py) && C_REPLICA=$(pid_of c) ||
    die "no replica pids in /-/deployments"
REPLICA_PIDS="$PY_REPLICA $C_REPLICA"
if [ -n "$BEFORE" ]; then
	BEFORE_REPLICA=$(pid_of pybefore) || die "no pybefore replica pid"
	REPLICA_PIDS="$REPLICA_PIDS $BEFORE_REPLICA"
fi
HELLO_OPT=""
[ "$APP" = hello ] && HELLO_OPT=--hello

APORT=$(free_port)
"$PY" python/bench/plain_echo.py --mode asyncio --listen "127.0.0.1:$APORT" \
    $HELLO_OPT 2>"$RAW/py-asyncio.log" &
ASYNCIO_PID=$!
PIDS="$PIDS $ASYNCIO_PID"
TPORT=$(free_port)
"$PY" python/bench/plain_echo.py --mode threading \
    --listen "127.0.0.1:$TPORT" 2>"$RAW/py-http.server.log" &
THREAD_PID=$!
PIDS="$PIDS $THREAD_PID"
wait_200 "http://127.0.0.1:$APORT/echo/bench" "$ASYNCIO_PID" ||
    die "plain asyncio server did not start"
wait_200 "http://127.0.0.1:$TPORT/echo/bench" "$THREAD_PID" ||
    die "plain http.server did not start"

url_of() {
	case $1 in
	py-before) echo "http://127.0.0.1:$PORT/pybefore/bench?x=1" ;;
	py-replica) echo "http://127.0.0.1:$PORT/py/bench?x=1" ;;
	c-replica) echo "http://127.0.0.1:$PORT/c/bench?x=1" ;;
	py-asyncio) echo "http://127.0.0.1:$APORT/echo/bench?x=1" ;;
	py-http.server) echo "http://127.0.0.1:$TPORT/echo/bench?x=1" ;;
	esac
}
# The processes whose CPU a target costs: proxy, then backend.
pids_of() {
	case $1 in
	py-before) echo "$INGRESSD_PID $BEFORE_REPLICA" ;;
	py-replica) echo "$INGRESSD_PID $PY_REPLICA" ;;
	c-replica) echo "$INGRESSD_PID $C_REPLICA" ;;
	py-asyncio) echo "$ASYNCIO_PID" ;;
	py-http.server) echo "$THREAD_PID" ;;
	esac
}

# --- run ---

HZ=$(getconf CLK_TCK)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$RAW/runs.tsv"
r=1
while [ $r -le "$ROUNDS" ]; do
	for t in $TARGETS; do
		set -- $(pids_of "$t")
		be=$(eval "echo \${$#}")	# the backend: the last pid
		before=$(ticks "$@")
		before_be=$(ticks "$be")
		timeout $((DURATION + 30)) wrk -t1 -c"$CONNS" -d"${DURATION}s" \
		    --latency "$(url_of "$t")" >"$RAW/$t.$r.txt" 2>&1
		after=$(ticks "$@")
		after_be=$(ticks "$be")
		for p in "$@"; do
			alive "$p" || die "$t: pid $p died during the run"
		done
		printf '%s\t%s\t%s\t%s\n' "$t" "$r" $((after - before)) \
		    $((after_be - before_be)) >>"$RAW/runs.tsv"
	done
	r=$((r + 1))
done

# --- report ---

APP=$APP "$PY" - "$RAW" "$ROUNDS" "$HZ" "$CONNS" "$DURATION" "$TARGETS" \
    >"$OUT/python.md" <<'PYEOF' || STATUS=1
import os, re, statistics, sys

raw, rounds, hz, conns, duration, targets = sys.argv[1:7]
rounds, hz = int(rounds), int(hz)

def ms(v):
	m = re.match(r"([\d.]+)(us|ms|s)", v)
	n = float(m.group(1))
	return n / 1000 if m.group(2) == "us" else n * 1000 \
	    if m.group(2) == "s" else n

ticks = {}
for line in open(os.path.join(raw, "runs.tsv")):
	t, r, n, be = line.split()
	ticks[(t, int(r))] = (int(n), int(be))
rows, bad = [], 0
for t in targets.split():
	rps, p50, p99, cpu, becpu, errs = [], [], [], [], [], 0
	for r in range(1, rounds + 1):
		text = open(os.path.join(raw, "%s.%d.txt" % (t, r))).read()
		m = re.search(r"Requests/sec:\s+([\d.]+)", text)
		reqs = re.search(r"(\d+) requests in", text)
		if not m or not reqs:
			errs += 1
			continue
		rps.append(float(m.group(1)))
		# Anchored: the Thread Stats line ends in a "NN.NN%" too.
		for pct, out in (("50", p50), ("99", p99)):
			out.append(ms(re.search(r"^\s+%s%%\s+(\S+)" % pct,
			    text, re.M).group(1)))
		n = int(reqs.group(1))
		cpu.append(ticks[(t, r)][0] * 1e6 / hz / n)
		becpu.append(ticks[(t, r)][1] * 1e6 / hz / n)
		for e in re.findall(r"Non-2xx or 3xx responses: (\d+)", text):
			errs += int(e)
		m = re.search(r"Socket errors: connect (\d+), read (\d+), "
		    r"write (\d+), timeout (\d+)", text)
		if m:
			errs += sum(int(x) for x in m.groups())
	bad += errs
	rows.append((t, rps, p50, p99, cpu, becpu, errs))

base = {t: statistics.median(rps) for t, rps, *_ in rows if rps}
print(("wrk -t1 -c%s -d%ss, GET " + os.environ.get("APP", "echo") +
    ", median of %d rounds "
    "(min-max); CPU = utime+stime per request of the server processes "
    "(total) and of the replica alone")
    % (conns, duration, rounds))
print()
print("| target | req/s | p50 ms | p99 ms | CPU us/req | replica us/req "
    "| vs c-replica | vs py-asyncio | errors |")
print("|---|---|---|---|---|---|---|---|---|")
for t, rps, p50, p99, cpu, becpu, errs in rows:
	if not rps:
		print("| %s | FAILED | | | | | | | %d |" % (t, errs))
		continue
	med = statistics.median(rps)
	print("| %s | %.0f (%.0f-%.0f) | %.2f | %.2f | %.0f | %s | %.2f | %.2f "
	    "| %d |" % (t, med, min(rps), max(rps), statistics.median(p50),
	    statistics.median(p99), statistics.median(cpu),
	    "%.1f (%.1f-%.1f)" % (statistics.median(becpu), min(becpu),
	    max(becpu)) if t.startswith(("py-r", "c-", "py-b"))
	    else "-",
	    med / base["c-replica"] if "c-replica" in base else 0,
	    med / base["py-asyncio"] if "py-asyncio" in base else 0, errs))
sys.exit(1 if bad else 0)
PYEOF
cat "$OUT/python.md"
{
	echo
	echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' \
	    /proc/cpuinfo | head -1)"
	echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 \
	    /proc/loadavg)"
	echo "python: $("$PY" --version 2>&1); raw output: $RAW"
} | tee -a "$OUT/python.md"
[ "$STATUS" -eq 0 ] || log "a run had errors (see $RAW)"
exit "$STATUS"
