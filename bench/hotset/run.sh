#!/bin/sh
# bench/hotset/run.sh -- a hot set of 10,000 names among 100,000 registered
# against one name, same wrk Lua either way (see hotset.py for what is
# measured and the environment it reads).  Results:
# $BUILD/bench-hotset/results.md.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
export BUILD
[ -x "$BUILD/ingressd" ] && [ -x "$BUILD/replica-hello" ] || {
	echo "bench/hotset: build first (make all)" >&2
	exit 1
}
command -v wrk >/dev/null || { echo "bench/hotset: wrk is missing" >&2; exit 1; }
exec "${PYTHON:-python3}" bench/hotset/hotset.py
