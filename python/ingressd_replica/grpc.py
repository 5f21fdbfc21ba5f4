"""gRPC on an ingressd replica: methods on raw message bytes (or protobuf
classes when you have them), no code generation.

    from ingressd_replica import serve
    from ingressd_replica.grpc import GrpcService, StatusCode, abort

    svc = GrpcService()

    @svc.unary("/ingressd.example.Echo/Unary")
    async def unary(msg, ctx):            # msg: bytes (or request class)
        if not msg:
            abort(StatusCode.INVALID_ARGUMENT, "empty message")
        return msg                        # bytes (or a protobuf message)

    @svc.server_stream("/ingressd.example.Echo/ServerStream")
    async def server_stream(msg, ctx):
        for _ in range(3):
            yield msg

    @svc.client_stream("/ingressd.example.Echo/ClientStream")
    async def client_stream(messages, ctx):
        return b"".join([m async for m in messages])

    @svc.bidi_stream("/ingressd.example.Echo/BidiStream")
    async def bidi(messages, ctx):
        async for m in messages:
            yield m

    serve(svc.handler)

A call arrives as POST /package.Service/Method with content-type
application/grpc; its body is messages, each with a 5-byte prefix (u8
compressed flag, u32 big-endian length).  The answer is 200, messages
framed the same way, then trailers grpc-status and grpc-message (wire v2
TRAILERS), or the status in the head alone (Trailers-Only) when the call
ends before any message went out.  abort(code, message) (or raising
GrpcError) ends a call with that status; any other exception ends it
UNKNOWN, as grpcio servers do.  Unknown methods answer UNIMPLEMENTED; a
request that is not POST application/grpc answers HTTP 415.  Compressed
messages are refused (UNIMPLEMENTED): no grpc-accept-encoding is offered.

Protobuf: pass request=SomeRequest, response=SomeReply to a decorator
and the handler gets SomeRequest.FromString(bytes) and may return
messages with SerializeToString() (python3-protobuf from Debian works,
classes from any generator or built at run time).
"""

from __future__ import annotations

import enum
import struct
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Tuple

from .request import Request, Response

MAX_MESSAGE = 4 << 20  # gRPC's usual default for a received message
_PREFIX = struct.Struct(">BI")
_GRPC_HEAD = (("content-type", "application/grpc"),)


class StatusCode(enum.IntEnum):
    """gRPC status codes (grpc/doc/statuscodes.md)."""
    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class GrpcError(Exception):
    """Ends the call with this status (abort() raises it)."""

    def __init__(self, code: int, message: str = "") -> None:
        Exception.__init__(self, int(code), message)
        self.code = int(code)
        self.message = message


def abort(code: int, message: str = "") -> None:
    """End the call now with status code and message (raises)."""
    raise GrpcError(code, message)


def percent_encode(message: str) -> str:
    """grpc-message encoding: UTF-8, then every byte outside printable
    ASCII, and '%', as %XX."""
    out = []
    for b in message.encode("utf-8"):
        if 0x20 <= b <= 0x7e and b != 0x25:
            out.append(chr(b))
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def percent_decode(value: str) -> str:
    """The inverse of percent_encode (bad escapes are kept as they are)."""
    raw = value.encode("latin-1")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == 0x25 and _is_hex(raw[i + 1:i + 3]):
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")


def _is_hex(b: bytes) -> bool:
    return len(b) == 2 and all(c in b"0123456789abcdefABCDEF" for c in b)


def frame(message: bytes) -> bytes:
    """One message with its 5-byte prefix (not compressed)."""
    return _PREFIX.pack(0, len(message)) + message


async def read_messages(req: Request,
                        max_message: int = MAX_MESSAGE
                        ) -> AsyncIterator[bytes]:
    """The request body as an async iterator of messages, each taken as
    soon as its last byte arrives.  GrpcError on a bad stream: over
    max_message (RESOURCE_EXHAUSTED), compressed (UNIMPLEMENTED), cut
    inside a message (INTERNAL)."""
    buf = bytearray()
    async for chunk in req:
        buf += chunk
        while len(buf) >= 5:
            flag, n = _PREFIX.unpack_from(buf)
            if flag == 1:
                raise GrpcError(StatusCode.UNIMPLEMENTED,
                                "compressed messages are not supported")
            if flag != 0:
                raise GrpcError(StatusCode.INTERNAL,
                                "bad message flag %d" % flag)
            if n > max_message:
                raise GrpcError(StatusCode.RESOURCE_EXHAUSTED,
                                "request message larger than %d bytes"
                                % max_message)
            if len(buf) < 5 + n:
                break
            msg = bytes(buf[5:5 + n])
            del buf[:5 + n]
            yield msg
    if buf:
        raise GrpcError(StatusCode.INTERNAL,
                        "request body ends inside a message")


def status_fields(code: int, message: str = "") -> List[Tuple[str, str]]:
    """grpc-status (and grpc-message, percent-encoded, when not empty)."""
    out = [("grpc-status", str(int(code)))]
    if message:
        out.append(("grpc-message", percent_encode(message)))
    return out


def trailers_only(code: int, message: str = "",
                  metadata: Any = ()) -> Response:
    """The whole answer of a call that sends no message: the status in
    the response head, no body."""
    return Response(b"", 200, list(_GRPC_HEAD) + list(metadata) +
                    status_fields(code, message))


class Context:
    """What a method sees besides its messages: the request (req), its
    metadata (the request headers), the deadline (req.deadline_ms), and
    where to put response metadata: set_header() before the first
    message, set_trailer() any time before the end."""

    def __init__(self, req: Request, path: str) -> None:
        self.req = req
        self.method = path
        self.metadata = req.headers
        self.headers: List[Tuple[str, str]] = []
        self.trailers: List[Tuple[str, str]] = []
        self.code = StatusCode.OK
        self.message = ""

    def set_header(self, name: str, value: str) -> None:
        self.headers.append((name, value))

    def set_trailer(self, name: str, value: str) -> None:
        self.trailers.append((name, value))

    def abort(self, code: int, message: str = "") -> None:
        abort(code, message)

    def _end(self) -> List[Tuple[str, str]]:
        return self.trailers + status_fields(self.code, self.message)


class _Method:
    def __init__(self, path, fn, kind, request, response):
        self.path = path
        self.fn = fn
        self.kind = kind  # "unary", "server", "client", "bidi"
        self.request = request
        self.response = response

    def decode(self, msg: bytes) -> Any:
        return self.request.FromString(msg) if self.request else msg

    def encode(self, msg: Any) -> bytes:
        if isinstance(msg, (bytes, bytearray, memoryview)):
            return bytes(msg)
        if hasattr(msg, "SerializeToString"):
            return msg.SerializeToString()
        raise TypeError("a gRPC method returned a %s, not bytes or a "
                        "protobuf message" % type(msg).__name__)


class GrpcService:
    """Methods by path ("/package.Service/Method"); .handler serves them
    (pass it to serve() or Replica).  max_message bounds a request
    message."""

    def __init__(self, max_message: int = MAX_MESSAGE) -> None:
        self.max_message = max_message
        self.methods: Dict[str, _Method] = {}

    def add(self, path: str, fn: Callable, kind: str,
            request: Any = None, response: Any = None) -> None:
        if not path.startswith("/") or path.count("/") != 2:
            raise ValueError("a gRPC method path is /package.Service/"
                             "Method, not %r" % (path,))
        if kind not in ("unary", "server", "client", "bidi"):
            raise ValueError("unknown RPC kind %r" % (kind,))
        self.methods[path] = _Method(path, fn, kind, request, response)

    def _decorator(self, kind, path, request, response):
        def deco(fn):
            self.add(path, fn, kind, request, response)
            return fn
        return deco

    def unary(self, path: str, request: Any = None, response: Any = None):
        """async def fn(msg, ctx) -> message."""
        return self._decorator("unary", path, request, response)

    def server_stream(self, path: str, request: Any = None,
                      response: Any = None):
        """async def fn(msg, ctx) yielding messages."""
        return self._decorator("server", path, request, response)

    def client_stream(self, path: str, request: Any = None,
                      response: Any = None):
        """async def fn(messages, ctx) -> message."""
        return self._decorator("client", path, request, response)

    def bidi_stream(self, path: str, request: Any = None,
                    response: Any = None):
        """async def fn(messages, ctx) yielding messages."""
        return self._decorator("bidi", path, request, response)

    async def handler(self, req: Request) -> Response:
        ctype = req.headers.get("content-type", "")
        if req.method != "POST" or not _is_grpc(ctype):
            return Response("not a gRPC request\n", 415)
        m = self.methods.get(req.path)
        if m is None:
            return trailers_only(StatusCode.UNIMPLEMENTED,
                                 "unknown method %s" % req.path)
        ctx = Context(req, req.path)
        try:
            first, rest = await self._start(m, req, ctx)
        except GrpcError as e:
            return trailers_only(e.code, e.message, ctx.trailers)
        except Exception as e:  # noqa: B902 -- the handler's failure
            return trailers_only(StatusCode.UNKNOWN, "Exception calling "
                                 "application: %s" % (e,), ctx.trailers)
        if first is _NOTHING:  # a stream that sent nothing
            return trailers_only(StatusCode.OK, "", ctx.trailers)
        return Response(self._body(m, ctx, first, rest), 200,
                        list(_GRPC_HEAD) + ctx.headers, ctx._end)

    async def _start(self, m, req, ctx):
        """Run the method up to its first response message: (that
        message, an async iterator of the rest or None).  Errors before
        it are answered Trailers-Only."""
        messages = (m.decode(x) async for x in
                    read_messages(req, self.max_message))
        if m.kind in ("unary", "server"):
            one = await _only_message(messages)
            arg = one
        else:
            arg = messages
        if m.kind in ("unary", "client"):
            return await m.fn(arg, ctx), None
        gen = m.fn(arg, ctx)
        try:
            first = await gen.__anext__()
        except StopAsyncIteration:
            return _NOTHING, None
        return first, gen

    async def _body(self, m, ctx, first, rest):
        """The response messages; a failure after the first one goes in
        the trailers."""
        try:
            yield frame(m.encode(first))
            if rest is not None:
                async for msg in rest:
                    yield frame(m.encode(msg))
        except GrpcError as e:
            ctx.code, ctx.message = e.code, e.message
        except Exception as e:  # noqa: B902 -- the handler's failure
            ctx.code = StatusCode.UNKNOWN
            ctx.message = "Exception calling application: %s" % (e,)
        finally:
            if rest is not None:
                await rest.aclose()


_NOTHING = object()


def _is_grpc(ctype: str) -> bool:
    ctype = ctype.lower()
    return ctype == "application/grpc" or \
        ctype.startswith(("application/grpc+", "application/grpc;"))


async def _only_message(messages):
    """The one request message of a unary or server-streaming call."""
    got = []
    async for msg in messages:
        got.append(msg)
        if len(got) > 1:
            raise GrpcError(StatusCode.INTERNAL, "more than one request "
                            "message for a unary method")
    if not got:
        raise GrpcError(StatusCode.INTERNAL, "no request message for a "
                        "unary method")
    return got[0]
