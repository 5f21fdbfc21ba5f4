"""The replica side of one ingressd connection (wire protocol v2, see
docs/protocol.md): _Conn, an asyncio.Protocol, made by Replica (server.py)
for every connection it accepts.

It sends its HELLO at once, answers PING with PONG from the read callback,
and turns every REQUEST into a Request and starts its handler at once, from
the frame dispatch, so many requests are in flight on one connection.  By
default the handler runs in an asyncio Task from its first step (on 3.12+
one asyncio starts eagerly: a handler that finishes without waiting needs
no loop pass), so asyncio.current_task() is right throughout.  With
eager=True it runs without a Task until it first waits (eager.py): cheaper
below 3.12, but no current task before that first wait.  Frames are decoded
where they lie in the bytes read (struct.unpack_from, one copy per
payload).  What handlers write is queued and written when the loop next
turns: one transport.write per connection per loop pass, for every request
answered in it.

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

import asyncio
import contextvars
import functools
import logging
import sys

from . import eager, wire
from .request import Request

log = logging.getLogger("ingressd_replica")

_HDR_UNPACK = wire._HDR.unpack_from
_REQUEST, _MAX_PAYLOAD = wire.REQUEST, wire.MAX_PAYLOAD
# asyncio.Task(..., eager_start=True): new in 3.12.
_EAGER_START = sys.version_info >= (3, 12)


class _ProtocolError(Exception):
    """ingressd broke the protocol; the text goes into our ERROR."""


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
        if r.eager:
            # The handler runs now, in a context of its own (as a
            # Task's would be); a Task only if it waits (eager.py).
            contextvars.copy_context().run(self._start, req)
        else:
            self._start_task(req)

    def _start_task(self, req):
        """The handler in a Task from its first step, so that
        asyncio.current_task() is right in it (asyncio.timeout() and
        TaskGroup need it).  On 3.12+ asyncio starts the Task eagerly,
        here and now: a handler that finishes without waiting costs a
        Task object but no loop pass and no done callback."""
        loop = self.loop
        coro = self.r._run(req)
        if _EAGER_START and loop.get_task_factory() is None:
            task = asyncio.Task(coro, loop=loop, eager_start=True)
            if task.done():
                self._task_done(req, task)
                return
        else:
            task = loop.create_task(coro)  # a factory of the user's
        req._task = task
        task.add_done_callback(functools.partial(self._task_done, req))
        if req.cancelled:  # cancelled while it ran eagerly
            task.cancel()

    def _start(self, req):
        """eager=True: the first step here, without a Task."""
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
