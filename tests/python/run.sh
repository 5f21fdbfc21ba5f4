#!/bin/sh
# tests/python/run.sh -- the Python replica SDK's tests (python/ingressd_replica):
#   test_vectors.py  the shared wire vectors (tests/vectors/frames.txt)
#   test_replica.py  the replica side frame by frame, and the examples
# Stdlib unittest; no build needed.  Extra arguments go to unittest (-v, -k).
# Prints "python: N passed, M failed" last; exit status 1 on any failure.
set -u
cd "$(dirname "$0")/../.." || exit 1
exec "${PYTHON:-python3}" - "$@" <<'PY'
import sys
import unittest

argv = sys.argv[1:]
verbosity = 2 if "-v" in argv else 1
patterns = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-k"]
loader = unittest.TestLoader()
if patterns:
	loader.testNamePatterns = ["*%s*" % p for p in patterns]
suite = loader.discover("tests/python", pattern="test_*.py",
    top_level_dir="tests/python")
res = unittest.TextTestRunner(verbosity=verbosity).run(suite)
bad = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
print("python: %d passed, %d failed%s" % (res.testsRun - bad -
    len(res.skipped), bad, ", %d skipped" % len(res.skipped)
    if res.skipped else ""))
sys.exit(0 if bad == 0 and res.testsRun > 0 else 1)
PY
