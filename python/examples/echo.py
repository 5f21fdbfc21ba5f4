#!/usr/bin/env python3
"""echo.py -- a replica that describes the request it got: the Python twin
of replica/examples/echo.c, answering the same JSON.

200 application/json:
  {"method","path","query","headers":{lowercased name: value},
   "body_length","body","replica","deployment","request_id","conn_pings"}
"body" is there only when the body is at most 65536 bytes of valid UTF-8.
"deployment" is the REQUEST's, or the replica's when the REQUEST's is empty.
Repeated headers are joined with ", ".

Query "raw=1": 200 application/octet-stream, no content-length, sent as soon
as the head arrives, then every body piece mirrored back as it arrives.
Query "status=NNN" sets the status in both modes.

Run by ingressd (conf/python.json), or by hand:
    python3 python/examples/echo.py --listen 127.0.0.1:9000
"""
import os
import sys

# The package lives next to this directory; an installed copy is not needed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(
    __file__))))

from ingressd_replica import Response, serve  # noqa: E402

BODY_MAX = 65536


def query_get(query, key):
    """The raw value of key in a query string (no percent-decoding), as
    replica_query_get() does it; None when absent."""
    for part in query.split("&"):
        k, sep, v = part.partition("=")
        if k == key:
            return v if sep else ""
    return None


def text(s):
    """A wire string (decoded as Latin-1) as JSON text: UTF-8 when it is
    UTF-8, else its bytes taken as Latin-1, like echo.c."""
    if s.isascii():
        return s
    b = s.encode("latin-1")
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return s


async def mirror(req):
    async for chunk in req:
        yield chunk


async def handler(req):
    status = 200
    v = query_get(req.query, "status")
    if v is not None and v.isdigit() and 100 <= int(v) <= 999:
        status = int(v)
    if query_get(req.query, "raw") == "1":
        return Response(mirror(req), status,
                        [("content-type", "application/octet-stream")])
    kept = []
    have = 0
    async for chunk in req:
        if have < BODY_MAX:
            kept.append(chunk[:BODY_MAX - have])
            have += len(kept[-1])
    headers = {}
    for name, value in req.headers.items():
        name = name.lower()
        value = text(value)
        headers[name] = headers[name] + ", " + value if name in \
            headers else value
    out = {
        "method": text(req.method),
        "path": text(req.path),
        "query": text(req.query),
        "headers": headers,
        "body_length": req.body_length,
    }
    if req.body_length <= BODY_MAX:
        try:
            out["body"] = b"".join(kept).decode("utf-8")
        except UnicodeDecodeError:
            pass
    out["replica"] = req.replica_id
    out["deployment"] = text(req.deployment or req.replica.deployment)
    out["request_id"] = text(req.request_id)
    out["conn_pings"] = req.conn_pings
    return status, None, out


if __name__ == "__main__":
    sys.exit(serve(handler))
