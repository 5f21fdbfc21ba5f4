#!/usr/bin/env python3
"""bench/sink.py -- the upload origin for the HTTP proxies in `make bench`,
and their chunked download origin.

Reads every request body to the end (Content-Length or chunked), counts the
bytes and answers 200 {"received": N}, keeping the connection alive.  nginx
`return 200` would answer before reading the body, so the proxies' upload
path would not be measured; this server reads it all, like replica-sleep's
?sink does behind ingressd.  One thread per connection, 1 MiB reads into
one buffer (the bytes are dropped): a few percent of a CPU at 1 GB/s.

`GET /source?bytes=N` answers 200 with N bytes of 'x' and
Transfer-Encoding: chunked (no Content-Length), like replica-sleep's
?source=N&chunked=1 behind ingressd: 256 KiB chunks, prebuilt, four to a
sendall(), so the proxies, not Python, set the rate.

  python3 bench/sink.py --port PORT      (127.0.0.1 only; stop it by pid)
"""

import argparse
import json
import socket
import sys
import threading
import urllib.parse

READ = 1 << 20
HEAD_MAX = 64 << 10
CHUNK = 256 << 10
SOURCE_MAX = 1 << 40
# Four whole chunks, framing included: one sendall() each.
BLOCK = (b"%x\r\n" % CHUNK + b"x" * CHUNK + b"\r\n") * 4


class Bad(Exception):
    pass


def drain(f, n, scratch):
    """Read exactly n bytes from f into scratch; False on early EOF."""
    mv = memoryview(scratch)
    while n > 0:
        got = f.readinto(mv[:min(n, READ)])
        if not got:
            return False
        n -= got
    return True


def read_head(f):
    """The request line and a lower-cased header dict; None at EOF."""
    line = f.readline(HEAD_MAX)
    while line in (b"\r\n", b"\n"):
        line = f.readline(HEAD_MAX)
    if not line:
        return None
    hdrs = {}
    size = len(line)
    while True:
        h = f.readline(HEAD_MAX)
        size += len(h)
        if not h or size > HEAD_MAX:
            raise Bad("head too long or cut")
        if h in (b"\r\n", b"\n"):
            break
        k, _, v = h.partition(b":")
        hdrs[k.strip().lower()] = v.strip()
    return line, hdrs


def read_chunked(f, scratch):
    total = 0
    while True:
        line = f.readline(1024)
        if not line:
            raise Bad("cut in chunk size")
        size = int(line.split(b";")[0].strip(), 16)
        if size == 0:
            while f.readline(HEAD_MAX) not in (b"\r\n", b"\n", b""):
                pass			# trailers
            return total
        if not drain(f, size, scratch):
            raise Bad("cut in chunk")
        total += size
        f.readline(16)			# CRLF after the chunk


def source_bytes(line):
    """N from "GET /source?bytes=N HTTP/1.1"; None if not such a request,
    -1 if N is bad."""
    parts = line.split()
    if len(parts) != 3 or parts[0] != b"GET":
        return None
    url = urllib.parse.urlsplit(parts[1].decode("latin-1"))
    if url.path != "/source":
        return None
    v = urllib.parse.parse_qs(url.query).get("bytes", [""])[0]
    if not v.isdigit() or int(v) > SOURCE_MAX:
        return -1
    return int(v)


def send_source(conn, n):
    """N bytes of 'x', chunked: whole blocks, then the rest in one write."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream"
                 b"\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(n // (4 * CHUNK)):
        conn.sendall(BLOCK)
    n %= 4 * CHUNK
    tail = []
    while n > 0:
        k = min(n, CHUNK)
        tail.append(b"%x\r\n%s\r\n" % (k, b"x" * k))
        n -= k
    conn.sendall(b"".join(tail) + b"0\r\n\r\n")


def serve(conn):
    scratch = bytearray(READ)
    f = conn.makefile("rb", buffering=READ)
    try:
        while True:
            got = read_head(f)
            if got is None:
                return
            line, hdrs = got
            if b"chunked" in hdrs.get(b"transfer-encoding", b"").lower():
                n = read_chunked(f, scratch)
            else:
                n = int(hdrs.get(b"content-length", b"0"))
                if not drain(f, n, scratch):
                    return
            want = source_bytes(line)
            if want is not None and want >= 0:
                send_source(conn, want)
            else:
                status = b"400 Bad Request" if want is not None \
                    else b"200 OK"
                body = json.dumps({"received": n} if want is None else
                                  {"error": "bytes must be 0..2^40"})
                body = body.encode() + b"\n"
                conn.sendall(b"HTTP/1.1 %s\r\nContent-Type: "
                             b"application/json\r\nContent-Length: %d"
                             b"\r\n\r\n%s" % (status, len(body), body))
            if hdrs.get(b"connection", b"").lower() == b"close" or \
                    line.rstrip().endswith(b"HTTP/1.0"):
                return
    except (OSError, ValueError, Bad) as e:
        print("sink: %s" % e, file=sys.stderr)
    finally:
        f.close()
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", args.port))
    ls.listen(128)
    while True:
        conn, _ = ls.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
