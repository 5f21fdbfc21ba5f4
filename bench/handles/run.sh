#!/bin/sh
# bench/handles/run.sh -- names at scale: 10,000 registered names on two
# local replica-hello processes (see handles.py for what is measured and
# the environment it reads).  Results: $BUILD/bench-handles/results.md.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
export BUILD
[ -x "$BUILD/ingressd" ] && [ -x "$BUILD/replica-hello" ] || {
	echo "bench/handles: build first (make all)" >&2
	exit 1
}
command -v wrk >/dev/null || { echo "bench/handles: wrk is missing" >&2; exit 1; }
exec "${PYTHON:-python3}" bench/handles/handles.py
