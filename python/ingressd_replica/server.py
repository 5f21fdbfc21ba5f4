"""The replica side of wire protocol v2 on asyncio (see docs/protocol.md).

A Replica listens on the address ingressd gave it and accepts any number of
ingressd connections.  Each connection (_Conn, an asyncio.Protocol) sends
its HELLO at once, answers PING with PONG from the read callback, and turns
every REQUEST into a Request and runs the handler at once, from the frame
dispatch: a handler that finishes without waiting never gets an asyncio
Task; one that waits gets one then (eager.py), so many requests are in
flight on one connection.  Frames are decoded where they lie in the bytes
read (struct.unpack_from, one copy per payload).  What handlers write is
queued and written when the loop next turns: one transport.write per
connection per loop pass, for every request answered in it; the usual
answer (a fixed body) is its RESPONSE and DATA encoded as one piece.

Errors, at three levels:
  - the handler raises: RESPONSE 500 if nothing was sent yet, else ERROR
    (INTERNAL) on the stream (ingressd then cuts the client's response);
    the connection and the replica carry on;
  - ingressd breaks the protocol (a bad frame, a frame out of order): an
    ERROR (PROTOCOL) on stream 0, then that connection closes; the others
    carry on;
  - CANCEL (or ERROR) on a stream from ingressd: the handler's task is
    cancelled, so asyncio.CancelledError is raised inside the handler at
    its next await; nothing more is sent on the stream.

Flow control (src/wire.h): each stream starts with INITIAL_WINDOW bytes of
DATA credit each way.  Request body bytes are credited back to ingressd
with WINDOW(stream, n) as the handler consumes them, half a window at a
time; DATA beyond the credit ingressd holds is a protocol error.  Response
DATA goes out only as far as the credit ingressd granted us, and waits for
its WINDOW frames beyond that; on top of that, streamed bodies are written
with drain() (await until the transport's buffer is below its high-water
mark).  WINDOW on stream 0 is reserved and ignored.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import json
import logging
import os
import signal
import socket
import ssl
import stat
import sys
import threading
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple

from . import eager, wire
from .request import HTTPError, Request, Response

log = logging.getLogger("ingressd_replica")

DEFAULT_MAX_CONCURRENCY = 1024
DEFAULT_DRAIN_MS = 2000
_NO_MORE = object()  # end of a sync iterator, from the pool
_HDR_UNPACK = wire._HDR.unpack_from
_REQUEST, _MAX_PAYLOAD = wire.REQUEST, wire.MAX_PAYLOAD
_PLAIN = frozenset((str, bytes, dict, list, tuple, type(None)))
_json = json.JSONEncoder(separators=(",", ":")).encode


class ConfigError(ValueError):
    """A bad option or environment value; the message says which."""


class _ProtocolError(Exception):
    """ingressd broke the protocol; the text goes into our ERROR."""


def parse_address(addr: str) -> Tuple[Any, ...]:
    """("unix", path) for "unix:/path"; ("tcp", host, port) for
    "host:port" or "[v6]:port" (an empty host binds every address)."""
    if addr.startswith("unix:"):
        path = addr[5:]
        if not path or len(path.encode()) >= 108:
            raise ConfigError("bad unix socket path \"%s\"" % path)
        return ("unix", path)
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError("bad address \"%s\": no port" % addr)
    if host.startswith("["):
        if not host.endswith("]") or len(host) < 3:
            raise ConfigError("bad address \"%s\"" % addr)
        host = host[1:-1]
    elif ":" in host:
        raise ConfigError("bad address \"%s\": an IPv6 address needs "
                          "brackets" % addr)
    return ("tcp", host, int(port))


def _is_async_callable(fn):
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return True
    call = getattr(fn, "__call__", None)
    return inspect.iscoroutinefunction(call) or \
        inspect.isasyncgenfunction(call)


def _b(v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return str(v).encode("latin-1")


class _Conn(asyncio.Protocol):
    """One ingressd connection."""

    version = 1  # agreed in HELLO: min(ours, ingressd's)

    def __init__(self, replica):
        self.r = replica
        self.loop = replica.loop
        self.t = None
        self.hello = False  # the peer's HELLO arrived
        self.closing = False
        self.streams = {}  # stream id -> Request
        self.last_stream = 0  # highest REQUEST stream id seen
        self.pings = 0
        self.goaway_sent = False
        self.peer_goaway = False
        self._buf = None  # bytearray: a partial frame, and what follows
        self._need = 0  # bytes _buf must reach
        self._out = []
        self._flush_soon = False
        self._wpaused = False
        self._drainers = []

    # asyncio.Protocol

    def connection_made(self, transport):
        self.t = transport
        self.r._conns.add(self)
        # Both sides send HELLO first, without waiting for the other's.
        self.write(self.r._hello_frame)

    def data_received(self, data):
        if self.closing:
            return
        buf = self._buf
        if not buf:
            off = self._parse(data)
            if off < len(data) and not self.closing:
                self._buf = bytearray(memoryview(data)[off:])
            return
        buf += data
        if len(buf) < self._need:
            return
        off = self._parse(buf)
        if buf is self._buf:  # close() drops it
            del buf[:off]

    def _parse(self, buf):
        """Handle the whole frames in buf (bytes or our bytearray) in
        place: the header unpacked where it lies, payloads taken as one
        copy each; returns the bytes used, and sets _need to the size of
        the incomplete frame after them."""
        off, n = 0, len(buf)
        unpack = _HDR_UNPACK
        try:
            with memoryview(buf) as mv:
                while n - off >= wire.HEADER_SIZE:
                    length, ftype, flags, rsv, sid = unpack(buf, off)
                    # A REQUEST passes check_header when this holds.
                    if not (ftype == _REQUEST and flags <= 1 and sid and
                            not rsv and length <= _MAX_PAYLOAD):
                        r = wire.check_header(length, ftype, flags, rsv,
                                              sid)
                        if r is not wire.OK:
                            raise wire.WireError(r, "%s header" %
                                                 wire.type_name(ftype))
                    start = off + wire.HEADER_SIZE
                    if n - start < length:
                        self._need = wire.HEADER_SIZE + length
                        return off
                    off = start + length
                    if ftype == wire.REQUEST and self.hello:
                        self._request(sid, flags, mv, start, length)
                    elif ftype == wire.DATA and self.hello:
                        self._body(sid, ftype, flags,
                                   bytes(mv[start:off]))
                    else:
                        self._frame(wire.Frame(ftype, flags, sid,
                                               bytes(mv[start:off])))
                    if self.closing:
                        return off
        except (wire.WireError, _ProtocolError) as e:
            self.protocol_error(str(e))
            return off
        self._need = wire.HEADER_SIZE
        return off

    def eof_received(self):
        return False

    def connection_lost(self, exc):
        self.closing = True
        self.r._conns.discard(self)
        self._cancel_all()
        self._out.clear()
        self._wake_drainers()

    def pause_writing(self):
        self._wpaused = True

    def resume_writing(self):
        self._wpaused = False
        self._wake_drainers()

    # Frames from ingressd.

    def _frame(self, f):
        t = f.type
        if not self.hello:
            if t != wire.HELLO:
                raise _ProtocolError("expected HELLO, got %s" %
                                     wire.type_name(t))
            # The peer's version is >= 1 (0 does not decode):
            # min(ours, theirs) is one we speak.
            self.version = wire.version_agree(wire.decode_hello(f).version)
            self.hello = True
        elif t == wire.DATA or t == wire.END:
            self._body(f.stream, t, f.flags, f.payload)
        elif t == wire.PING:
            opaque = wire.decode_ping(f)
            self.pings += 1
            self.write(wire.encode_ping(opaque, wire.PONG))
        elif t == wire.CANCEL:
            wire.decode_cancel(f)
            self._cancel(f.stream)
        elif t == wire.ERROR:
            code, text = wire.decode_error(f)
            if f.stream != 0:
                self._cancel(f.stream)
            else:
                # Fatal from the peer: it closes, so do we.
                log.warning("ingressd closed the connection: "
                            "%s: %s", wire.code_name(code),
                            text.decode("latin-1"))
                self.close()
        elif t == wire.HELLO:
            raise _ProtocolError("second HELLO")
        elif t == wire.PONG:
            wire.decode_ping(f)
        elif t == wire.GOAWAY:
            # No new streams from ingressd; ours finish as usual.
            wire.decode_goaway(f)
            self.peer_goaway = True
        elif t == wire.WINDOW:
            inc = wire.decode_window(f)
            req = self.streams.get(f.stream) if f.stream else None
            if req is not None:  # stream 0: reserved in v1
                req._add_credit(inc)
        else:
            raise _ProtocolError("unexpected %s" % wire.type_name(t))

    def _request(self, sid, flags, buf, start, length):
        r = self.r
        if sid <= self.last_stream:
            raise _ProtocolError("REQUEST stream id not increasing")
        self.last_stream = sid
        head = wire.request_text(buf, start, length)
        if r.stopping or self.goaway_sent:
            self.write(wire.encode_error(sid, wire.CODE_REFUSED,
                                         b"draining"))
            return
        if r.active >= r.max_concurrency:
            self.write(wire.encode_error(sid, wire.CODE_OVERLOAD,
                                         b"over max_concurrency"))
            return
        req = Request(self, sid, head, r, self.pings)
        if flags & wire.FLAG_END:
            req._in_done = True
        self.streams[sid] = req
        r.active += 1
        # The handler runs now, in a context of its own (as a Task's
        # would be); a Task only if it waits (eager.py).
        contextvars.copy_context().run(self._start, req)

    def _start(self, req):
        coro = self.r._run(req)
        try:
            yielded = coro.send(None)
        except StopIteration:
            self._finished(req)  # the usual case: no Task at all
            return
        except Exception as e:
            self._finished(req)
            log.error("stream %d: %r", req.stream, e)
            return
        req._task = task = self.loop.create_task(
            eager.resume(coro, yielded))
        task.add_done_callback(functools.partial(self._task_done, req))
        if req.cancelled:  # cancelled while it ran eagerly
            task.cancel()

    def _body(self, sid, ftype, flags, payload):
        req = self.streams.get(sid)
        if req is None:
            return  # finished or refused: late frames are fine
        if req._in_done:
            raise _ProtocolError("%s after END on stream %d" % (
                wire.type_name(ftype), sid))
        if ftype == wire.DATA and payload and not req._feed(payload):
            raise _ProtocolError("DATA beyond the credit of stream %d"
                                 % sid)
        if ftype == wire.END or flags & wire.FLAG_END:
            req._end()

    def _cancel(self, sid):
        req = self.streams.get(sid)
        if req is not None and not req.cancelled:
            req.cancelled = True
            if req._task is not None:  # else running now: see _start
                req._task.cancel()

    def _cancel_all(self):
        for req in list(self.streams.values()):
            if not req.cancelled:
                req.cancelled = True
                if req._task is not None:
                    req._task.cancel()

    def _finished(self, req):
        r = self.r
        self.streams.pop(req.stream, None)
        req._out_done = True
        req._chunks.clear()  # unread body bytes are dropped
        r.active -= 1
        if r.stopping and r.active == 0:
            r._drained.set()

    def _task_done(self, req, task):
        self._finished(req)
        if not task.cancelled() and task.exception() is not None:
            log.error("stream %d: %r", req.stream, task.exception())

    # Output.

    def write(self, data):
        if self.closing:
            return
        self._out.append(data)
        if not self._flush_soon:
            self._flush_soon = True
            self.loop.call_soon(self._flush)

    def writelist(self, frames):
        if self.closing:
            return
        self._out.extend(frames)
        if not self._flush_soon:
            self._flush_soon = True
            self.loop.call_soon(self._flush)

    def _flush(self):
        self._flush_soon = False
        out = self._out
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        if self.t is not None and not self.t.is_closing():
            self.t.write(data)

    async def drain(self):
        """Write what is queued; wait while the transport's buffer is
        over its high-water mark."""
        self._flush()
        if self._wpaused and not self.closing:
            fut = self.loop.create_future()
            self._drainers.append(fut)
            await fut

    def _wake_drainers(self):
        waiters, self._drainers = self._drainers, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    # Closing.

    def send_goaway(self):
        if not self.closing and not self.goaway_sent:
            self.goaway_sent = True
            self.write(wire.encode_goaway(self.last_stream,
                                          wire.CODE_SHUTDOWN,
                                          b"shutting down"))

    def protocol_error(self, why):
        log.warning("protocol error from ingressd: %s", why)
        self.write(wire.encode_error(0, wire.CODE_PROTOCOL,
                                     why.encode("latin-1", "replace")))
        self.close()

    def close(self):
        """Close after what is queued is written; streams cancelled."""
        if self.closing:
            return
        self._flush()
        self.closing = True
        self._buf = None
        self._cancel_all()
        if self.t is not None:
            self.t.close()


class Replica:
    """A replica server.

    handler(req) is an async function (or an async generator function,
    or a plain function, which runs in a thread pool with the body read
    beforehand) returning what docs in python/README.md list.

    Settings come from the keyword arguments, else from argv (default:
    none; serve() passes sys.argv[1:]) --listen ADDR, --id ID,
    --deployment NAME, --max-concurrency N, --drain-ms N, --threads N,
    --register etcd://HOST:PORT/PREFIX (self-registration, etcd.py),
    --tls-cert FILE, --tls-key FILE, --tls-client-ca FILE (or an
    ssl_context: the wire over TLS on a TCP address, ingressd's
    certificate required when a client CA is given),
    else from the environment ingressd sets for a spawned replica:
    INGRESSD_LISTEN, INGRESSD_REPLICA_ID, INGRESSD_DEPLOYMENT (and
    INGRESSD_MAX_CONCURRENCY, INGRESSD_DRAIN_MS, INGRESSD_TLS_CERT,
    INGRESSD_TLS_KEY, INGRESSD_TLS_CLIENT_CA like the C library).
    on_startup() runs (awaited if it returns an awaitable) before the
    socket is bound, so ingressd reaches nothing that is not ready.
    """

    def __init__(self, handler: Callable[[Request], Any],
                 address: Optional[str] = None,
                 replica_id: Optional[str] = None,
                 deployment: Optional[str] = None,
                 max_concurrency: Optional[int] = None,
                 drain_ms: Optional[int] = None,
                 threads: Optional[int] = None,
                 on_startup: Optional[Callable[[], Any]] = None,
                 on_shutdown: Optional[Callable[[], Any]] = None,
                 argv: Optional[Sequence[str]] = None,
                 environ: Optional[Mapping[str, str]] = None,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        if not callable(handler):
            raise ConfigError("handler is not callable")
        self.handler = handler
        self._async = _is_async_callable(handler)
        # An async def handler's call is awaited as it is (the usual
        # case, no checks); anything else goes through isawaitable.
        self._coro = inspect.iscoroutinefunction(handler)
        self.on_startup = on_startup
        self.on_shutdown = on_shutdown
        opts = _options(argv or [], os.environ if environ is None
                        else environ)
        address = address or opts["listen"]
        if not address:
            raise ConfigError("no address: use --listen ADDR or "
                              "INGRESSD_LISTEN")
        self.listen = parse_address(address)
        # TLS toward ingressd on a TCP address only; unix stays plain.
        self.ssl_context = ssl_context or _tls_context(
            opts["tls_cert"], opts["tls_key"], opts["tls_client_ca"])
        if self.listen[0] == "unix":
            self.ssl_context = None
        self.replica_id = replica_id or opts["id"] or \
            "replica-%d" % os.getpid()
        self.deployment = deployment if deployment is not None else \
            (opts["deployment"] or "")
        for what, v in (("replica id", self.replica_id),
                        ("deployment name", self.deployment)):
            if len(v.encode()) > wire.MAX_NAME:
                raise ConfigError("%s too long" % what)
        if max_concurrency is None:
            max_concurrency = opts["maxc"]
        self.max_concurrency = _number("max concurrency", max_concurrency,
                                       1, 0xffffffff, DEFAULT_MAX_CONCURRENCY)
        if drain_ms is None:
            drain_ms = opts["drain"]
        self.drain_ms = _number("drain ms", drain_ms, 0, 3600 * 1000,
                                DEFAULT_DRAIN_MS)
        self.threads = _number("threads", threads if threads is not None
                               else opts["threads"], 1, 4096, None)
        self.address = None  # as bound, once started
        self.active = 0  # live requests, all connections
        self.stopping = False
        self.loop = None
        self._conns = set()
        self._server = None
        self._unix_path = None
        self._pool = None
        self._busy_threads = 0
        self._busy_lock = threading.Lock()
        self._hello_frame = wire.encode_hello(self.max_concurrency,
                                              self.deployment.encode(),
                                              self.replica_id.encode())
        self._stop = None
        self._force = None
        self._drained = None
        self._register_url = opts["register"]
        self._registration = None

    # Life cycle.

    async def start(self) -> None:
        """Run on_startup, then bind and listen."""
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._drained = asyncio.Event()
        if self.on_startup is not None:
            res = self.on_startup()
            if inspect.isawaitable(res):
                await res
        sock = self._bind()
        if self.listen[0] == "unix":
            self._server = await self.loop.create_unix_server(
                lambda: _Conn(self), sock=sock)
        else:
            self._server = await self.loop.create_server(
                lambda: _Conn(self), sock=sock, ssl=self.ssl_context)
        log.info("listening on %s", self.address)
        if self._register_url:
            from .etcd import Registration
            self._registration = Registration(
                self._register_url, self.deployment, self.replica_id,
                self.address, self.max_concurrency).start()

    async def run(self) -> None:
        """start(), then serve until SIGTERM/SIGINT or stop(), then
        drain: GOAWAY on every connection, requests in flight get up
        to drain_ms (a second signal cuts that short), the rest are
        cancelled."""
        await self.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self.loop.add_signal_handler(sig, self.stop)
            except (ValueError, RuntimeError, NotImplementedError):
                pass  # not the main thread: stop() by hand
        try:
            await self._stop.wait()
            await self._shutdown()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    self.loop.remove_signal_handler(sig)
                except (ValueError, RuntimeError,
                        NotImplementedError):
                    pass

    def stop(self) -> None:
        """Begin the drain; a second call ends it now."""
        if self._stop.is_set():
            self._force.set()
        self._stop.set()

    async def _shutdown(self):
        self.stopping = True
        if self._registration is not None:
            self._registration.stop()
        self._server.close()
        self._unlink()
        for c in list(self._conns):
            c.send_goaway()
        if self.active:
            waits = [asyncio.ensure_future(self._drained.wait()),
                     asyncio.ensure_future(self._force.wait())]
            done, pending = await asyncio.wait(
                waits, timeout=self.drain_ms / 1000.0,
                return_when=asyncio.FIRST_COMPLETED)
            for w in pending:
                w.cancel()
            if self.active:
                log.info("drain over: cancelling %d requests",
                         self.active)
        tasks = [q._task for c in self._conns for q in
                 c.streams.values() if q._task is not None]
        for c in list(self._conns):
            c.close()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        if self.on_shutdown is not None:
            res = self.on_shutdown()
            if inspect.isawaitable(res):
                await res
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def _bind(self):
        if self.listen[0] == "unix":
            path = self.listen[1]
            # Only a socket is stale; never unlink anything else.
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)
            except FileNotFoundError:
                pass
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(path)
                sock.listen(1024)
            except OSError:
                sock.close()
                raise
            self._unix_path = path
            self.address = "unix:" + path
            return sock
        _, host, port = self.listen
        ai = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC,
                                socket.SOCK_STREAM, 0, socket.AI_PASSIVE)[0]
        sock = socket.socket(ai[0], socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(ai[4])
            sock.listen(1024)
        except OSError:
            sock.close()
            raise
        bound = sock.getsockname()
        if ai[0] == socket.AF_INET6:
            self.address = "[%s]:%d" % (bound[0], bound[1])
        else:
            self.address = "%s:%d" % (bound[0], bound[1])
        return sock

    def _unlink(self):
        if self._unix_path is not None:
            try:
                os.unlink(self._unix_path)
            except OSError:
                pass
            self._unix_path = None

    # Running handlers.

    def _in_pool(self, fn, *args):
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self.threads, thread_name_prefix="replica")
        return self.loop.run_in_executor(
            self._pool, functools.partial(self._pool_call, fn, *args))

    def _pool_call(self, fn, *args):
        with self._busy_lock:
            self._busy_threads += 1
        try:
            return fn(*args)
        finally:
            with self._busy_lock:
                self._busy_threads -= 1

    async def _run(self, req):
        """One request: the handler, then its response, or a failure."""
        try:
            if self._coro:
                result = await self.handler(req)
            elif self._async:
                result = self.handler(req)
            else:
                await req.body()
                result = await self._in_pool(self.handler, req)
            if type(result) not in _PLAIN and inspect.isawaitable(result):
                result = await result
            if not self._respond_now(req, result):
                await self._respond(req, result)
            elif req._conn._wpaused:
                await req._conn.drain()
        except asyncio.CancelledError:
            if req.cancelled or req._conn.closing:
                return  # nothing more may be sent
            await self._fail(req, "cancelled inside the handler",
                             500, "internal server error\n")
        except HTTPError as e:
            await self._fail(req, "HTTP %d" % e.status, e.status,
                             e.body, e.headers)
        except Exception as e:
            log.exception("request %s (stream %d) failed",
                          req.request_id or "-", req.stream)
            await self._fail(req, "%s: %s" % (type(e).__name__, e),
                             500, "internal server error\n")

    async def _fail(self, req, why, status, body, headers=None):
        conn = req._conn
        if req.cancelled or conn.closing or req._out_done:
            return
        if not req._out_head:
            try:
                await self._respond(req, Response(body, status,
                                                  headers))
                return
            except asyncio.CancelledError:
                return
            except Exception as e:
                log.error("stream %d: cannot answer %d: %s",
                          req.stream, status, e)
                if req._out_done:
                    return
        req._out_done = True
        conn.write(wire.encode_error(req.stream, wire.CODE_INTERNAL,
                                     why.encode("utf-8", "replace")))

    def _respond_now(self, req, result):
        """The usual answer without a coroutine: a fixed body of at most
        one DATA frame within the stream's credit, no headers of the
        handler's, RESPONSE and DATA encoded as one write.  False when
        _respond() must do it (the caller then drains, as _respond
        does)."""
        if type(result) is tuple:
            if len(result) == 2:
                status, body = result
            elif len(result) == 3 and result[1] is None:
                status, _, body = result
            else:
                return False
        else:
            status, body = 200, result
        kind = type(body)
        if kind is str:
            ctype, data = "text/plain; charset=utf-8", body.encode("utf-8")
        elif kind is bytes:
            ctype, data = "application/octet-stream", body
        elif kind is dict or kind is list:
            ctype, data = "application/json", _json(body).encode("utf-8")
        else:
            return False
        n = len(data)
        if not 0 < n <= min(req._send_credit, wire.MAX_DATA) or \
                status in (204, 304) or type(status) is not int or \
                status < 200:
            return False
        conn = req._conn
        if req.cancelled or conn.closing:
            return True
        out = wire.response_with_body(req.stream, status, ctype, data)
        req._out_head = req._out_done = True
        req._send_credit -= n
        conn.write(out)
        return True

    async def _respond(self, req, result):
        status, headers, body = 200, None, result
        if isinstance(result, Response):
            status, headers, body = result.status, result.headers, \
                result.body
            if result.trailers is not None:
                await self._respond_trailers(req, status, headers, body,
                                             result.trailers)
                return
        elif isinstance(result, tuple):
            if len(result) == 3:
                status, headers, body = result
            elif len(result) == 2:
                status, body = result
            else:
                raise TypeError("a handler's tuple is (status, "
                                "body) or (status, headers, body)")
        elif result is None:
            status = 204
        ctype, data = _fixed_body(body)
        if data is None:
            await self._stream(req, status, headers, body)
            return
        fields = _fields(headers, ctype, len(data), status)
        conn = req._conn
        if req.cancelled or conn.closing:
            return
        head = wire.encode_response(req.stream, status, fields,
                                    0 if data else wire.FLAG_END)
        req._out_head = True
        if len(data) <= req._send_credit:
            # The usual case: head and body in one go.
            req._out_done = True
            if data:
                req._send_credit -= len(data)
                frames = wire.data_frames(req.stream, data, True)
                frames.insert(0, head)
                conn.writelist(frames)
            else:
                conn.write(head)
            if conn._wpaused:
                await conn.drain()
            return
        conn.write(head)
        await self._send_body(req, data, True)

    async def _respond_trailers(self, req, status, headers, body, trailers):
        """RESPONSE (no content-length), the body, then TRAILERS in
        place of END (END alone on a v1 connection)."""
        conn = req._conn
        ctype, data = _fixed_body(body)
        fields = _fields(headers, ctype if data else None, None, status)
        if req.cancelled or conn.closing:
            return
        conn.write(wire.encode_response(req.stream, status, fields, 0))
        req._out_head = True
        if data is not None:
            await self._send_body(req, data)
        elif hasattr(body, "__aiter__"):
            await self._stream_async(req, body)
        elif hasattr(body, "__iter__"):
            await self._stream_sync(req, iter(body))
        else:
            raise TypeError("cannot send a %s as a body" %
                            type(body).__name__)
        if callable(trailers):
            trailers = trailers()
        if req.cancelled or conn.closing or req._out_done:
            return
        req._out_done = True
        if conn.version < wire.VERSION_TRAILERS:
            conn.write(wire.encode_end(req.stream))
        else:
            conn.write(wire.encode_trailers(req.stream, _fields(
                trailers, None, None, status)))

    async def _stream(self, req, status, headers, body):
        """RESPONSE now, then DATA as the iterable yields, then END."""
        conn = req._conn
        sync = not hasattr(body, "__aiter__")
        if sync and not hasattr(body, "__iter__"):
            raise TypeError("cannot send a %s as a body" %
                            type(body).__name__)
        fields = _fields(headers, None, None, status)
        if req.cancelled or conn.closing:
            return
        conn.write(wire.encode_response(req.stream, status, fields, 0))
        req._out_head = True
        if sync:
            await self._stream_sync(req, iter(body))
        else:
            await self._stream_async(req, body)
        await self._send_body(req, b"", True)

    async def _send_body(self, req, data, end=False):
        """DATA frames for data, as far as the stream's credit goes,
        waiting for WINDOW beyond it; END after them when end."""
        conn = req._conn
        n, off = len(data), 0
        view = memoryview(data) if n > wire.MAX_DATA or \
            n > req._send_credit else data
        while off < n:
            if req._send_credit <= 0:
                await conn.drain()
                await req._wait_credit()
            if req.cancelled or conn.closing:
                return
            k = min(n - off, req._send_credit, wire.MAX_DATA)
            last = end and off + k == n
            flags = wire.FLAG_END if last else 0
            conn.writelist([wire.encode_header(k, wire.DATA, flags,
                                               req.stream),
                            view[off:off + k] if k < n else data])
            req._send_credit -= k
            off += k
            await conn.drain()
        if req.cancelled or conn.closing:
            return
        if end:
            if n == 0:
                conn.write(wire.encode_end(req.stream))
            req._out_done = True

    async def _stream_async(self, req, body):
        try:
            async for chunk in body:
                await self._send_body(req, _chunk_bytes(chunk))
        finally:
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _stream_sync(self, req, it):
        """A sync iterator (a generator, say) may block: next() runs
        in the thread pool."""
        try:
            while True:
                chunk = await self._in_pool(next, it, _NO_MORE)
                if chunk is _NO_MORE:
                    break
                await self._send_body(req, _chunk_bytes(chunk))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                try:
                    close()
                except ValueError:
                    pass  # still running in its thread


def _fixed_body(body):
    """(default content type, bytes) for a body sent at once, or
    (None, None) for one to stream."""
    if body is None:
        return None, b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return "application/octet-stream", body
    if isinstance(body, str):
        return "text/plain; charset=utf-8", body.encode("utf-8")
    if isinstance(body, (dict, list)):
        return "application/json", json.dumps(
            body, separators=(",", ":")).encode("utf-8")
    return None, None


def _chunk_bytes(chunk):
    """One streamed piece: bytes as they are, str as UTF-8, a dict or
    list as one line of JSON."""
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        return chunk
    if isinstance(chunk, str):
        return chunk.encode("utf-8")
    if isinstance(chunk, (dict, list)):
        return json.dumps(chunk, separators=(",", ":")).encode() + b"\n"
    if chunk is None:
        return b""
    raise TypeError("cannot stream a %s" % type(chunk).__name__)


def _fields(headers, ctype, length, status):
    """Response fields as (bytes, bytes) pairs: the handler's, then a
    content-type and content-length when it gave none."""
    if headers is None:
        pairs = []
    elif isinstance(headers, dict):
        pairs = list(headers.items())
    elif hasattr(headers, "items") and not isinstance(headers, list):
        pairs = list(headers.items())
    else:
        pairs = list(headers)
    out = []
    have_type = have_len = False
    for name, value in pairs:
        n = _b(name)
        low = n.lower()
        if low == b"content-type":
            have_type = True
        elif low == b"content-length":
            have_len = True
        out.append((n, _b(value)))
    if ctype is not None and length and not have_type:
        out.append((b"content-type", ctype.encode()))
    if length is not None and not have_len and status not in (204, 304) \
            and not 100 <= status < 200:
        out.append((b"content-length", b"%d" % length))
    return out


def _number(what, v, lo, hi, default):
    if v is None or v == "":
        return default
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise ConfigError("bad %s \"%s\"" % (what, v))
    if n < lo or n > hi:
        raise ConfigError("bad %s \"%s\": not in %d..%d" % (what, v, lo,
                                                            hi))
    return n


def _options(argv, env):
    """The replica's options from argv (which wins) and env.  Arguments
    that are not ours are left to the application."""
    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    ap.add_argument("--listen")
    ap.add_argument("--id")
    ap.add_argument("--deployment")
    ap.add_argument("--max-concurrency", dest="maxc")
    ap.add_argument("--drain-ms", dest="drain")
    ap.add_argument("--threads")
    ap.add_argument("--register")
    ap.add_argument("--tls-cert", dest="tls_cert")
    ap.add_argument("--tls-key", dest="tls_key")
    ap.add_argument("--tls-client-ca", dest="tls_client_ca")
    ns, _rest = ap.parse_known_args(list(argv))
    return {
        "listen": ns.listen or env.get("INGRESSD_LISTEN"),
        "id": ns.id or env.get("INGRESSD_REPLICA_ID"),
        "deployment": ns.deployment if ns.deployment is not None
        else env.get("INGRESSD_DEPLOYMENT"),
        "maxc": ns.maxc or env.get("INGRESSD_MAX_CONCURRENCY"),
        "drain": ns.drain or env.get("INGRESSD_DRAIN_MS"),
        "threads": ns.threads or env.get("INGRESSD_THREADS"),
        "register": ns.register or env.get("INGRESSD_REGISTER"),
        "tls_cert": ns.tls_cert or env.get("INGRESSD_TLS_CERT"),
        "tls_key": ns.tls_key or env.get("INGRESSD_TLS_KEY"),
        "tls_client_ca": ns.tls_client_ca or
        env.get("INGRESSD_TLS_CLIENT_CA"),
    }


def _tls_context(cert, key, client_ca):
    """The wire over TLS on a TCP address, as the C library does it: our
    certificate, and with client_ca, ingressd's certificate required and
    verified against it.  TLS 1.2 and 1.3 only."""
    if not cert:
        return None
    try:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key or None)
        if client_ca:
            ctx.load_verify_locations(client_ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as e:
        raise ConfigError("TLS: %s" % e)
    return ctx


def _setup_logging(replica_id):
    """stderr, "replica ID: message", unless the application set up
    logging itself."""
    if logging.getLogger().handlers or log.handlers:
        return
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("replica %s: %%(message)s" %
                                     replica_id.replace("%", "%%")))
    log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False


def serve(handler: Callable[[Request], Any], address: Optional[str] = None,
          **kwargs: Any) -> int:
    """Serve handler until SIGTERM or SIGINT and the drain; returns 0.

    Settings: see Replica (argv defaults to sys.argv[1:] here).  A bad
    setting or a socket that cannot be bound prints why and exits 1."""
    kwargs.setdefault("argv", sys.argv[1:])
    try:
        r = Replica(handler, address, **kwargs)
    except ConfigError as e:
        sys.stderr.write("replica: %s\n" % e)
        raise SystemExit(1)
    _setup_logging(r.replica_id)
    try:
        asyncio.run(r.run())
    except OSError as e:
        log.error("%s: %s", r.listen[1] if r.listen[0] == "unix" else
                  "%s:%d" % r.listen[1:], e)
        raise SystemExit(1)
    except KeyboardInterrupt:
        pass
    if r._busy_threads:
        # Pool threads are joined at exit; a handler stuck in one
        # would keep the process up past the drain.
        log.warning("%d handler threads still busy: exiting anyway",
                    r._busy_threads)
        logging.shutdown()
        os._exit(0)
    return 0
