#!/bin/sh
# bench/fleet.sh -- a fleet on one etcd: INSTANCES ingressd (1 worker each)
# x NAMES names; propagation of a put, idle load on etcd, RSS, the cost of a
# compaction re-list.  See bench/fleet/fleet.py for what is measured and
# the environment it reads (QUICK=1 for a short run).  Results:
# $BUILD/bench-fleet/results.md.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
export BUILD
[ -x "$BUILD/ingressd" ] && [ -x "$BUILD/replica-hello" ] || {
	echo "bench/fleet: build first (make all)" >&2
	exit 1
}
command -v etcd >/dev/null || {
	echo "bench/fleet: etcd is missing (apt-get install etcd-server)" >&2
	exit 1
}
exec "${PYTHON:-/usr/bin/python3}" bench/fleet/fleet.py
