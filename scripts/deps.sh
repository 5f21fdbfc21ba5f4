#!/bin/sh
# scripts/deps.sh [run|check] -- install the Debian packages ingressd needs,
# if any are missing.  Idempotent and quiet when everything is there.
#   run    (default) build ingressd and run the default conf (`make run`)
#   check  that plus what the tests, fuzzers and benchmarks drive
#          (`make check`, asan, fuzz, bench)
set -e
set_=${1:-run}
case "$set_" in run|check) ;; *) echo "usage: deps.sh [run|check]" >&2; exit 2 ;; esac

# Build and run: a compiler, libevent, jansson, llhttp's C sources, nghttp2
# (the HTTP/2 front edge), c-ares (dns_srv deployments); the example
# replicas include a Python one; curl is the README's client.
PKGS="build-essential pkg-config libevent-dev libjansson-dev node-llhttp
libc-ares-dev libnghttp2-dev libssl-dev openssl python3 curl ca-certificates"
if [ "$set_" = check ]; then
	# Unit tests (Check), sanitizers and fuzzers (clang, its runtimes),
	# load generators and a reference proxy for bench, a DNS server for the
	# dns deployment tests (dnsmasq-base has no service), valgrind for the
	# wire smoke run, the metrics parser the integ tests use, etcd for the
	# fleet tests, HTTP/2 and gRPC peers (h2load, nghttpd, python3-h2,
	# grpcio), FastAPI under uvicorn as an HTTP replica, testssl.sh.
	PKGS="$PKGS check libsubunit-dev clang libclang-rt-14-dev valgrind
wrk apache2-utils nginx-light dnsmasq-base python3-prometheus-client
etcd-server etcd-client nghttp2-client nghttp2-server python3-h2 python3-grpcio
python3-fastapi python3-uvicorn
testssl.sh"
fi
[ -n "$INGRESSD_DEPS_EXTRA" ] && PKGS="$PKGS $INGRESSD_DEPS_EXTRA"

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in *"install ok installed"*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0

echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# policy-rc.d keeps Debian's nginx package from starting a system nginx on :80.
if [ -d /usr/sbin ] && [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
	$SUDO chmod 755 /usr/sbin/policy-rc.d
	trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends $missing
