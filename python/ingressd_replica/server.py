"""The replica server on asyncio (see docs/protocol.md): Replica and serve().

A Replica listens on the address ingressd gave it and accepts any number of
ingressd connections, each a _Conn (conn.py: frames, flow control, which
handler runs when).  Here: the life cycle (start-up, drain, shutdown), the
settings, running one request's handler (_run) and writing what it returned
(_respond and the streaming around it); the usual answer (a fixed body) is
its RESPONSE and DATA encoded as one piece, without a coroutine.

A handler that raises gets RESPONSE 500 if nothing was sent yet, else ERROR
(INTERNAL) on the stream (ingressd then cuts the client's response); the
connection and the replica carry on.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
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

from . import wire
from .conn import _Conn
from .request import HTTPError, Request, Response

log = logging.getLogger("ingressd_replica")

DEFAULT_MAX_CONCURRENCY = 1024
DEFAULT_DRAIN_MS = 2000
_NO_MORE = object()  # end of a sync iterator, from the pool
_PLAIN = frozenset((str, bytes, dict, list, tuple, type(None)))
_json = json.JSONEncoder(separators=(",", ":")).encode


class ConfigError(ValueError):
    """A bad option or environment value; the message says which."""


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
    --eager (INGRESSD_EAGER=1: a handler runs without a Task until it
    first waits; faster below Python 3.12, but asyncio.current_task()
    is None until then, so asyncio.timeout() or a TaskGroup opened
    before the first await raise RuntimeError),
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
                 eager: Optional[bool] = None,
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
        self.eager = eager if eager is not None else \
            _flag("INGRESSD_EAGER", opts["eager"])
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


def _flag(what, v):
    if v is None or v in ("", "0"):
        return False
    if v == "1":
        return True
    raise ConfigError("bad %s \"%s\": 0 or 1" % (what, v))


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
    ap.add_argument("--eager", action="store_true")
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
        "eager": "1" if ns.eager else env.get("INGRESSD_EAGER"),
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
