#!/bin/sh
# tests/tls/testssl.sh -- run testssl.sh (Debian package testssl.sh) against
# a TLS listener of a real ingressd with the default TLS settings, and fail
# if it offers SSLv2/SSLv3/TLS 1.0/TLS 1.1, a weak cipher, or is found
# vulnerable to a known attack.  Slow (a minute or two): not in make check.
#
#	sh tests/tls/testssl.sh            # uses $BUILD (default build)
#
# The full report goes to $BUILD/testssl/report.txt and report.json.
set -eu
BUILD=${BUILD:-build}
OUT="$BUILD/testssl"
command -v testssl >/dev/null || { echo "testssl.sh is not installed (apt-get install testssl.sh)" >&2; exit 2; }
[ -x "$BUILD/ingressd" ] || { echo "$BUILD/ingressd is not built" >&2; exit 2; }
mkdir -p "$OUT"
TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PLAIN=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$TMP/k.pem" -out "$TMP/c.pem" 2>/dev/null
cat > "$TMP/conf.json" <<JSON
{ "listen": ["127.0.0.1:$PLAIN", { "address": "127.0.0.1:$PORT",
  "tls": { "certificates": [ { "cert": "$TMP/c.pem", "key": "$TMP/k.pem" } ] } }],
  "runtime_dir": "$TMP/run", "routes": [ { "prefix": "/hello", "deployment": "hello" } ],
  "deployments": { "hello": { "spawn": { "command": ["$PWD/$BUILD/replica-hello"] } } } }
JSON
"$BUILD/ingressd" -c "$TMP/conf.json" 2>"$OUT/ingressd.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
for i in $(seq 50); do
	curl -sf "http://127.0.0.1:$PLAIN/-/healthz" >/dev/null && break
	sleep 0.1
done
rm -f "$OUT/report.json"
# -p protocols, -s standard cipher groups, -U vulnerabilities, -S server
# defaults; --sneaky keeps the user agent plain.  Bounded in time.
timeout 600 testssl --quiet --color 0 --warnings off -p -s -U -S \
    --jsonfile "$OUT/report.json" "127.0.0.1:$PORT" >"$OUT/report.txt" 2>&1 || true
python3 - "$OUT/report.json" <<'PY'
import json, sys
bad = []
for f in json.load(open(sys.argv[1])):
	i, sev, text = f["id"], f["severity"], f["finding"]
	if i in ("SSLv2", "SSLv3", "TLS1", "TLS1_1") and "not offered" not in text:
		bad.append("%s: %s" % (i, text))
	elif sev in ("HIGH", "CRITICAL", "MEDIUM") and not i.startswith("cert"):
		bad.append("%s (%s): %s" % (i, sev, text))
for b in bad:
	print("testssl: " + b)
print("testssl: %s" % ("FAIL" if bad else "ok: no SSLv2/3, TLS 1.0/1.1, weak ciphers or known vulnerabilities"))
sys.exit(1 if bad else 0)
PY
