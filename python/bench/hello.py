#!/usr/bin/env python3
"""hello.py -- the async hello of bench/python.sh: every request gets
"Hello world!" (text/plain), the Python twin of replica/examples/hello.c.

    python3 python/bench/hello.py [--sdk DIR] --listen 127.0.0.1:9000

--sdk DIR imports ingressd_replica from DIR (a copy of another version's
python/, for before/after runs); the default is this checkout's.
"""
import os
import sys

HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if "--sdk" in sys.argv[1:-1]:
    i = sys.argv.index("--sdk")
    HERE = sys.argv[i + 1]
    del sys.argv[i:i + 2]
sys.path.insert(0, HERE)

from ingressd_replica import serve  # noqa: E402


async def handler(req):
    return "Hello world!"


if __name__ == "__main__":
    sys.exit(serve(handler))
