#!/bin/sh
# bench/https_upstream.sh -- a proxy in front of an HTTPS origin: ingressd
# ("protocol": "http" with "tls") against nginx (proxy_pass https://,
# upstream keepalive, proxy_ssl_session_reuse on), both verifying the
# origin's certificate, one worker each, the same origin nginx (listen
# ssl, return 200 "Hello world!").
#
#	sh bench/https_upstream.sh	# after make; ~1 min
#
# Environment: ROUNDS (2), DURATION (4 s), CONNS (100), NGINX_KEEPALIVE
# (idle upstream connections nginx keeps: 128, above CONNS, so that it
# does not close and reopen TLS connections under load), BUILD (build).
# For each round the two targets run back to back (wrk -t1 -cCONNS); the
# proxy's CPU (utime+stime of ingressd, or nginx's master and worker) is
# read from /proc/PID/stat around each run and divided by the requests.
# Prints one line per run with the TLS connections the proxy opened to
# the origin during it and how many of those resumed a session (from the
# origin's access log).  Only 127.0.0.1; every process started here is
# stopped by its pid on exit.

set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-4}
CONNS=${CONNS:-100}
NGINX_KEEPALIVE=${NGINX_KEEPALIVE:-128}
NGINX=/usr/sbin/nginx
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ingressd-https-bench.XXXXXX") || exit 1
PIDS=""

cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	sleep 0.3
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); \
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
	local i=0
	while [ $i -lt 100 ]; do
		curl -sk -o /dev/null "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "no answer from $1" >&2
	exit 1
}

ticks() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" |
		    awk '{ print $12 + $13 }')))
	done
	echo "$t"
}

# A CA and the origin's certificate (origin.test), as the tests make them.
ssl() {
	openssl "$@" >/dev/null 2>&1 || { echo "openssl $1 failed" >&2; exit 1; }
}
cd "$TMP" || exit 1
ssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=bench ca" -keyout ca.key -out ca.pem
ssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=origin.test" -keyout origin.key -out origin.csr
echo "subjectAltName=DNS:origin.test" >origin.ext
ssl x509 -req -in origin.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 2 -extfile origin.ext -out origin.pem
cd - >/dev/null || exit 1

P_ORIGIN=$(free_port)
P_NGINX=$(free_port)
P_INGRESSD=$(free_port)
mkdir -p "$TMP/origin" "$TMP/proxy" "$TMP/run"

cat >"$TMP/origin/nginx.conf" <<EOF
daemon off;
worker_processes 1;
worker_rlimit_nofile 20000;
pid $TMP/origin/nginx.pid;
error_log $TMP/origin/error.log warn;
events { worker_connections 8192; }
http {
	log_format tls '\$connection \$ssl_session_reused';
	access_log $TMP/origin/access.log tls;
	keepalive_requests 1000000;
	keepalive_timeout 75s;
	server {
		listen 127.0.0.1:$P_ORIGIN ssl backlog=4096;
		ssl_certificate $TMP/origin.pem;
		ssl_certificate_key $TMP/origin.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		location / { default_type text/plain; return 200 "Hello world!"; }
	}
}
EOF

cat >"$TMP/proxy/nginx.conf" <<EOF
daemon off;
worker_processes 1;
worker_rlimit_nofile 20000;
pid $TMP/proxy/nginx.pid;
error_log $TMP/proxy/error.log warn;
events { worker_connections 8192; }
http {
	access_log off;
	keepalive_requests 1000000;
	keepalive_timeout 75s;
	upstream origin {
		server 127.0.0.1:$P_ORIGIN;
		keepalive $NGINX_KEEPALIVE;
		keepalive_requests 1000000;
	}
	server {
		listen 127.0.0.1:$P_NGINX backlog=4096;
		location / {
			proxy_pass https://origin;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_ssl_session_reuse on;
			proxy_ssl_verify on;
			proxy_ssl_trusted_certificate $TMP/ca.pem;
			proxy_ssl_name origin.test;
			proxy_ssl_server_name on;
			proxy_ssl_protocols TLSv1.2 TLSv1.3;
		}
	}
}
EOF

cat >"$TMP/ingressd.json" <<EOF
{
  "listen": ["127.0.0.1:$P_INGRESSD"],
  "workers": 1,
  "runtime_dir": "$TMP/run",
  "log_level": "${LOG_LEVEL:-warn}",
  "routes": [{"prefix": "/", "deployment": "origin"}],
  "deployments": {
    "origin": {
      "endpoints": ["127.0.0.1:$P_ORIGIN"],
      "protocol": "http",
      "max_ongoing_requests": 1024,
      "idle_timeout": 60,
      "tls": {"ca": "$TMP/ca.pem", "server_name": "origin.test"}
    }
  }
}
EOF

$NGINX -p "$TMP/origin/" -c "$TMP/origin/nginx.conf" \
    -e "$TMP/origin/error.log" &
PIDS="$! $PIDS"
$NGINX -p "$TMP/proxy/" -c "$TMP/proxy/nginx.conf" \
    -e "$TMP/proxy/error.log" &
NGINX_PID=$!
PIDS="$NGINX_PID $PIDS"
"$BUILD/ingressd" -c "$TMP/ingressd.json" >"$TMP/ingressd.log" 2>&1 &
INGRESSD_PID=$!
PIDS="$INGRESSD_PID $PIDS"
wait_port "https://127.0.0.1:$P_ORIGIN/"
wait_port "http://127.0.0.1:$P_NGINX/hello"
wait_port "http://127.0.0.1:$P_INGRESSD/hello"

# The origin's connections first seen in lines from+1.. of its log, and
# of those the resumed ones.
conns() {
	awk -v from="$1" 'NR <= from { seen[$1] = 1; next }
	    !($1 in seen) { seen[$1] = 1; n++; if ($2 == "r") r++ }
	    END { printf "%d TLS conns (%d resumed)", n, r }' \
	    "$TMP/origin/access.log"
}

run() {
	local name=$1 url=$2 pids t0 t1 out reqs l0
	shift 2
	pids="$*"
	l0=$(wc -l <"$TMP/origin/access.log")
	t0=$(ticks $pids)
	out=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$url")
	t1=$(ticks $pids)
	reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
	echo "$out" | awk -v n="$name" -v r="$reqs" -v c="$(conns "$l0")" \
	    -v us="$(( (t1 - t0) * 10000 ))" '
	    /Requests\/sec/ { rps = $2 }
	    /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
	    /Non-2xx|Socket errors/ { err = err " " $0 }
	    END { printf "%-14s %7.0f req/s  p50 %-7s p99 %-8s " \
		"CPU %5.1f us/req  %s%s\n", n, rps, p50, p99, us / r, c,
		err }'
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  commit: $(git rev-parse \
--short HEAD 2>/dev/null)  wrk -t1 -c$CONNS -d${DURATION}s"
i=1
while [ $i -le "$ROUNDS" ]; do
	run ingressd-https "http://127.0.0.1:$P_INGRESSD/hello" "$INGRESSD_PID"
	run nginx-https "http://127.0.0.1:$P_NGINX/hello" "$NGINX_PID" \
	    $(pgrep -P "$NGINX_PID")
	i=$((i + 1))
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -s "$TMP/ingressd.log" ]; then
	echo "ingressd.log (last lines):"
	tail -5 "$TMP/ingressd.log"
fi
