#!/usr/bin/env python3
"""replica_app.py -- a Python replica for tests/integ/test_proxy_python.py, which
spawns it through ingressd.  It counts what happened to its handlers so a
test can see from outside what it cannot see in the HTTP response:

  /app/slow?ms=N       sleeps N ms (asyncio), then "slept N ms\\n"
  /app/stream?n=N&ms=M N chunks "chunk I\\n", one every M ms
  /app/raise           raises before answering (-> 500)
  /app/raise-mid       sends a chunk, then raises (-> the client's
                       response is cut off)
  /app/stats           {"pid", "active", "max_active", "cancelled",
                       "completed", "failed", "stream_closed"}
"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.realpath(__file__)))), "python"))

from ingressd_replica import Response, serve  # noqa: E402

STATS = {"pid": os.getpid(), "active": 0, "max_active": 0, "cancelled": 0,
         "completed": 0, "failed": 0, "stream_closed": 0}


async def chunks(n, delay):
    try:
        for i in range(1, n + 1):
            yield "chunk %d\n" % i
            await asyncio.sleep(delay)
    finally:
        STATS["stream_closed"] += 1


async def raise_mid():
    yield b"partial"
    await asyncio.sleep(0.05)
    raise RuntimeError("failing mid-stream, on purpose")


async def route(req):
    what = req.path[len("/app"):]
    ms = int(req.args.get("ms", "0"))
    if what == "/slow":
        await asyncio.sleep(ms / 1000.0)
        return "slept %d ms\n" % ms
    if what == "/stream":
        return Response(chunks(int(req.args.get("n", "3")), ms / 1000.0),
                        200, {"content-type": "text/plain"})
    if what == "/raise":
        raise RuntimeError("failing on purpose")
    if what == "/raise-mid":
        return raise_mid()
    if what == "/stats":
        return dict(STATS)
    return 404, "no such thing\n"


async def handler(req):
    if req.path == "/app/stats":
        return dict(STATS)
    STATS["active"] += 1
    STATS["max_active"] = max(STATS["max_active"], STATS["active"])
    try:
        out = await route(req)
        STATS["completed"] += 1
        return out
    except asyncio.CancelledError:
        STATS["cancelled"] += 1
        raise
    except Exception:
        STATS["failed"] += 1
        raise
    finally:
        STATS["active"] -= 1


if __name__ == "__main__":
    sys.exit(serve(handler))
