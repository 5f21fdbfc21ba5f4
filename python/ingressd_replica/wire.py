"""The ingressd <-> replica wire protocol, version 2: a pure codec.

This is the Python twin of src/wire.c (whose header, src/wire.h, is the
contract; docs/protocol.md is its prose form).  No I/O here.  Decoders check
the same things in the same order as wire.c and report the first problem as
a WireError whose .result is the name wire_result_str() gives ("E_SHORT",
"E_LIMIT", ...), so tests/vectors/frames.txt checks both implementations
alike.  Encoders refuse (ValueError) whatever a decoder would refuse.

Frame: a 12-byte header in network byte order, then `length` bytes:

    u32 length | u8 type | u8 flags | u16 reserved=0 | u32 stream | payload

Strings are length-prefixed: str8 = u8 length + bytes, str16 = u16 length +
bytes.  Strings are bytes here; the server decodes them.
"""

import struct

VERSION = 2
VERSION_TRAILERS = 2  # the first version with the TRAILERS frame
HEADER_SIZE = 12

MAX_PAYLOAD = 1 << 20  # any one frame
MAX_DATA = 256 << 10  # encoders split DATA at this
MAX_FIELDS = 256  # headers in REQUEST/RESPONSE
MAX_NAME = 255  # deployment, replica id, header name
MAX_TEXT = 4096  # ERROR and GOAWAY text
# Per-stream flow control, each direction on its own: a stream starts with
# this much DATA credit; the receiver grants more with WINDOW(stream, n).
INITIAL_WINDOW = 256 << 10
_STR8_MAX = 0xff
_STR16_MAX = 0xffff

(HELLO, PING, PONG, REQUEST, RESPONSE, DATA, END, CANCEL, ERROR, GOAWAY,
 WINDOW, TRAILERS) = range(1, 13)
TYPE_MAX = TRAILERS
TYPE_NAMES = ("?", "HELLO", "PING", "PONG", "REQUEST", "RESPONSE", "DATA",
              "END", "CANCEL", "ERROR", "GOAWAY", "WINDOW", "TRAILERS")

FLAG_END = 0x01
FLAGS_KNOWN = FLAG_END

(CODE_NONE, CODE_PROTOCOL, CODE_INTERNAL, CODE_REFUSED, CODE_CANCEL,
 CODE_TIMEOUT, CODE_VERSION, CODE_SHUTDOWN, CODE_OVERLOAD) = range(9)
CODE_NAMES = ("NONE", "PROTOCOL", "INTERNAL", "REFUSED", "CANCEL", "TIMEOUT",
              "VERSION", "SHUTDOWN", "OVERLOAD")

# Result names, as wire_result_str() spells them.
OK = "ok"
NEED_MORE = "NEED_MORE"

_HDR = struct.Struct(">IBBHI")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_HELLO_FIXED = struct.Struct(">HHI")
_FIELD_HEAD = struct.Struct(">B")

_STREAM_REQUIRED = frozenset((REQUEST, RESPONSE, DATA, END, CANCEL,
                              TRAILERS))
_STREAM_OPTIONAL = frozenset((ERROR, WINDOW))
_FIXED_LENGTH = {PING: 8, PONG: 8, CANCEL: 4, WINDOW: 4, END: 0}
_END_FLAG_TYPES = frozenset((REQUEST, RESPONSE, DATA))


class WireError(ValueError):
    """A frame a conforming decoder refuses.  .result is the result name
    ("E_TYPE", "E_SHORT", ...)."""

    def __init__(self, result, detail=""):
        ValueError.__init__(self, result + (": " + detail if detail
                                            else ""))
        self.result = result


def type_name(t):
    return TYPE_NAMES[t] if 1 <= t <= TYPE_MAX else "UNKNOWN"


def code_name(c):
    return CODE_NAMES[c] if 0 <= c < len(CODE_NAMES) else "UNKNOWN"


class Frame:
    """One decoded frame; payload is a bytes-like view of its bytes."""

    __slots__ = ("length", "type", "flags", "stream", "payload")

    def __init__(self, ftype, flags, stream, payload):
        self.length = len(payload)
        self.type = ftype
        self.flags = flags
        self.stream = stream
        self.payload = payload

    @property
    def end(self):
        return bool(self.flags & FLAG_END)

    def __repr__(self):
        return "<Frame %s flags=%d stream=%d length=%d>" % (
            type_name(self.type), self.flags, self.stream, self.length)


# ------------------------------------------------------------ frame level

def check_header(length, ftype, flags, reserved, stream):
    """The result for what the 12 header bytes alone can tell, checked
    before the payload is there so a bad peer is caught early."""
    if ftype < 1 or ftype > TYPE_MAX:
        return "E_TYPE"
    if flags & ~FLAGS_KNOWN:
        return "E_FLAGS"
    if flags & FLAG_END and ftype not in _END_FLAG_TYPES:
        return "E_FLAGS"
    if reserved != 0:
        return "E_RESERVED"
    if length > MAX_PAYLOAD:
        return "E_TOO_LARGE"
    if ftype in _STREAM_REQUIRED:
        if stream == 0:
            return "E_STREAM"
    elif ftype not in _STREAM_OPTIONAL and stream != 0:
        return "E_STREAM"
    fixed = _FIXED_LENGTH.get(ftype)
    if fixed is not None:
        if length < fixed:
            return "E_SHORT"
        if length > fixed:
            return "E_TRAILING"
    if ftype == DATA and length == 0 and not flags & FLAG_END:
        return "E_EMPTY"
    return OK


def decode_frame(buf, offset=0):
    """Look at buf[offset:].  Returns (frame, size): frame is None while
    the frame is incomplete, and size is then how many bytes from offset
    the frame needs (HEADER_SIZE until the header is in).  A bad header
    raises WireError as soon as the header is there.  The frame's payload
    is a memoryview into buf when buf is a memoryview, else a copy."""
    avail = len(buf) - offset
    if avail < HEADER_SIZE:
        return None, HEADER_SIZE
    length, ftype, flags, reserved, stream = _HDR.unpack_from(buf, offset)
    r = check_header(length, ftype, flags, reserved, stream)
    if r is not OK:
        raise WireError(r, "%s header" % type_name(ftype))
    size = HEADER_SIZE + length
    if avail < size:
        return None, size
    start = offset + HEADER_SIZE
    return Frame(ftype, flags, stream, buf[start:start + length]), size


def encode_header(length, ftype, flags, stream):
    return _HDR.pack(length, ftype, flags, 0, stream)


# ----------------------------------------------------------- payload level

class _Cur:
    """A cursor over one payload, failing the way wire.c's cur_* do."""

    __slots__ = ("b", "i", "n")

    def __init__(self, payload):
        self.b = payload
        self.i = 0
        self.n = len(payload)

    def u16(self):
        if self.n - self.i < 2:
            raise WireError("E_SHORT")
        v = _U16.unpack_from(self.b, self.i)[0]
        self.i += 2
        return v

    def u32(self):
        if self.n - self.i < 4:
            raise WireError("E_SHORT")
        v = _U32.unpack_from(self.b, self.i)[0]
        self.i += 4
        return v

    def string(self, wide, limit, nonempty):
        """Length prefix (E_SHORT), limit (E_LIMIT), bytes (E_SHORT),
        emptiness (E_EMPTY): wire.c's order."""
        i = self.i
        if wide:
            if self.n - i < 2:
                raise WireError("E_SHORT")
            ln = (self.b[i] << 8) | self.b[i + 1]
            i += 2
        else:
            if self.n - i < 1:
                raise WireError("E_SHORT")
            ln = self.b[i]
            i += 1
        if ln > limit:
            raise WireError("E_LIMIT")
        if self.n - i < ln:
            raise WireError("E_SHORT")
        if nonempty and ln == 0:
            raise WireError("E_EMPTY")
        self.i = i + ln
        return bytes(self.b[i:i + ln])

    def fields(self):
        """nfields x (str8 name, str16 value): cur_str's checks and
        order, inlined because every request pays for it.  A name can
        never be over MAX_NAME (255), the most a u8 says."""
        b, i, n = self.b, self.i, self.n
        if n - i < 2:
            raise WireError("E_SHORT")
        count = (b[i] << 8) | b[i + 1]
        i += 2
        if count > MAX_FIELDS:
            raise WireError("E_LIMIT")
        out = []
        for _ in range(count):
            if i >= n:
                raise WireError("E_SHORT")
            ln = b[i]
            i += 1
            if n - i < ln:
                raise WireError("E_SHORT")
            if ln == 0:
                raise WireError("E_EMPTY")
            name = b[i:i + ln]
            i += ln
            if n - i < 2:
                raise WireError("E_SHORT")
            lv = (b[i] << 8) | b[i + 1]
            i += 2
            if n - i < lv:
                raise WireError("E_SHORT")
            out.append((bytes(name), bytes(b[i:i + lv])))
            i += lv
        self.i = i
        return out

    def done(self):
        if self.i != self.n:
            raise WireError("E_TRAILING")


class Hello:
    __slots__ = ("version", "max_concurrency", "deployment", "replica_id")

    def __init__(self, version, max_concurrency, deployment, replica_id):
        self.version = version
        self.max_concurrency = max_concurrency
        self.deployment = deployment
        self.replica_id = replica_id


class RequestHead:
    """A decoded REQUEST payload; strings are bytes, fields a list of
    (name, value) byte pairs in arrival order."""

    __slots__ = ("method", "target", "deployment", "request_id",
                 "deadline_ms", "fields")

    def __init__(self, method, target, deployment=b"", request_id=b"",
                 deadline_ms=0, fields=()):
        self.method = method
        self.target = target
        self.deployment = deployment
        self.request_id = request_id
        self.deadline_ms = deadline_ms
        self.fields = list(fields)


def decode_hello(f):
    c = _Cur(f.payload)
    version = c.u16()
    if version == 0:
        raise WireError("E_VALUE", "HELLO version 0")
    if c.u16() != 0:
        raise WireError("E_RESERVED")
    maxc = c.u32()
    dep = c.string(False, MAX_NAME, False)
    rid = c.string(False, MAX_NAME, False)
    c.done()
    return Hello(version, maxc, dep, rid)


def decode_ping(f):
    """PING and PONG: the 8 opaque bytes."""
    if f.length < 8:
        raise WireError("E_SHORT")
    if f.length > 8:
        raise WireError("E_TRAILING")
    return bytes(f.payload)


def decode_request(f):
    method, target, dep, rid, deadline, fields = request_text(
        f.payload, 0, f.length)
    return RequestHead(method.encode("latin-1"), target.encode("latin-1"),
                       dep.encode("latin-1"), rid.encode("latin-1"),
                       deadline, [(k.encode("latin-1"), v.encode("latin-1"))
                                  for k, v in fields])


def request_text(buf, start, n):
    """The REQUEST payload at buf[start:start + n], its strings decoded
    as Latin-1: [method, target, deployment, request_id, deadline_ms,
    [(name, value)...]].  The replica's hot path: the payload is copied
    and decoded once, and the strings are slices of it (Latin-1 maps
    byte i to character i, so byte offsets are string offsets).
    wire.c's checks, in its order (see _Cur): a length that runs past
    the end is E_SHORT whichever check sees it first, and a zero length
    can never run past it, so E_EMPTY is tested first here."""
    p = bytes(buf[start:start + n])
    s = p.decode("latin-1")
    try:
        ln = p[0]
        if ln == 0:
            raise WireError("E_EMPTY")
        i = 1 + ln
        lt = (p[i] << 8) | p[i + 1]
        if i + 2 + lt > n:
            raise WireError("E_SHORT")
        if lt == 0:
            raise WireError("E_EMPTY")
        method = s[1:i]
        i += 2
        target = s[i:i + lt]
        i += lt
        ld = p[i]
        j = i + 1 + ld
        lr = p[j]
        k = j + 1 + lr
        if k + 6 > n:
            raise WireError("E_SHORT")
        out = [method, target, s[i + 1:j], s[j + 1:k],
               _U32.unpack_from(p, k)[0]]
        count = (p[k + 4] << 8) | p[k + 5]
        if count > MAX_FIELDS:
            raise WireError("E_LIMIT")
        i = k + 6
        fields = []
        for _ in range(count):
            ln = p[i]
            if ln == 0:
                raise WireError("E_EMPTY")
            j = i + 1 + ln
            lv = (p[j] << 8) | p[j + 1]
            k = j + 2 + lv
            if k > n:
                raise WireError("E_SHORT")
            fields.append((s[i + 1:j], s[j + 2:k]))
            i = k
    except IndexError:
        raise WireError("E_SHORT") from None
    if i != n:
        raise WireError("E_TRAILING")
    out.append(fields)
    return out


def decode_response(f):
    """(status, fields)."""
    c = _Cur(f.payload)
    status = c.u16()
    if status < 100 or status > 999:
        raise WireError("E_VALUE", "status %d" % status)
    fields = c.fields()
    c.done()
    return status, fields


def decode_error(f):
    """(code, text) of an ERROR."""
    c = _Cur(f.payload)
    code = c.u32()
    text = c.string(True, MAX_TEXT, False)
    c.done()
    return code, text


def decode_cancel(f):
    c = _Cur(f.payload)
    code = c.u32()
    c.done()
    return code


def decode_goaway(f):
    """(last_stream, code, text)."""
    c = _Cur(f.payload)
    last = c.u32()
    code = c.u32()
    text = c.string(True, MAX_TEXT, False)
    c.done()
    return last, code, text


def decode_window(f):
    c = _Cur(f.payload)
    inc = c.u32()
    if inc == 0:
        raise WireError("E_VALUE", "WINDOW increment 0")
    c.done()
    return inc


def decode_trailers(f):
    """The fields of a TRAILERS frame (v2), as decode_response's."""
    c = _Cur(f.payload)
    fields = c.fields()
    c.done()
    return fields


def version_agree(theirs):
    """The version a connection speaks once the peer's HELLO said theirs."""
    return max(1, min(theirs, VERSION))


_DECODERS = {
    HELLO: decode_hello, PING: decode_ping, PONG: decode_ping,
    REQUEST: decode_request, RESPONSE: decode_response,
    CANCEL: decode_cancel, ERROR: decode_error, GOAWAY: decode_goaway,
    WINDOW: decode_window, TRAILERS: decode_trailers,
}


def decode_payload(f):
    """The payload of a frame decode_frame() accepted, decoded by type:
    DATA and END need nothing more and give their payload bytes."""
    dec = _DECODERS.get(f.type)
    if dec is None:
        return bytes(f.payload)
    return dec(f)


# ---------------------------------------------------------------- encoders

def _b(s):
    if isinstance(s, str):
        return s.encode("latin-1")
    return bytes(s)


def _str(s, wide, limit, nonempty, what):
    s = _b(s)
    if len(s) > limit or (nonempty and not s):
        raise ValueError("%s: %d bytes, not within %s..%d"
                         % (what, len(s), "1" if nonempty else "0", limit))
    return (_U16.pack(len(s)) if wide else bytes((len(s),))) + s


def _fields(fields):
    if len(fields) > MAX_FIELDS:
        raise ValueError("%d header fields, at most %d" % (len(fields),
                                                           MAX_FIELDS))
    parts = [_U16.pack(len(fields))]
    for name, value in fields:
        if type(name) is not bytes:
            name = _b(name)
        if type(value) is not bytes:
            value = _b(value)
        ln, lv = len(name), len(value)
        if ln == 0 or ln > MAX_NAME:
            raise ValueError("header name of %d bytes, not 1..%d" %
                             (ln, MAX_NAME))
        if lv > _STR16_MAX:
            raise ValueError("header value of %d bytes, over %d" %
                             (lv, _STR16_MAX))
        parts.append(_FIELD_HEAD.pack(ln) + name + _U16.pack(lv) + value)
    return b"".join(parts)


def _frame(ftype, flags, stream, payload):
    if len(payload) > MAX_PAYLOAD:
        raise ValueError("%s payload of %d bytes, over %d" % (
            type_name(ftype), len(payload), MAX_PAYLOAD))
    return _HDR.pack(len(payload), ftype, flags, 0, stream) + payload


def _flags(flags):
    if flags & ~FLAGS_KNOWN:
        raise ValueError("unknown flags 0x%x" % flags)
    return flags


def _stream(stream):
    if not 0 < stream <= 0xffffffff:
        raise ValueError("stream id %r not in 1..2^32-1" % (stream,))
    return stream


def encode_hello(max_concurrency=0, deployment=b"", replica_id=b"",
                 version=VERSION):
    if version < 1 or version > 0xffff:
        raise ValueError("HELLO version %r" % (version,))
    if not 0 <= max_concurrency <= 0xffffffff:
        raise ValueError("max_concurrency %r" % (max_concurrency,))
    payload = (_HELLO_FIXED.pack(version, 0, max_concurrency) +
               _str(deployment, False, MAX_NAME, False, "deployment") +
               _str(replica_id, False, MAX_NAME, False, "replica id"))
    return _frame(HELLO, 0, 0, payload)


def encode_ping(opaque, ftype=PING):
    if ftype not in (PING, PONG) or len(opaque) != 8:
        raise ValueError("PING/PONG needs 8 bytes")
    return _HDR.pack(8, ftype, 0, 0, 0) + bytes(opaque)


def encode_request(stream, head, flags=0):
    payload = (_str(head.method, False, _STR8_MAX, True, "method") +
               _str(head.target, True, _STR16_MAX, True, "target") +
               _str(head.deployment, False, MAX_NAME, False, "deployment") +
               _str(head.request_id, False, _STR8_MAX, False, "request id") +
               _U32.pack(head.deadline_ms) + _fields(list(head.fields)))
    return _frame(REQUEST, _flags(flags), _stream(stream), payload)


def encode_response(stream, status, fields=(), flags=0):
    if not isinstance(status, int) or status < 100 or status > 999:
        raise ValueError("status %r not in 100..999" % (status,))
    if not isinstance(fields, list):
        fields = list(fields)
    return _frame(RESPONSE, _flags(flags), _stream(stream),
                  _U16.pack(status) + _fields(fields))


def encode_trailers(stream, fields=()):
    """A TRAILERS frame (v2): the response's last frame, END implied."""
    if not isinstance(fields, list):
        fields = list(fields)
    return _frame(TRAILERS, 0, _stream(stream), _fields(fields))


_RESPONSE_HEAD = struct.Struct(">IBBHIHH")  # header, status, nfields
_CTYPE_FIELDS = {}  # content type -> its encoded field
_LENGTH_FIELDS = {}  # body length -> its encoded content-length field


def response_with_body(stream, status, ctype, data):
    """RESPONSE (status; content-type ctype unless None, content-length)
    and the whole body as one DATA with FLAG_END, as one bytes: the
    common answer in one write.  stream is one a REQUEST came on; data
    is 1..MAX_DATA bytes; status must allow a body (not 1xx, 204,
    304).  The encoded fields are cached: most answers repeat them."""
    if not isinstance(status, int) or status < 100 or status > 999:
        raise ValueError("status %r not in 100..999" % (status,))
    n = len(data)
    cl = _LENGTH_FIELDS.get(n)
    if cl is None:
        v = b"%d" % n
        cl = b"\x0econtent-length\x00" + bytes((len(v),)) + v
        if len(_LENGTH_FIELDS) < 4096:
            _LENGTH_FIELDS[n] = cl
    if ctype is None:
        nf, ct = 1, b""
    else:
        nf, ct = 2, _CTYPE_FIELDS.get(ctype)
        if ct is None:
            v = _b(ctype)
            if len(v) > _STR16_MAX:
                raise ValueError("content type too long")
            ct = b"\x0ccontent-type" + _U16.pack(len(v)) + v
            if len(_CTYPE_FIELDS) < 64:
                _CTYPE_FIELDS[ctype] = ct
    return b"".join((_RESPONSE_HEAD.pack(4 + len(ct) + len(cl), RESPONSE,
                                         0, 0, stream, status, nf),
                     ct, cl, _HDR.pack(n, DATA, FLAG_END, 0, stream),
                     data))


def encode_data(stream, data, flags=0):
    """One DATA frame (at most MAX_PAYLOAD bytes; empty only with
    FLAG_END).  data_frames() splits a body at MAX_DATA."""
    if not data and not flags & FLAG_END:
        raise ValueError("empty DATA without FLAG_END")
    return _frame(DATA, _flags(flags), _stream(stream), bytes(data))


def data_frames(stream, data, end=False):
    """The frames carrying data: DATA pieces of at most MAX_DATA bytes,
    FLAG_END on the last when end.  Empty data with end is one END."""
    _stream(stream)
    n = len(data)
    if n == 0:
        return [_HDR.pack(0, END, 0, 0, stream)] if end else []
    if n <= MAX_DATA:
        return [_HDR.pack(n, DATA, FLAG_END if end else 0, 0, stream),
                data]
    out = []
    view = memoryview(data)
    for i in range(0, n, MAX_DATA):
        piece = view[i:i + MAX_DATA]
        last = end and i + MAX_DATA >= n
        out.append(_HDR.pack(len(piece), DATA, FLAG_END if last else 0,
                             0, stream))
        out.append(bytes(piece))
    return out


def encode_end(stream):
    return _HDR.pack(0, END, 0, 0, _stream(stream))


def encode_cancel(stream, code):
    return _HDR.pack(4, CANCEL, 0, 0, _stream(stream)) + _U32.pack(code)


def encode_error(stream, code, text=b""):
    """ERROR on a stream, or on the connection when stream is 0.  Text
    over MAX_TEXT is cut, as the C library does."""
    if not 0 <= stream <= 0xffffffff:
        raise ValueError("stream id %r" % (stream,))
    text = _b(text)[:MAX_TEXT]
    return _frame(ERROR, 0, stream, _U32.pack(code) +
                  _str(text, True, MAX_TEXT, False, "text"))


def encode_goaway(last_stream, code, text=b""):
    return _frame(GOAWAY, 0, 0, _U32.pack(last_stream) + _U32.pack(code) +
                  _str(text, True, MAX_TEXT, False, "text"))


def encode_window(stream, increment):
    if not 0 < increment <= 0xffffffff:
        raise ValueError("WINDOW increment %r" % (increment,))
    return _HDR.pack(4, WINDOW, 0, 0, stream) + _U32.pack(increment)
