#!/usr/bin/env python3
"""bad_replica -- a replica that misbehaves on purpose, for resilience tests.

    bad_replica.py --listen ADDR --mode MODE [--id ID] [--report FILE]
                   [--max-concurrency N] [--once] [--linger SECONDS]

It listens on ADDR (unix:/path or host:port), sends its HELLO, answers
PINGs, and then, depending on MODE, on the first REQUEST of a connection:

  bad-type        a frame of type 42                         (E_TYPE)
  bad-reserved    a PONG-sized frame with reserved != 0      (E_RESERVED)
  bad-status      RESPONSE with status 42                    (E_VALUE)
  over-credit     RESPONSE, then DATA of a window plus one byte
  request-frame   a REQUEST frame (only the proxy sends those)
  data-stream0    DATA on stream 0                           (E_STREAM)
  wrong-ids       every REQUEST: RESPONSE, DATA and END on a stream the
                  proxy never opened (to be ignored), then a good answer:
                  200 {"replica": ID, "stream": N}
  close-on-request
                  stops reading at the first REQUEST; after --linger
                  seconds it looks (MSG_PEEK) at what sits unread in its
                  socket, reports the REQUEST frames found there, and
                  closes without reading them
  silent          answers HELLO and PINGs only, never any REQUEST
  trailers        every REQUEST: RESPONSE 200 (no content-length),
                  DATA "trailers ahead", TRAILERS (x-sum: 42,
                  grpc-status: 0) -- a protocol error unless both
                  HELLOs said version 2 or more (--version)

Every mode answers PING with PONG until it misbehaves.  --once: stop
listening after the first connection ends (the proxy cannot come back).
--version N: the version its HELLO says (default: wire_client's).

Events go to --report (JSON lines, flushed at once), for the test to
read: {"event": "listening"}, {"event": "conn", "n": N},
{"event": "hello", "version": V} (the proxy's HELLO),
{"event": "request", "stream": S, "target": T}, {"event": "sent-bad",
"kind": K}, {"event": "peer-error", "code": C, "text": T, "stream": S},
{"event": "eof"}, {"event": "unread", "requests": [S...], "partial": P,
"bytes": B} (close-on-request), {"event": "closed"}.

Stdlib only; the frame codec is wire_client's.
"""
import argparse
import json
import os
import select
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import wire_client as wc  # noqa: E402

MODES = ("bad-type", "bad-reserved", "bad-status", "over-credit",
         "request-frame", "data-stream0", "wrong-ids", "close-on-request",
         "silent", "trailers")


class Reporter:
    def __init__(self, path):
        self.f = open(path, "a") if path else None
        self.lock = threading.Lock()

    def __call__(self, **ev):
        ev["t"] = time.monotonic()
        line = json.dumps(ev)
        with self.lock:
            if self.f:
                self.f.write(line + "\n")
                self.f.flush()
            sys.stderr.write("bad_replica: %s\n" % line)
            sys.stderr.flush()


class Conn:
    """One proxy connection, served in its own thread."""

    def __init__(self, srv, sock, n):
        self.srv = srv
        self.sock = sock
        self.n = n
        self.buf = bytearray()
        self.report = srv.report

    def send(self, data):
        self.sock.sendall(data)

    def read_frame(self, timeout=None):
        """The next whole frame (consumed), or None on EOF."""
        while True:
            result, f, need = wc.decode_frame(self.buf)
            if result == "ok":
                del self.buf[:need]
                return f
            if result != "NEED_MORE":
                raise wc.WireError(result, "from proxy")
            self.sock.settimeout(timeout)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None
            self.buf += chunk

    def read_one_frame_exactly(self):
        """Read exactly one frame's bytes from the socket (nothing more),
        so that whatever follows stays unread in the kernel."""
        hdr = self._recv_exact(wc.HEADER)
        if hdr is None:
            return None
        length = struct.unpack(">I", hdr[:4])[0]
        payload = self._recv_exact(length) if length else b""
        result, f, _ = wc.decode_frame(hdr + payload)
        if result != "ok":
            raise wc.WireError(result, "from proxy")
        return f

    def _recv_exact(self, n):
        out = bytearray()
        while len(out) < n:
            self.sock.settimeout(None)
            d = self.sock.recv(n - len(out))
            if not d:
                return None
            out += d
        return bytes(out)

    def hello(self):
        self.send(wc.encode_hello(self.srv.version, self.srv.max_concurrency,
                                  self.srv.deployment, self.srv.rid))

    def serve(self):
        try:
            self.hello()
            if self.srv.mode == "close-on-request":
                self.serve_close_on_request()
            else:
                self.serve_frames()
        except (OSError, wc.WireError) as e:
            self.report(event="conn-error", error=repr(e))
        finally:
            try:
                self.sock.close()
            except OSError:
                pass
            self.report(event="closed", n=self.n)
            self.srv.conn_done()

    def on_conn_frame(self, f):
        """Stream-0 frames every mode handles alike; True if handled."""
        if f.type == wc.PING:
            self.send(wc.encode_frame(wc.PONG, f.payload))
            return True
        if f.type == wc.HELLO:
            self.report(event="hello", version=wc.decode_payload(f).version)
            return True
        if f.type == wc.ERROR:
            code, text = wc.decode_payload(f)
            self.report(event="peer-error", code=code, text=text,
                        stream=f.stream)
            return True
        return f.type in (wc.HELLO, wc.WINDOW, wc.GOAWAY, wc.CANCEL,
                          wc.DATA, wc.END)

    def serve_frames(self):
        while True:
            f = self.read_frame()
            if f is None:
                self.report(event="eof")
                return
            if f.type == wc.REQUEST:
                head = wc.decode_payload(f)
                self.report(event="request", stream=f.stream,
                            target=head["target"])
                if self.srv.mode == "silent":
                    continue
                if self.srv.mode == "wrong-ids":
                    self.answer_with_strays(f.stream)
                    continue
                if self.srv.mode == "trailers":
                    self.answer_with_trailers(f.stream)
                    continue
                self.misbehave(f.stream)
                continue
            self.on_conn_frame(f)

    def answer_with_strays(self, stream):
        stray = stream + 1000
        status = struct.pack(">HH", 200, 0)
        self.send(wc.encode_frame(wc.RESPONSE, status, 0, stray) +
                  wc.encode_data(stray, b"stray") +
                  wc.encode_frame(wc.END, b"", 0, stray))
        body = json.dumps({"replica": self.srv.rid,
                           "stream": stream}).encode()
        fields = wc.encode_fields([("content-type", "application/json"),
                                   ("content-length", str(len(body)))])
        self.send(wc.encode_frame(wc.RESPONSE, struct.pack(">H", 200) +
                                  fields, 0, stream) +
                  wc.encode_data(stream, body, end=True))

    def answer_with_trailers(self, stream):
        fields = wc.encode_fields([("content-type", "text/plain")])
        trailers = wc.encode_fields([("x-sum", "42"), ("grpc-status", "0")])
        self.send(wc.encode_frame(wc.RESPONSE, struct.pack(">H", 200) +
                                  fields, 0, stream) +
                  wc.encode_data(stream, b"trailers ahead") +
                  wc.encode_frame(wc.TRAILERS, trailers, 0, stream))
        self.report(event="sent-trailers", stream=stream)

    def misbehave(self, stream):
        kind = self.srv.mode
        if kind == "bad-type":
            frame = struct.pack(">IBBHI", 0, 42, 0, 0, stream)
        elif kind == "bad-reserved":
            frame = struct.pack(">IBBHI", 8, wc.PONG, 0, 1, 0) + b"\0" * 8
        elif kind == "bad-status":
            frame = wc.encode_frame(wc.RESPONSE, struct.pack(">HH", 42, 0),
                                    0, stream)
        elif kind == "over-credit":
            frame = wc.encode_frame(wc.RESPONSE, struct.pack(">HH", 200, 0),
                                    0, stream) + \
                wc.encode_data(stream, b"z" * (wc.INITIAL_WINDOW + 1))
        elif kind == "request-frame":
            frame = wc.encode_request(stream, "GET", "/")
        elif kind == "data-stream0":
            frame = struct.pack(">IBBHI", 3, wc.DATA, 0, 0, 0) + b"abc"
        else:
            raise ValueError(kind)
        self.send(frame)
        self.report(event="sent-bad", kind=kind, stream=stream)

    def serve_close_on_request(self):
        """Consume frames one by one (HELLO, PINGs) until a REQUEST
        header is seen with MSG_PEEK; from then on read nothing."""
        while True:
            hdr = self.peek(wc.HEADER)
            if hdr is None:
                self.report(event="eof")
                return
            if hdr[4] == wc.REQUEST:
                break
            f = self.read_one_frame_exactly()
            if f is None:
                self.report(event="eof")
                return
            self.on_conn_frame(f)
        self.report(event="request-seen")
        time.sleep(self.srv.linger)
        data = self.peek_all()
        streams, partial = unread_requests(data)
        self.report(event="unread", requests=streams, partial=partial,
                    bytes=len(data))
        # Unread data in the socket: close() resets the connection.

    def peek(self, n):
        while True:
            self.sock.settimeout(None)
            try:
                d = self.sock.recv(n, socket.MSG_PEEK)
            except ConnectionResetError:
                return None
            if not d:
                return None
            if len(d) >= n:
                return d
            time.sleep(0.005)

    def peek_all(self):
        """Everything the kernel holds for us, without consuming it."""
        size = 1 << 16
        while True:
            self.sock.setblocking(False)
            try:
                d = self.sock.recv(size, socket.MSG_PEEK)
            except BlockingIOError:
                d = b""
            finally:
                self.sock.setblocking(True)
            if len(d) < size:
                return d
            size *= 2


def unread_requests(data):
    """(stream ids of the REQUEST frames that start in data, started
    frames whose header is incomplete)."""
    streams, i = [], 0
    while i + wc.HEADER <= len(data):
        length, ftype, _flags, _res, stream = struct.unpack_from(
            ">IBBHI", data, i)
        if ftype == wc.REQUEST:
            streams.append(stream)
        i += wc.HEADER + length
    return streams, 1 if 0 < len(data) - i < wc.HEADER else 0


class Server:
    def __init__(self, args):
        self.mode = args.mode
        self.rid = args.id
        self.deployment = args.deployment
        self.max_concurrency = args.max_concurrency
        self.version = args.version
        self.once = args.once
        self.linger = args.linger
        self.report = Reporter(args.report)
        self.lock = threading.Lock()
        self.nconn = 0
        self.listening = True
        self.lsock = self.listen(args.listen)

    def listen(self, addr):
        if addr.startswith("unix:"):
            path = addr[5:]
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            self.path = path
        else:
            host, port = addr.rsplit(":", 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, int(port)))
            self.path = None
        s.listen(64)
        return s

    def conn_done(self):
        if self.once:
            self.stop_listening()

    def stop_listening(self):
        with self.lock:
            if not self.listening:
                return
            self.listening = False
        try:
            self.lsock.close()
        except OSError:
            pass
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        self.report(event="stopped-listening")

    def run(self):
        self.report(event="listening", mode=self.mode)
        while self.listening:
            try:
                r, _, _ = select.select([self.lsock], [], [], 0.1)
            except (OSError, ValueError):
                break
            if not r or not self.listening:
                continue
            try:
                sock, _ = self.lsock.accept()
            except OSError:
                continue
            self.nconn += 1
            self.report(event="conn", n=self.nconn)
            c = Conn(self, sock, self.nconn)
            threading.Thread(target=c.serve, daemon=True).start()
        # Stay alive (connections may still be served) until killed.
        while True:
            time.sleep(3600)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--mode", required=True, choices=MODES)
    ap.add_argument("--id", default="bad-replica")
    ap.add_argument("--deployment", default="")
    ap.add_argument("--max-concurrency", type=int, default=1000)
    ap.add_argument("--report")
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--linger", type=float, default=1.0)
    ap.add_argument("--version", type=int, default=wc.VERSION)
    args = ap.parse_args(argv[1:])
    srv = Server(args)
    try:
        srv.run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
