"""What a handler sees (Request, Headers) and may give back (Response,
HTTPError).

A Request is made when a REQUEST frame arrives and lives until the
handler's task ends.  Its body arrives as DATA frames while the handler
runs: `await req.body()` waits for all of it, `async for chunk in req`
takes it piece by piece.  Strings from the wire are decoded as Latin-1,
which keeps every byte (HTTP field values are bytes, not text).
"""

from __future__ import annotations

import collections
import json
from typing import (Any, AsyncIterator, Dict, Iterable, Iterator, List,
                    Optional, Tuple)
from urllib.parse import parse_qsl

from .wire import INITIAL_WINDOW, encode_window


class Headers:
    """Request header fields in arrival order, looked up in any case.
    Repeated fields stay separate: get() gives the first, getall() every
    one."""

    __slots__ = ("_pairs",)

    def __init__(self, pairs: Iterable[Tuple[str, str]] = ()) -> None:
        self._pairs = list(pairs)

    def get(self, name: str,
            default: Optional[str] = None) -> Optional[str]:
        name = name.lower()
        for k, v in self._pairs:
            if k.lower() == name:
                return v
        return default

    def getall(self, name: str) -> List[str]:
        name = name.lower()
        return [v for k, v in self._pairs if k.lower() == name]

    def __getitem__(self, name: str) -> str:
        v = self.get(name)
        if v is None:
            raise KeyError(name)
        return v

    def __contains__(self, name: object) -> bool:
        return self.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def items(self) -> List[Tuple[str, str]]:
        """(name, value) pairs as received, names in their own case."""
        return list(self._pairs)

    def __repr__(self):
        return "Headers(%r)" % (self._pairs,)


class Response:
    """An explicit response: body is anything a handler may return (bytes,
    str, dict/list as JSON, None, an async or sync iterable to stream);
    headers a dict or (name, value) pairs.

    trailers (wire v2): fields sent after the body, as headers are, or a
    function of no arguments returning them, called once the body is out
    (a streamed body may decide them as it goes).  A response with
    trailers carries no content-length (ingressd then frames it chunked
    and adds them to a client that sent TE: trailers).  An ingressd that
    speaks only wire v1 cannot carry trailers: they are dropped."""

    __slots__ = ("status", "headers", "body", "trailers")

    def __init__(self, body: Any = b"", status: int = 200,
                 headers: Any = None, trailers: Any = None) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.trailers = trailers


class HTTPError(Exception):
    """Raise in a handler to answer this status (with body, default the
    reason text) instead of 500.  Once the response has started, it
    fails the stream like any other exception."""

    def __init__(self, status: int, body: Any = None,
                 headers: Any = None) -> None:
        Exception.__init__(self, status, body)
        self.status = status
        self.body = body if body is not None else "HTTP %d\n" % status
        self.headers = headers


class Request:
    """One request.  Attributes: method, target (path?query), path, query
    ("" if none), headers (Headers), deployment, request_id, deadline_ms
    (0: none), stream (the wire stream id), replica (the Replica: its
    replica_id, deployment...), replica_id, conn_pings (PINGs seen on the
    connection before this request).  cancelled is true once
    ingressd abandoned the stream (a sync handler may poll it)."""

    __slots__ = ("method", "target", "path", "query", "headers",
                 "deployment", "request_id", "deadline_ms", "stream",
                 "replica", "replica_id",
                 "conn_pings", "cancelled", "_conn", "_chunks", "_in_done",
                 "_waiter", "_data", "_args", "_task", "_out_head",
                 "_out_done",
                 "_body_len", "_recv_credit", "_unacked", "_send_credit",
                 "_credit_waiter")

    def __init__(self, conn, stream, head, replica, conn_pings):
        # head: wire.request_text()'s list, strings already decoded.
        method, target, dep, rid, self.deadline_ms, fields = head
        path, _, query = target.partition("?")
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.headers = Headers(fields)
        self.deployment = dep
        self.request_id = rid
        self.stream = stream
        self.replica = replica
        self.replica_id = replica.replica_id
        self.conn_pings = conn_pings
        self.cancelled = False
        self._conn = conn
        self._chunks = collections.deque()
        self._in_done = False
        self._waiter = None
        self._data = None
        self._args = None
        self._task = None
        self._out_head = False
        self._out_done = False
        self._body_len = 0
        self._recv_credit = INITIAL_WINDOW  # DATA ingressd may send
        self._unacked = 0  # consumed, not yet granted back
        self._send_credit = INITIAL_WINDOW  # DATA we may send
        self._credit_waiter = None

    def __repr__(self):
        return "<Request %d %s %s>" % (self.stream, self.method,
                                       self.target)

    @property
    def args(self) -> Dict[str, str]:
        """The query as a dict, percent-decoded; the first value wins
        for a repeated key."""
        if self._args is None:
            d = {}
            for k, v in parse_qsl(self.query, keep_blank_values=True):
                d.setdefault(k, v)
            self._args = d
        return self._args

    @property
    def body_length(self) -> int:
        """Body bytes received so far."""
        return self._body_len

    @property
    def data(self) -> bytes:
        """The whole body, once read: always for a sync handler (the
        body is read before it is called), after `await body()` for an
        async one."""
        if self._data is None:
            raise RuntimeError("the body has not been read: "
                               "use await req.body()")
        return self._data

    async def body(self) -> bytes:
        """The whole request body (waits for the end of it)."""
        if self._data is None:
            parts = []
            async for chunk in self:
                parts.append(chunk)
            self._data = b"".join(parts)
        return self._data

    async def text(self, encoding: str = "utf-8") -> str:
        return (await self.body()).decode(encoding)

    async def json(self) -> Any:
        return json.loads(await self.body())

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        while not self._chunks:
            if self._in_done:
                raise StopAsyncIteration
            self._waiter = self._conn.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunk = self._chunks.popleft()
        self._consumed(len(chunk))
        return chunk

    def _consumed(self, n):
        """Credit consumed body bytes back to ingressd, half a window
        at a time, while more body may come."""
        self._unacked += n
        if self._unacked >= INITIAL_WINDOW // 2 and not self._in_done:
            self._conn.write(encode_window(self.stream,
                                           self._unacked))
            self._recv_credit += self._unacked
            self._unacked = 0

    # Fed by the connection.

    def _wake(self):
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _feed(self, data):
        """DATA from ingressd, which must hold the credit for it."""
        n = len(data)
        if n > self._recv_credit:
            return False
        self._recv_credit -= n
        self._body_len += n
        if self._out_done or self.cancelled:
            self._consumed(n)  # the handler is gone: drop it
            return True
        self._chunks.append(data)
        self._wake()
        return True

    def _end(self):
        self._in_done = True
        self._wake()

    def _discard(self):
        """The handler is done: unread body bytes are dropped."""
        self._chunks.clear()

    def _add_credit(self, n):
        """WINDOW from ingressd: more response DATA may go."""
        self._send_credit += n
        w = self._credit_waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait_credit(self):
        while self._send_credit <= 0:
            self._credit_waiter = self._conn.loop.create_future()
            try:
                await self._credit_waiter
            finally:
                self._credit_waiter = None
