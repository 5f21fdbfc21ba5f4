#!/usr/bin/env python3
"""bench/sink.py -- the upload origin for the HTTP proxies in `make bench`.

Reads every request body to the end (Content-Length or chunked), counts the
bytes and answers 200 {"received": N}, keeping the connection alive.  nginx
`return 200` would answer before reading the body, so the proxies' upload
path would not be measured; this server reads it all, like replica-sleep's
?sink does behind ingressd.  One thread per connection, 1 MiB reads into
one buffer (the bytes are dropped): a few percent of a CPU at 1 GB/s.

  python3 bench/sink.py --port PORT      (127.0.0.1 only; stop it by pid)
"""

import argparse
import json
import socket
import sys
import threading

READ = 1 << 20
HEAD_MAX = 64 << 10


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
            body = json.dumps({"received": n}).encode() + b"\n"
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json"
                         b"\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(body), body))
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
