#!/usr/bin/env python3
"""wire_client -- a small, strict client for the ingressd wire protocol v2.

It plays the proxy's side against a replica (docs/protocol.md), for tests:

    from wire_client import WireClient
    c = WireClient.connect("unix:/tmp/r.sock")      # or "127.0.0.1:9000"
    peer = c.hello()                 # sends our HELLO, returns the replica's
    c.ping()                         # PING, waits for the matching PONG
    c.request(1, "GET", "/x?y=1", [("host", "a")])  # FLAG_END: no body
    r = c.collect(1)                 # Response(status, headers, body, ...)

Flow control (src/wire.h): request() and send_body() never send body
beyond the credit the replica granted (they wait for its WINDOW frames);
data() sends what it is given, so tests can break the rule on purpose.
DATA from the replica beyond the credit we granted (the initial window plus
every WINDOW sent with send_frame() or grant()) raises WireError("E_CREDIT").
With auto_window set, received DATA is credited back half a window at a time
as soon as it arrives; by default the test grants credit itself.  WINDOW
frames are parked with the stream's other frames, like in a plain read.

Frames the replica sends are decoded with the same checks as src/wire.c, so
a replica that emits a bad frame fails the test (WireError).  Stdlib only.

Run as a script:
    wire_client.py vectors [tests/vectors/frames.txt]   check this decoder
    wire_client.py smoke [build]   end-to-end checks of the example replicas
"""
import collections
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

VERSION = 2
VERSION_TRAILERS = 2    # the first version with TRAILERS
HEADER = 12
MAX_PAYLOAD = 1 << 20
MAX_DATA = 256 << 10
MAX_FIELDS = 256
MAX_NAME = 255
MAX_TEXT = 4096
INITIAL_WINDOW = 256 << 10

HELLO, PING, PONG, REQUEST, RESPONSE, DATA, END, CANCEL, ERROR, GOAWAY, \
    WINDOW, TRAILERS = range(1, 13)
TYPE_MAX = TRAILERS
TYPE_NAMES = {HELLO: "HELLO", PING: "PING", PONG: "PONG",
              REQUEST: "REQUEST", RESPONSE: "RESPONSE", DATA: "DATA",
              END: "END", CANCEL: "CANCEL", ERROR: "ERROR",
              GOAWAY: "GOAWAY", WINDOW: "WINDOW", TRAILERS: "TRAILERS"}
FLAG_END = 0x01

CODE_NONE, CODE_PROTOCOL, CODE_INTERNAL, CODE_REFUSED, CODE_CANCEL, \
    CODE_TIMEOUT, CODE_VERSION, CODE_SHUTDOWN, CODE_OVERLOAD = range(9)

Frame = collections.namedtuple("Frame", "type flags stream payload")
Hello = collections.namedtuple("Hello",
                               "version max_concurrency deployment replica_id")
Response = collections.namedtuple(
    "Response", "status headers body frames error ended trailers",
    defaults=(None,))


class WireError(Exception):
    """A decode failure; .result is the name used in frames.txt."""

    def __init__(self, result, msg=""):
        super().__init__("%s%s" % (result, ": " + msg if msg else ""))
        self.result = result


# --- encoding ---

def s8(b):
    b = b.encode() if isinstance(b, str) else b
    assert len(b) <= 255
    return struct.pack(">B", len(b)) + b


def s16(b):
    b = b.encode() if isinstance(b, str) else b
    assert len(b) <= 65535
    return struct.pack(">H", len(b)) + b


def encode_frame(ftype, payload=b"", flags=0, stream=0):
    return struct.pack(">IBBHI", len(payload), ftype, flags, 0,
                       stream) + payload


def encode_fields(fields):
    out = struct.pack(">H", len(fields))
    for name, value in fields:
        out += s8(name) + s16(value)
    return out


def encode_hello(version=VERSION, max_concurrency=0, deployment="",
                 replica_id="ingressd"):
    return encode_frame(HELLO, struct.pack(">HHI", version, 0,
                                           max_concurrency) +
                        s8(deployment) + s8(replica_id))


def encode_request(stream, method, target, headers=(), deployment="",
                   request_id="", deadline_ms=0, end=True):
    payload = (s8(method) + s16(target) + s8(deployment) + s8(request_id) +
               struct.pack(">I", deadline_ms) + encode_fields(list(headers)))
    return encode_frame(REQUEST, payload, FLAG_END if end else 0, stream)


def encode_data(stream, data, end=False):
    return encode_frame(DATA, bytes(data), FLAG_END if end else 0, stream)


# --- decoding (same checks, same order as src/wire.c) ---

_FIXED = {PING: 8, PONG: 8, CANCEL: 4, WINDOW: 4, END: 0}
_NEEDS_STREAM = (REQUEST, RESPONSE, DATA, END, CANCEL, TRAILERS)
_NO_STREAM = (HELLO, PING, PONG, GOAWAY)


def decode_frame(buf):
    """(result, frame or None, need) for the first frame in buf."""
    if len(buf) < HEADER:
        return "NEED_MORE", None, HEADER
    length, ftype, flags, reserved, stream = struct.unpack_from(">IBBHI",
                                                                buf)
    if not 1 <= ftype <= TYPE_MAX:
        return "E_TYPE", None, HEADER
    if flags & ~FLAG_END or (flags & FLAG_END and
                             ftype not in (REQUEST, RESPONSE, DATA)):
        return "E_FLAGS", None, HEADER
    if reserved:
        return "E_RESERVED", None, HEADER
    if length > MAX_PAYLOAD:
        return "E_TOO_LARGE", None, HEADER
    if (ftype in _NEEDS_STREAM and stream == 0) or \
            (ftype in _NO_STREAM and stream != 0):
        return "E_STREAM", None, HEADER
    fixed = _FIXED.get(ftype)
    if fixed is not None and length < fixed:
        return "E_SHORT", None, HEADER
    if fixed is not None and length > fixed:
        return "E_TRAILING", None, HEADER
    if ftype == DATA and length == 0 and not flags & FLAG_END:
        return "E_EMPTY", None, HEADER
    need = HEADER + length
    if len(buf) < need:
        return "NEED_MORE", None, need
    return "ok", Frame(ftype, flags, stream, bytes(buf[HEADER:need])), need


class _Cur:
    def __init__(self, b):
        self.b, self.i = b, 0

    def take(self, n):
        if len(self.b) - self.i < n:
            raise WireError("E_SHORT")
        v = self.b[self.i:self.i + n]
        self.i += n
        return v

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def s(self, wide, limit, nonempty=False):
        n = self.u16() if wide else self.take(1)[0]
        if n > limit:
            raise WireError("E_LIMIT")
        v = self.take(n)
        if nonempty and n == 0:
            raise WireError("E_EMPTY")
        return v.decode("latin-1")

    def fields(self, cap=MAX_FIELDS):
        n = self.u16()
        if n > MAX_FIELDS or n > cap:
            raise WireError("E_LIMIT")
        return [(self.s(0, MAX_NAME, True), self.s(1, 65535))
                for _ in range(n)]

    def done(self):
        if self.i != len(self.b):
            raise WireError("E_TRAILING")


def decode_payload(f):
    """The payload of an accepted frame, decoded by type (or WireError)."""
    c = _Cur(f.payload)
    if f.type == HELLO:
        version = c.u16()
        if version == 0:
            raise WireError("E_VALUE")
        if c.u16() != 0:
            raise WireError("E_RESERVED")
        v = Hello(version, c.u32(), c.s(0, MAX_NAME), c.s(0, MAX_NAME))
    elif f.type in (PING, PONG):
        v = c.take(8)
    elif f.type == REQUEST:
        v = dict(method=c.s(0, 255, True), target=c.s(1, 65535, True),
                 deployment=c.s(0, MAX_NAME), request_id=c.s(0, 255),
                 deadline_ms=c.u32())
        v["fields"] = c.fields()
    elif f.type == RESPONSE:
        status = c.u16()
        if not 100 <= status <= 999:
            raise WireError("E_VALUE")
        v = (status, c.fields())
    elif f.type == CANCEL:
        v = c.u32()
    elif f.type == ERROR:
        v = (c.u32(), c.s(1, MAX_TEXT))
    elif f.type == GOAWAY:
        v = (c.u32(), c.u32(), c.s(1, MAX_TEXT))
    elif f.type == WINDOW:
        v = c.u32()
        if v == 0:
            raise WireError("E_VALUE")
    elif f.type == TRAILERS:
        v = c.fields()
    else:
        return f.payload          # DATA, END: the header said it all
    c.done()
    return v


def check_vector(data):
    """The result name a conforming decoder gives for one vector."""
    result, f, need = decode_frame(data)
    if result != "ok":
        return result
    if need != len(data):
        return "E_VECTOR_SIZE"
    try:
        decode_payload(f)
    except WireError as e:
        return e.result
    return "ok"


# --- the client ---

class WireClient:
    def __init__(self, sock, timeout=5.0):
        self.sock = sock
        self.timeout = timeout
        self.buf = bytearray()
        self.pending = collections.defaultdict(list)   # stream -> frames
        self.conn_frames = []     # stream-0 frames not yet asked for
        self.peer_hello = None
        self.eof = False
        self.auto_window = False
        self.windows = []         # (stream, increment) received
        self.send_credit = collections.defaultdict(lambda: INITIAL_WINDOW)
        self.recv_credit = collections.defaultdict(lambda: INITIAL_WINDOW)
        self.consumed = collections.defaultdict(int)

    @classmethod
    def connect(cls, addr, timeout=5.0):
        """addr: 'unix:/path', a path starting with '/', or 'host:port'."""
        if addr.startswith("unix:") or addr.startswith("/"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            s.connect(addr[5:] if addr.startswith("unix:") else addr)
        else:
            host, port = addr.rsplit(":", 1)
            s = socket.create_connection((host.strip("[]"), int(port)),
                                         timeout=timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(s, timeout)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def send_frame(self, ftype, payload=b"", flags=0, stream=0):
        if ftype == WINDOW and stream != 0 and len(payload) == 4:
            self.recv_credit[stream] += struct.unpack(">I", payload)[0]
        self.send(encode_frame(ftype, payload, flags, stream))

    def recv_frame(self, timeout=None):
        """The next frame from the peer; None on EOF.  Raises WireError
        on a bad frame, socket.timeout when nothing comes in time."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            result, f, need = decode_frame(self.buf)
            if result == "ok":
                del self.buf[:need]
                v = decode_payload(f)
                self._credit(f, v)
                return f
            if result != "NEED_MORE":
                raise WireError(result, "from peer")
            if self.eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no frame in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                self.eof = True
                if self.buf:
                    raise WireError("NEED_MORE", "EOF inside a frame")
            self.buf += chunk

    def _credit(self, f, v):
        """Flow-control bookkeeping for a frame just received."""
        if f.type == WINDOW and f.stream != 0:
            self.send_credit[f.stream] += v
            self.windows.append((f.stream, v))
        elif f.type == DATA:
            if len(f.payload) > self.recv_credit[f.stream]:
                raise WireError("E_CREDIT", "stream %d: %d bytes, credit %d"
                                % (f.stream, len(f.payload),
                                   self.recv_credit[f.stream]))
            self.recv_credit[f.stream] -= len(f.payload)
            if self.auto_window and not f.flags & FLAG_END:
                self.grant(f.stream, len(f.payload))

    def grant(self, stream, n, force=False):
        """Count n bytes as consumed; send WINDOW once half a window is
        (or at once with force)."""
        self.consumed[stream] += n
        if self.consumed[stream] >= INITIAL_WINDOW // 2 or \
                (force and self.consumed[stream]):
            self.send_frame(WINDOW, struct.pack(">I", self.consumed[stream]),
                            0, stream)
            self.consumed[stream] = 0

    def _next(self, want, timeout=None):
        """Read until want(frame) is true; park the other frames."""
        while True:
            f = self.recv_frame(timeout)
            if f is None:
                return None
            if want(f):
                return f
            if f.stream == 0:
                self.conn_frames.append(f)
            else:
                self.pending[f.stream].append(f)

    def hello(self, version=VERSION, deployment="", replica_id="ingressd"):
        """Send our HELLO and return the peer's (decoded).  The connection
        then speaks min(version, the peer's): self.version."""
        self.sent_version = version
        self.send(encode_hello(version, 0, deployment, replica_id))
        return self.read_hello()

    @property
    def version(self):
        """The agreed version (ours until the peer's HELLO is in)."""
        ours = getattr(self, "sent_version", VERSION)
        if self.peer_hello is None:
            return ours
        return min(ours, self.peer_hello.version)

    def read_hello(self, timeout=None):
        if self.peer_hello is None:
            f = self._next(lambda f: True, timeout)
            if f is None or f.type != HELLO:
                raise WireError("E_SEQUENCE", "first frame is %r" % (f,))
            self.peer_hello = decode_payload(f)
        return self.peer_hello

    def ping(self, opaque=None, timeout=None):
        opaque = opaque or os.urandom(8)
        self.send_frame(PING, opaque)
        f = self._next(lambda f: f.type == PONG, timeout)
        if f is None or f.payload != opaque:
            raise WireError("E_PONG", "no matching PONG: %r" % (f,))
        return opaque

    def request(self, stream, method, target, headers=(), body=None,
                deployment="", request_id="", deadline_ms=0, end=None):
        """REQUEST, then the body as DATA frames (the last with FLAG_END).
        end=False leaves the request open for data()/end() later."""
        if end is None:
            end = True
        no_body = not body
        self.send_credit[stream] = INITIAL_WINDOW
        self.recv_credit[stream] = INITIAL_WINDOW
        self.send(encode_request(stream, method, target, headers,
                                 deployment, request_id, deadline_ms,
                                 end and no_body))
        if body:
            self.send_body(stream, body, end)

    def data(self, stream, data, end=False):
        """One DATA frame, credit or not (the caller's business)."""
        self.send_credit[stream] -= len(data)
        self.send(encode_data(stream, data, end))

    def send_body(self, stream, data, end=False, timeout=None):
        """DATA frames as far as the replica's credit goes; waits for its
        WINDOW frames for the rest (frames read meanwhile are parked)."""
        data = bytes(data)
        if not data:
            self.send(encode_data(stream, b"", end))
            return
        while data:
            while self.send_credit[stream] <= 0:
                if self._next(lambda f: f.type == WINDOW and
                              f.stream == stream, timeout) is None:
                    raise WireError("E_EOF", "EOF waiting for credit")
            n = min(len(data), self.send_credit[stream], MAX_DATA)
            self.data(stream, data[:n], end and n == len(data))
            data = data[n:]

    def end(self, stream):
        self.send_frame(END, b"", 0, stream)

    def cancel(self, stream, code=CODE_CANCEL):
        self.send_frame(CANCEL, struct.pack(">I", code), 0, stream)

    def frames_for(self, stream, timeout=None):
        """The next frame on a stream (parked ones first); None on EOF."""
        if self.pending[stream]:
            return self.pending[stream].pop(0)
        return self._next(lambda f: f.stream == stream, timeout)

    def collect(self, stream, timeout=None):
        """Frames of one response until END, FLAG_END, TRAILERS or ERROR."""
        status, headers, body, frames, error = None, [], bytearray(), [], None
        trailers = None
        ended = False
        while not ended:
            f = self.frames_for(stream, timeout)
            if f is None:
                break
            frames.append(f)
            if f.type == RESPONSE:
                status, headers = decode_payload(f)
            elif f.type == DATA:
                body += f.payload
            elif f.type == ERROR:
                error = decode_payload(f)
                ended = True
            elif f.type == TRAILERS:
                if status is None or self.version < VERSION_TRAILERS:
                    raise WireError("E_SEQUENCE", "TRAILERS %s" % (
                        "before RESPONSE" if status is None else
                        "on a v%d connection" % self.version))
                trailers = decode_payload(f)
                ended = True
            if f.type == END or f.flags & FLAG_END:
                ended = True
        return Response(status, headers, bytes(body), frames, error, ended,
                        trailers)


# --- script modes ---

def run_vectors(path):
    bad = n = 0
    with open(path) as fp:
        for line in fp:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, hexdata, expected = line.split("\t")
            got = check_vector(bytes.fromhex(hexdata))
            n += 1
            if got != expected:
                bad += 1
                print("FAIL %s: got %s, want %s" % (name, got, expected))
    print("%d vectors, %d failed" % (n, bad))
    return 1 if bad else 0


class _Replica:
    """An example replica on a private unix socket."""

    def __init__(self, binary, *args):
        self.dir = tempfile.mkdtemp(prefix="wire-smoke-")
        self.path = os.path.join(self.dir, "r.sock")
        env = dict(os.environ, INGRESSD_LISTEN="unix:" + self.path,
                   INGRESSD_REPLICA_ID="smoke-1",
                   INGRESSD_DEPLOYMENT="smoke")
        # WIRE_SMOKE_WRAP="valgrind -q --leak-check=full --error-exitcode=9"
        wrap = os.environ.get("WIRE_SMOKE_WRAP", "").split()
        self.proc = subprocess.Popen(wrap + [binary] + list(args), env=env)
        self.terminated = False
        for _ in range(1000):      # the file exists at bind(), before listen()
            try:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.connect(self.path)
                probe.close()
                break
            except OSError:
                probe.close()
                time.sleep(0.01)
        else:
            self.stop()
            raise RuntimeError("%s did not listen" % binary)

    def client(self):
        c = WireClient.connect("unix:" + self.path)
        c.auto_window = True
        c.hello()
        c.ping()
        return c

    def terminate(self):
        """SIGTERM once: a second one during exit would kill it."""
        if not self.terminated:
            self.terminated = True
            self.proc.terminate()

    def stop(self):
        self.terminate()
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        gone = not os.path.exists(self.path)
        try:
            os.rmdir(self.dir)
        except OSError:
            pass
        return rc, gone


def _smoke_hello(build):
    r = _Replica(os.path.join(build, "replica-hello"))
    try:
        with r.client() as c:
            assert c.peer_hello.replica_id == "smoke-1", c.peer_hello
            assert c.peer_hello.deployment == "smoke"
            for s in (1, 3, 5):
                c.request(s, "GET", "/")
            for s in (1, 3, 5):
                resp = c.collect(s)
                assert resp.status == 200 and resp.body == b"Hello world!"
                assert [f.type for f in resp.frames] == [RESPONSE, DATA]
                assert resp.frames[1].flags == FLAG_END
            # Answered before the body: the stream is over, what still
            # comes for it is ignored.
            c.request(7, "POST", "/", end=False)
            assert c.collect(7).body == b"Hello world!"
            c.data(7, b"body")
            c.end(7)
            c.cancel(7)
            c.ping()
            assert not any(c.pending.values()), dict(c.pending)
    finally:
        rc, gone = r.stop()
    assert rc == 0 and gone, (rc, gone)


def _json(resp):
    import json
    assert resp.status is not None and resp.ended, resp
    return json.loads(resp.body)


def _expect_protocol_error(c):
    """The replica answers ERROR(PROTOCOL) on stream 0 and closes."""
    f = c._next(lambda f: f.type == ERROR and f.stream == 0)
    assert f is not None, "no ERROR"
    assert decode_payload(f)[0] == CODE_PROTOCOL
    assert c.recv_frame() is None, "connection still open"


def _smoke_echo(build):
    r = _Replica(os.path.join(build, "replica-echo"))
    try:
        with r.client() as c:
            c.ping()
            c.request(1, "POST", "/a/b?x=1&status=201",
                      [("Host", "h"), ("X-A", "1"), ("x-a", "2")],
                      body=b"hello", deployment="dep", request_id="rid")
            resp = c.collect(1)
            j = _json(resp)
            assert resp.status == 201, resp.status
            assert ("content-length", str(len(resp.body))) in resp.headers
            assert j["method"] == "POST" and j["path"] == "/a/b"
            assert j["query"] == "x=1&status=201"
            assert j["headers"] == {"host": "h", "x-a": "1, 2"}, j
            assert j["body"] == "hello" and j["body_length"] == 5
            assert j["replica"] == "smoke-1" and j["deployment"] == "dep"
            assert j["request_id"] == "rid" and j["conn_pings"] == 2, j

            # Many streams at once, bodies interleaved, answered by id.
            for s in range(3, 203, 2):
                c.request(s, "PUT", "/%d" % s, end=False)
            for s in range(201, 2, -2):
                c.data(s, b"x" * s, end=True)
            for s in range(3, 203, 2):
                j = _json(c.collect(s))
                assert j["path"] == "/%d" % s and j["body_length"] == s

            # Big body: not echoed, split into DATA frames on the way in.
            c.request(301, "POST", "/", body=b"\xff" * 700000)
            j = _json(c.collect(301))
            assert j["body_length"] == 700000 and "body" not in j
            c.request(303, "POST", "/", body=b"\xff\xfe")  # not UTF-8
            j = _json(c.collect(303))
            assert j["body_length"] == 2 and "body" not in j

            # Raw mode: the head comes before any body is sent.
            c.request(401, "POST", "/?raw=1&status=202", end=False)
            f = c.frames_for(401)
            assert f.type == RESPONSE and decode_payload(f)[0] == 202
            for piece in (b"one", b"two" * 100000):
                c.send_body(401, piece)
                got = b""
                while len(got) < len(piece):
                    f = c.frames_for(401)
                    assert f.type == DATA, f
                    got += f.payload
                assert got == piece
            c.end(401)
            assert c.frames_for(401).type == END

            # Flow control: no DATA beyond our credit; queued, then sent
            # when we grant more.
            c.auto_window = False
            c.request(451, "POST", "/?raw=1", end=False)
            assert c.frames_for(451).type == RESPONSE
            c.data(451, b"a" * INITIAL_WINDOW)
            got = 0
            while got < INITIAL_WINDOW:
                got += len(c.frames_for(451).payload)
            c.send_body(451, b"b" * 100000)   # the replica granted more
            try:
                f = c.frames_for(451, timeout=0.3)
                raise AssertionError("DATA beyond credit: %r" % (f,))
            except socket.timeout:
                pass
            c.grant(451, INITIAL_WINDOW, force=True)
            got = b""
            while len(got) < 100000:
                got += c.frames_for(451).payload
            assert got == b"b" * 100000
            c.end(451)
            assert c.frames_for(451).type == END
            c.auto_window = True

            # CANCEL mid-body, then frames for that stream are ignored.
            c.request(501, "POST", "/", end=False)
            c.data(501, b"abc")
            c.cancel(501)
            c.data(501, b"late", end=True)
            c.request(503, "GET", "/after-cancel")
            assert _json(c.collect(503))["path"] == "/after-cancel"
            assert not c.pending[501], c.pending[501]

        # Protocol errors close only the offending connection.
        keep = r.client()
        with WireClient.connect("unix:" + r.path) as c:
            c.read_hello()
            c.request(1, "GET", "/")            # before our HELLO
            _expect_protocol_error(c)
        with r.client() as c:
            c.send(struct.pack(">IBBHI", 0, 42, 0, 0, 1))   # bad type
            _expect_protocol_error(c)
        with r.client() as c:
            c.request(5, "GET", "/")
            c.collect(5)
            c.request(3, "GET", "/")            # stream id went down
            _expect_protocol_error(c)
        with r.client() as c:
            c.send_frame(RESPONSE, b"\0\xc8\0\0", 0, 1)
            _expect_protocol_error(c)
        with r.client() as c:
            c.request(1, "POST", "/", end=False)
            c.send(encode_data(1, b"x" * 100000))      # no grant yet
            c.send(encode_data(1, b"x" * (INITIAL_WINDOW - 100000 + 1)))
            _expect_protocol_error(c)
        keep.request(7, "GET", "/still")
        assert _json(keep.collect(7))["path"] == "/still"
        keep.close()
    finally:
        rc, gone = r.stop()
    assert rc == 0 and gone, (rc, gone)


def _smoke_sleep(build):
    r = _Replica(os.path.join(build, "replica-sleep"),
                 "--max-concurrency", "3")
    try:
        with r.client() as c:
            assert c.peer_hello.max_concurrency == 3
            t0 = time.monotonic()
            c.request(1, "GET", "/?ms=200")
            c.request(3, "GET", "/?ms=0")
            resp = c.collect(3)
            assert resp.body == b"slept 0 ms\n", resp
            resp = c.collect(1)
            assert resp.status == 200 and resp.body == b"slept 200 ms\n"
            assert time.monotonic() - t0 >= 0.19
            c.request(5, "GET", "/?chunks=5&ms=10")
            resp = c.collect(5)
            assert resp.body == b"".join(b"chunk %d\n" % i
                                         for i in range(1, 6)), resp.body
            assert resp.frames[-1].flags == FLAG_END
            c.request(7, "GET", "/?ms=bad")
            assert c.collect(7).status == 400
            c.request(9, "GET", "/?chunks=0")
            assert c.collect(9).status == 400

            # Over max_concurrency: ERROR(OVERLOAD) on the stream.
            for s in (11, 13, 15, 17):
                c.request(s, "GET", "/?ms=60000")
            resp = c.collect(17)
            assert resp.error and resp.error[0] == CODE_OVERLOAD, resp
            for s in (11, 13, 15):
                c.cancel(s)
            c.request(19, "GET", "/?chunks=1000&ms=5")
            assert c.frames_for(19).type == RESPONSE
            assert c.frames_for(19).type == DATA
            c.cancel(19)
            c.request(21, "GET", "/?ms=0")
            assert c.collect(21).status == 200   # the slots are free

            # A connection dropped with work in flight frees that work.
            with r.client() as c2:
                c2.request(1, "GET", "/?ms=60000")
                c2.request(3, "GET", "/?chunks=100&ms=1")
                c2.request(5, "POST", "/?ms=0", end=False)
                assert c2.frames_for(3).type == RESPONSE
            time.sleep(0.2)       # the replica sees the EOF
            c.request(25, "GET", "/?ms=0")
            assert c.collect(25).status == 200

            # SIGTERM: GOAWAY, in-flight requests finish, then exit 0.
            c.request(27, "GET", "/?ms=300")
            time.sleep(0.05)
            r.terminate()
            f = c._next(lambda f: f.type == GOAWAY)
            assert decode_payload(f)[:2] == (27, CODE_SHUTDOWN), f
            assert c.collect(27).body == b"slept 300 ms\n"
            assert c.recv_frame() is None
    finally:
        rc, gone = r.stop()
    assert rc == 0 and gone, (rc, gone)


def smoke(build):
    _smoke_hello(build)
    _smoke_echo(build)
    _smoke_sleep(build)
    print("smoke: ok")
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "vectors":
        return run_vectors(argv[2] if len(argv) > 2 else
                           "tests/vectors/frames.txt")
    if len(argv) >= 2 and argv[1] == "smoke":
        return smoke(argv[2] if len(argv) > 2 else "build")
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
