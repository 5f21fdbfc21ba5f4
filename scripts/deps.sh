#!/bin/sh
# Install the Debian packages ingressd needs to build, run and test, if any
# are missing.  Idempotent and quiet when everything is there.
set -e
PKGS="build-essential pkg-config libevent-dev libjansson-dev check libsubunit-dev
node-llhttp libsystemd-dev python3 curl"
# Tools the tests and benchmarks drive (load generators, a reference proxy,
# a DNS server for the dns deployment tests: dnsmasq-base has no service).
PKGS="$PKGS wrk apache2-utils nginx-light dnsmasq-base clang libclang-rt-14-dev valgrind"
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
