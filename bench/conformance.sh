#!/bin/sh
# bench/conformance.sh -- the conformance suite against ingressd, nginx and
# HAProxy (Debian's), side by side; writes docs/conformance.md.
#
#	sh bench/conformance.sh [OUT.md]
#
# ingressd runs from build/ (make all) with replica-echo behind it.  nginx
# and HAProxy proxy to the suite's recording echo origin
# (tests/conformance/echo_server.py).  Every proxy gets the same limits
# (request line 8 KiB, header section 32 KiB, 100 fields, body 1 MiB) and
# header/body timeouts of 2 s, as far as its configuration can say so; the
# generated confs stay in the temp dir printed at the start.  Each server is
# started in the foreground of a background job and stopped by its pid.
# Needs nginx (nginx-light) and haproxy (apt-get install -y haproxy).

set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${1:-docs/conformance.md}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX") || exit 1
# nginx's workers run as nobody and write request bodies under it.
chmod 755 "$TMP"
PIDS=""
trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done' EXIT INT TERM
echo "conformance: work dir $TMP"

port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
	i=0
	while [ $i -lt 100 ]; do
		python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" \
		    2>/dev/null && return 0
		sleep 0.05
		i=$((i + 1))
	done
	echo "conformance: nothing listens on port $1" >&2
	return 1
}

LIMITS="--max-request-line 8192 --max-header-bytes 32768 --max-headers 100 \
    --max-body 1048576 --header-timeout 2 --body-timeout 2"
SUITE="python3 tests/conformance/run.py $LIMITS"

# --- ingressd ---------------------------------------------------------------
echo "== ingressd"
[ -x build/ingressd ] || make -j2 all >/dev/null || exit 1
$SUITE --ingressd --json "$TMP/ingressd.json" >"$TMP/ingressd.txt" 2>&1
tail -n 1 "$TMP/ingressd.txt"

# --- nginx ------------------------------------------------------------------
JSONS="$TMP/ingressd.json"
if command -v nginx >/dev/null 2>&1; then
	echo "== nginx"
	NPORT=$(port)
	EPORT=$(port)
	mkdir -p "$TMP/nginx"
	cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $TMP/nginx/body;
	proxy_temp_path $TMP/nginx/proxy;
	fastcgi_temp_path $TMP/nginx/fastcgi;
	uwsgi_temp_path $TMP/nginx/uwsgi;
	scgi_temp_path $TMP/nginx/scgi;
	client_header_timeout 2s;
	client_body_timeout 2s;
	client_max_body_size 1m;
	large_client_header_buffers 4 8k;
	upstream echo { server 127.0.0.1:$EPORT; keepalive 16; }
	server {
		listen 127.0.0.1:$NPORT;
		location / {
			proxy_pass http://echo;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host \$http_host;
		}
	}
}
EOF
	nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" \
	    >"$TMP/nginx/stdout" 2>&1 &
	NPID=$!
	PIDS="$PIDS $NPID"
	if wait_port "$NPORT"; then
		$SUITE --proxy "127.0.0.1:$NPORT" --echo-listen "127.0.0.1:$EPORT" \
		    --name nginx --json "$TMP/nginx.json" >"$TMP/nginx.txt" 2>&1
		tail -n 1 "$TMP/nginx.txt"
		JSONS="$JSONS $TMP/nginx.json"
	fi
	kill "$NPID" 2>/dev/null
	wait "$NPID" 2>/dev/null
fi

# --- HAProxy ----------------------------------------------------------------
if command -v haproxy >/dev/null 2>&1; then
	echo "== HAProxy"
	HPORT=$(port)
	EPORT=$(port)
	mkdir -p "$TMP/haproxy"
	# The head must fit in tune.bufsize minus tune.maxrewrite: 48 KiB
	# holds an 8 KiB request line and 32 KiB of fields.  HAProxy has no
	# body limit: the 413 is a rule on Content-Length.
	cat >"$TMP/haproxy/haproxy.cfg" <<EOF
global
	maxconn 4096
	tune.bufsize 49152
	tune.http.maxhdr 101
defaults
	mode http
	timeout connect 5s
	timeout client 2s
	timeout server 30s
	timeout http-request 2s
	timeout http-keep-alive 30s
frontend fe
	bind 127.0.0.1:$HPORT
	# hdr_val is a 32-bit integer: long values are caught by length.
	acl body_too_big req.hdr_val(content-length) gt 1048576
	acl body_too_big req.hdr(content-length),length gt 7
	http-request deny deny_status 413 if body_too_big
	default_backend be
backend be
	server echo 127.0.0.1:$EPORT
EOF
	haproxy -db -f "$TMP/haproxy/haproxy.cfg" >"$TMP/haproxy/log" 2>&1 &
	HPID=$!
	PIDS="$PIDS $HPID"
	if wait_port "$HPORT"; then
		$SUITE --proxy "127.0.0.1:$HPORT" --echo-listen "127.0.0.1:$EPORT" \
		    --name HAProxy --json "$TMP/haproxy.json" >"$TMP/haproxy.txt" 2>&1
		tail -n 1 "$TMP/haproxy.txt"
		JSONS="$JSONS $TMP/haproxy.json"
	fi
	kill "$HPID" 2>/dev/null
	wait "$HPID" 2>/dev/null
fi

python3 tests/conformance/table.py --versions \
    "nginx=$(nginx -v 2>&1 | sed 's/.*\///')" \
    "HAProxy=$(haproxy -v 2>/dev/null | sed -n '1s/HAProxy version \([^ ]*\).*/\1/p')" \
    -o "$OUT" $JSONS || exit 1
echo "conformance: wrote $OUT (raw results in $TMP)"
