"""The SDK's replica side, driven frame by frame.

Each test runs a Replica with its own handler in a thread (its own event
loop, a unix socket in a temporary directory) and talks to it with
tests/integ/wire_client.py, an independent decoder that plays ingressd.
The examples run as processes, the way ingressd spawns them.
"""

import asyncio
import json
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integ"))

import wire_client as wc  # noqa: E402
from ingressd_replica import (ConfigError, HTTPError, Replica,  # noqa: E402
    Response, parse_address)
from ingressd_replica import server as srv  # noqa: E402

T = 5.0  # seconds any single wait may take

# Handler tracebacks the tests cause on purpose are not news.
logging.getLogger("ingressd_replica").addHandler(logging.NullHandler())
logging.getLogger("ingressd_replica").propagate = False


class Running:
    """A Replica serving in a thread on a private unix socket."""

    def __init__(self, handler, **kw):
        self.dir = tempfile.mkdtemp(prefix="pyreplica-")
        self.path = os.path.join(self.dir, "r.sock")
        kw.setdefault("replica_id", "t-1")
        kw.setdefault("deployment", "dep")
        self.r = Replica(handler, "unix:" + self.path, environ={}, **kw)
        self.error = None
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + T
        while self.r.address is None:
            if time.monotonic() > deadline or self.error:
                raise AssertionError("replica did not start: %r" %
                                     (self.error,))
            time.sleep(0.005)

    def _main(self):
        try:
            asyncio.run(self.r.run())
        except BaseException as e:  # noqa: B902 -- reported
            self.error = e

    def client(self, hello=True):
        c = wc.WireClient.connect("unix:" + self.path, timeout=T)
        if hello:
            c.hello()
            c.ping()
        return c

    def call(self, fn):
        """fn() on the replica's loop."""
        self.r.loop.call_soon_threadsafe(fn)

    def stop(self):
        if self.thread.is_alive():
            self.call(self.r.stop)
            self.thread.join(T)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.thread.is_alive():
            raise AssertionError("replica thread still running")
        if self.error:
            raise self.error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


WINDOW0 = 256 << 10  # wire.h WIRE_INITIAL_WINDOW


def take_window(c, stream, timeout=None):
    """The next WINDOW the replica sent on stream: its increment."""
    for i, f in enumerate(c.pending[stream]):
        if f.type == wc.WINDOW:
            del c.pending[stream][i]
            return wc.decode_payload(f)
    f = c._next(lambda f: f.type == wc.WINDOW and f.stream == stream,
                timeout)
    if f is None:
        raise AssertionError("EOF waiting for WINDOW on %d" % stream)
    return wc.decode_payload(f)


def send_body(c, stream, body, end=True):
    """Send body as DATA, never beyond the credit the replica granted
    (WIRE_INITIAL_WINDOW to start with, then its WINDOW frames)."""
    credit, off = WINDOW0, 0
    while off < len(body):
        while credit == 0:
            credit += take_window(c, stream)
        k = min(64 << 10, credit, len(body) - off)
        c.data(stream, body[off:off + k], end and off + k == len(body))
        credit -= k
        off += k
    if end and not body:
        c.end(stream)


def collect(c, stream, timeout=None):
    """WireClient.collect(), granting the replica credit (WINDOW) for
    the response DATA it takes, half a window at a time."""
    status, headers, body, frames, error = None, [], bytearray(), [], None
    ended, unacked = False, 0
    while not ended:
        f = c.frames_for(stream, timeout)
        if f is None:
            break
        frames.append(f)
        if f.type == wc.RESPONSE:
            status, headers = wc.decode_payload(f)
        elif f.type == wc.DATA:
            body += f.payload
            unacked += len(f.payload)
            if unacked >= WINDOW0 // 2:
                c.send_frame(wc.WINDOW, struct.pack(">I", unacked),
                             0, stream)
                unacked = 0
        elif f.type == wc.ERROR:
            error = wc.decode_payload(f)
            ended = True
        if f.type == wc.END or f.flags & wc.FLAG_END:
            ended = True
    return wc.Response(status, headers, bytes(body), frames, error, ended)


def expect_protocol_error(test, c):
    f = c._next(lambda f: f.type == wc.ERROR and f.stream == 0)
    test.assertIsNotNone(f, "no ERROR on stream 0")
    test.assertEqual(wc.decode_payload(f)[0], wc.CODE_PROTOCOL)
    test.assertIsNone(c.recv_frame(), "connection still open")


async def hello_handler(req):
    return b"Hello world!"


class Basics(unittest.TestCase):

    def test_hello_ping_and_identity(self):
        with Running(hello_handler, max_concurrency=7) as rp:
            with rp.client(hello=False) as c:
                # The replica's HELLO comes without waiting.
                h = c.read_hello()
                self.assertEqual((h.version, h.max_concurrency,
                                  h.deployment, h.replica_id), (2, 7, "dep",
                                                                "t-1"))
                c.hello()
                for _ in range(3):
                    c.ping()

    def test_future_version_hello_accepted(self):
        with Running(hello_handler) as rp:
            with rp.client(hello=False) as c:
                c.hello(version=7)
                c.ping()
                c.request(1, "GET", "/")
                self.assertEqual(c.collect(1).body, b"Hello world!")

    def test_bytes_response_frames(self):
        with Running(hello_handler) as rp, rp.client() as c:
            for s in (1, 3, 5):
                c.request(s, "GET", "/")
            for s in (1, 3, 5):
                r = c.collect(s)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.body, b"Hello world!")
                self.assertIn(("content-length", "12"), r.headers)
                self.assertIn(("content-type",
                               "application/octet-stream"), r.headers)
                self.assertEqual([f.type for f in r.frames],
                                 [wc.RESPONSE, wc.DATA])
                self.assertEqual(r.frames[1].flags, wc.FLAG_END)

    def test_return_types(self):
        async def handler(req):
            k = req.args["k"]
            if k == "str":
                return "héllo"
            if k == "dict":
                return {"a": [1, 2]}
            if k == "none":
                return None
            if k == "tuple2":
                return 201, b"made"
            if k == "tuple3":
                return 202, {"X-A": "1", "content-type": "a/b"}, "x"
            if k == "response":
                return Response(b"", 200, [("x-b", "2")])
            if k == "bytearray":
                return bytearray(b"ba")
        with Running(handler) as rp, rp.client() as c:
            def get(s, k):
                c.request(s, "GET", "/?k=" + k)
                return c.collect(s)
            r = get(1, "str")
            self.assertEqual(r.body, "héllo".encode())
            self.assertIn(("content-type",
                           "text/plain; charset=utf-8"), r.headers)
            r = get(3, "dict")
            self.assertEqual(json.loads(r.body), {"a": [1, 2]})
            self.assertIn(("content-type", "application/json"),
                          r.headers)
            r = get(5, "none")
            self.assertEqual((r.status, r.body, r.headers),
                             (204, b"", []))
            self.assertEqual(r.frames[0].flags, wc.FLAG_END)
            r = get(7, "tuple2")
            self.assertEqual((r.status, r.body), (201, b"made"))
            r = get(9, "tuple3")
            self.assertEqual(r.status, 202)
            self.assertEqual(r.headers, [("X-A", "1"),
                                         ("content-type", "a/b"), ("content-length", "1")])
            r = get(11, "response")
            self.assertEqual(r.headers, [("x-b", "2"),
                                         ("content-length", "0")])
            self.assertEqual(len(r.frames), 1)
            r = get(13, "bytearray")
            self.assertEqual(r.body, b"ba")

    def test_request_fields(self):
        seen = {}

        async def handler(req):
            seen.update(method=req.method, target=req.target,
                        path=req.path, query=req.query, args=req.args,
                        host=req.headers.get("HOST"),
                        xa=req.headers.getall("x-a"), dep=req.deployment,
                        rid=req.request_id, deadline=req.deadline_ms,
                        stream=req.stream, replica=req.replica_id,
                        pings=req.conn_pings)
            return b""
        with Running(handler) as rp, rp.client() as c:
            c.request(9, "DELETE", "/a/b?x=1&y=%C3%A9&x=2",
                      [("Host", "h"), ("X-A", "1"), ("x-a", "2")],
                      deployment="models", request_id="rid-1",
                      deadline_ms=1234)
            self.assertEqual(c.collect(9).status, 200)
        self.assertEqual(seen, dict(method="DELETE",
                                    target="/a/b?x=1&y=%C3%A9&x=2", path="/a/b",
                                    query="x=1&y=%C3%A9&x=2", args={"x": "1", "y": "é"},
                                    host="h", xa=["1", "2"], dep="models", rid="rid-1",
                                    deadline=1234, stream=9, replica="t-1", pings=1))

    def test_big_response_split_at_max_data(self):
        body = os.urandom(wire_max_data() * 2 + 100)

        async def handler(req):
            return body
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            r = collect(c, 1)
            self.assertEqual(r.body, body)
            self.assertIn(("content-length", str(len(body))),
                          r.headers)
            sizes = [len(f.payload) for f in r.frames[1:]]
            self.assertEqual(sizes[0], wire_max_data())
            self.assertLessEqual(max(sizes), wire_max_data())
            self.assertEqual(r.frames[-1].flags, wc.FLAG_END)


def wire_max_data():
    return 256 << 10


class Bodies(unittest.TestCase):

    def test_body_and_iteration(self):
        async def handler(req):
            if req.args.get("mode") == "iter":
                pieces = [len(c) async for c in req]
                return {"pieces": pieces}
            body = await req.body()
            return {"len": len(body), "again": len(await req.body()),
                    "data": len(req.data)}
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "POST", "/?mode=iter", end=False)
            for n in (3, 5, 7):
                c.data(1, b"x" * n)
            c.end(1)
            self.assertEqual(json.loads(c.collect(1).body),
                             {"pieces": [3, 5, 7]})
            c.request(3, "POST", "/", end=False)
            send_body(c, 3, b"y" * 700000)
            self.assertEqual(json.loads(c.collect(3).body),
                             {"len": 700000, "again": 700000, "data": 700000})
            # DATA with FLAG_END, and an empty DATA|END.
            c.request(5, "POST", "/?mode=iter", end=False)
            c.data(5, b"ab")
            c.send_frame(wc.DATA, b"", wc.FLAG_END, 5)
            self.assertEqual(json.loads(c.collect(5).body),
                             {"pieces": [2]})

    def test_many_streams_interleaved(self):
        async def handler(req):
            body = await req.body()
            await asyncio.sleep(0.001 * (req.stream % 7))
            return {"path": req.path, "n": len(body)}
        with Running(handler) as rp, rp.client() as c:
            streams = list(range(1, 401, 2))
            for s in streams:
                c.request(s, "PUT", "/%d" % s, end=False)
            for s in reversed(streams):
                c.data(s, b"z" * s, end=True)
            for s in streams:
                j = json.loads(c.collect(s).body)
                self.assertEqual(j, {"path": "/%d" % s, "n": s})

    def test_frames_for_finished_stream_ignored(self):
        async def handler(req):
            return b"early"  # answers before the body ends
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "POST", "/", end=False)
            self.assertEqual(c.collect(1).body, b"early")
            c.data(1, b"late")
            c.end(1)
            c.request(3, "GET", "/")
            self.assertEqual(c.collect(3).body, b"early")

    def test_request_body_credit(self):
        # The replica grants credit as its handler consumes the body,
        # not before: 256 KiB sent and unread earn no WINDOW.
        go = threading.Event()

        async def handler(req):
            while not go.is_set():
                await asyncio.sleep(0.01)
            return {"n": len(await req.body())}

        with Running(handler) as rp, rp.client() as c:
            c.request(1, "POST", "/", end=False)
            c.data(1, b"a" * (128 << 10))
            c.data(1, b"b" * (128 << 10))
            c.ping()
            with self.assertRaises(socket.timeout):
                take_window(c, 1, timeout=0.3)
            go.set()
            got = take_window(c, 1) + take_window(c, 1)
            self.assertEqual(got, WINDOW0)
            c.data(1, b"c" * WINDOW0)
            self.assertEqual(take_window(c, 1), WINDOW0)
            send_body(c, 1, b"d" * (3 << 20))
            self.assertEqual(json.loads(collect(c, 1).body),
                             {"n": 2 * WINDOW0 + (3 << 20)})

    def test_data_beyond_credit_is_protocol_error(self):
        async def handler(req):
            await asyncio.sleep(30)
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "POST", "/", end=False)
            c.data(1, b"x" * WINDOW0)
            c.data(1, b"y")
            expect_protocol_error(self, c)

    def test_response_credit(self):
        body = bytes(range(256)) * 2400  # 600 KiB

        async def handler(req):
            if req.path == "/stream":
                async def gen():
                    for i in range(0, len(body), 200000):
                        yield body[i:i + 200000]
                return gen()
            return body
        with Running(handler) as rp, rp.client() as c:
            for s, path in ((1, "/"), (3, "/stream")):
                c.request(s, "GET", path)
                got = b""
                while len(got) < WINDOW0:
                    f = c.frames_for(s)
                    self.assertIn(f.type, (wc.RESPONSE,
                                           wc.DATA))
                    if f.type == wc.DATA:
                        got += f.payload
                self.assertEqual(len(got), WINDOW0)
                # No credit, nothing more.
                with self.assertRaises(socket.timeout):
                    c.frames_for(s, timeout=0.3)
                c.send_frame(wc.WINDOW, struct.pack(">I", 1000),
                             0, s)
                c.send_frame(wc.WINDOW, struct.pack(">I", 1000))
                f = c.frames_for(s)
                self.assertEqual(len(f.payload), 1000)
                with self.assertRaises(socket.timeout):
                    c.frames_for(s, timeout=0.2)
                got += f.payload
                c.send_frame(wc.WINDOW, struct.pack(">I",
                                                    len(body)), 0, s)
                r = collect(c, s)
                self.assertEqual(len(got + r.body), len(body),
                                 (s, len(got), [(f.type, len(f.payload))
                                                for f in r.frames]))
                self.assertEqual(got + r.body, body)
                self.assertTrue(r.ended)


class Streaming(unittest.TestCase):

    def test_async_generator_streams_as_yielded(self):
        async def handler(req):
            async def gen():
                for i in range(4):
                    yield "tok%d " % i
                    await asyncio.sleep(0.05)
                yield {"done": True}
            return Response(gen(), 200, {"content-type": "text/x"})
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            f = c.frames_for(1)
            self.assertEqual(f.type, wc.RESPONSE)
            status, fields = wc.decode_payload(f)
            self.assertEqual(fields, [("content-type", "text/x")])
            t0 = time.monotonic()
            times, body = [], b""
            while True:
                f = c.frames_for(1)
                if f.type == wc.END:
                    break
                self.assertEqual(f.type, wc.DATA)
                times.append(time.monotonic() - t0)
                body += f.payload
            self.assertEqual(body, b"tok0 tok1 tok2 tok3 "
                             b"{\"done\":true}\n")
            self.assertEqual(len(times), 5)
            self.assertGreater(times[-1] - times[0], 0.12)

    def test_async_generator_handler_function(self):
        async def handler(req):
            yield b"a"
            yield b""
            yield b"b"
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            r = c.collect(1)
            self.assertEqual((r.status, r.body), (200, b"ab"))
            self.assertNotIn("content-length", dict(r.headers))

    def test_sync_handler_in_thread_and_sync_generator(self):
        seen = {}

        def handler(req):
            seen["thread"] = threading.current_thread().name
            seen["data"] = req.data
            if req.args.get("gen"):
                def gen():
                    for i in range(3):
                        time.sleep(0.01)
                        yield b"%d" % i
                return gen()
            time.sleep(0.2)  # blocks its thread only
            return {"n": len(req.data)}
        with Running(handler, threads=4) as rp, rp.client() as c:
            t0 = time.monotonic()
            for s in (1, 3, 5, 7):
                c.request(s, "POST", "/", body=b"q" * s)
            for s in (1, 3, 5, 7):
                self.assertEqual(json.loads(c.collect(s).body),
                                 {"n": s})
            # Four threads: ~0.2 s, not 0.8.
            self.assertLess(time.monotonic() - t0, 0.6)
            self.assertTrue(seen["thread"].startswith("replica"))
            c.request(9, "GET", "/?gen=1")
            r = c.collect(9)
            self.assertEqual(r.body, b"012")
            self.assertEqual(r.frames[-1].type, wc.END)


class Failures(unittest.TestCase):

    def test_raise_before_response_is_500_and_replica_serves_on(self):
        async def handler(req):
            if req.path == "/boom":
                raise RuntimeError("boom")
            if req.path == "/http":
                raise HTTPError(418, "teapot\n", {"x-t": "1"})
            if req.path == "/badstatus":
                return 1000, b"x"
            return b"ok"
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/boom")
            r = c.collect(1)
            self.assertEqual(r.status, 500)
            self.assertEqual(r.body, b"internal server error\n")
            c.request(3, "GET", "/http")
            r = c.collect(3)
            self.assertEqual((r.status, r.body), (418, b"teapot\n"))
            self.assertIn(("x-t", "1"), r.headers)
            c.request(5, "GET", "/badstatus")
            self.assertEqual(c.collect(5).status, 500)
            c.request(7, "GET", "/fine")
            self.assertEqual(c.collect(7).body, b"ok")

    def test_raise_mid_stream_is_error_on_the_stream(self):
        async def handler(req):
            async def gen():
                yield b"first"
                raise ValueError("mid-stream")
            return gen()
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            r = c.collect(1)
            self.assertEqual(r.status, 200)
            self.assertEqual(r.body, b"first")
            self.assertEqual(r.error[0], wc.CODE_INTERNAL)
            self.assertIn("mid-stream", r.error[1])
            c.request(3, "GET", "/")
            self.assertEqual(c.collect(3).error[0],
                             wc.CODE_INTERNAL)
            c.ping()

    def test_cancel_raises_cancelled_error_in_handler(self):
        events = []
        started = threading.Event()

        async def handler(req):
            if req.path == "/quick":
                return b"quick"
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                events.append(("cancelled", req.stream))
                raise
            return b"never"
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/slow")
            self.assertTrue(started.wait(T))
            c.cancel(1)
            c.request(3, "GET", "/quick")
            self.assertEqual(c.collect(3).body, b"quick")
            deadline = time.monotonic() + T
            while not events and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(events, [("cancelled", 1)])
            while rp.r.active and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(rp.r.active, 0)
            # Nothing was sent for the cancelled stream.
            c.ping()
            self.assertEqual(c.pending[1], [])
            # ERROR on a stream from ingressd cancels it too.
            started.clear()
            c.request(5, "GET", "/slow")
            self.assertTrue(started.wait(T))
            c.send_frame(wc.ERROR, struct.pack(">IH", 4, 0), 0, 5)
            c.ping()
            deadline = time.monotonic() + T
            while len(events) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(events[1], ("cancelled", 5))

    def test_cancel_stops_a_streaming_generator(self):
        closed = threading.Event()

        async def handler(req):
            async def gen():
                try:
                    while True:
                        yield b"x"
                        await asyncio.sleep(0.01)
                finally:
                    closed.set()
            return gen()
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            self.assertEqual(c.frames_for(1).type, wc.RESPONSE)
            self.assertEqual(c.frames_for(1).type, wc.DATA)
            c.cancel(1)
            self.assertTrue(closed.wait(T))
            c.ping()
            deadline = time.monotonic() + T
            while rp.r.active and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(rp.r.active, 0)

    def test_connection_close_cancels_its_streams(self):
        cancelled = threading.Event()
        started = threading.Event()

        async def handler(req):
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        with Running(handler) as rp:
            c = rp.client()
            c.request(1, "GET", "/")
            self.assertTrue(started.wait(T))
            c.close()
            self.assertTrue(cancelled.wait(T))

    def test_over_max_concurrency_is_refused(self):
        async def handler(req):
            await asyncio.sleep(30)
        with Running(handler, max_concurrency=2) as rp, \
                rp.client() as c:
            for s in (1, 3, 5):
                c.request(s, "GET", "/")
            r = c.collect(5)
            self.assertEqual(r.error[0], wc.CODE_OVERLOAD)
            c.cancel(1)
            c.cancel(3)


def count_tasks(rp):
    """Install a task factory on rp's loop that records every Task
    created from now on (by the coroutine's name); returns the list."""
    created = []
    installed = threading.Event()

    def factory(loop, coro, **kw):
        created.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop, **kw)

    def install():
        rp.r.loop.set_task_factory(factory)
        installed.set()
    rp.call(install)
    assert installed.wait(T)
    return created


class TaskByDefault(unittest.TestCase):
    """By default a handler runs in an asyncio Task from its first step
    (3.12+: started eagerly by asyncio itself), so what needs a current
    task works before the handler's first await (conn.py)."""

    @unittest.skipUnless(hasattr(asyncio, "timeout"), "Python < 3.11")
    def test_timeout_before_first_await(self):
        async def handler(req):
            async with asyncio.timeout(5):
                if req.path == "/wait":
                    await asyncio.sleep(0)
                return "in time"
        with Running(handler) as rp, rp.client() as c:
            for sid, path in ((1, "/"), (3, "/wait")):
                c.request(sid, "GET", path)
                r = c.collect(sid)
                self.assertEqual((r.status, r.body), (200, b"in time"))

    @unittest.skipUnless(hasattr(asyncio, "TaskGroup"), "Python < 3.11")
    def test_taskgroup_before_first_await(self):
        async def part(n):
            await asyncio.sleep(0)
            return n

        async def handler(req):
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(part(n)) for n in (1, 2)]
            return {"sum": sum(t.result() for t in tasks)}
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            r = c.collect(1)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(json.loads(r.body), {"sum": 3})

    def test_current_task_in_the_first_step(self):
        async def handler(req):
            task = asyncio.current_task()
            return "task" if task is not None else "none"
        with Running(handler) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            self.assertEqual(c.collect(1).body, b"task")

    def test_eager_setting(self):
        def mk(**kw):
            return Replica(hello_handler, "127.0.0.1:0", **kw)
        self.assertFalse(mk(environ={}).eager)
        self.assertTrue(mk(environ={"INGRESSD_EAGER": "1"}).eager)
        self.assertFalse(mk(environ={"INGRESSD_EAGER": "0"}).eager)
        self.assertFalse(mk(eager=False,
                            environ={"INGRESSD_EAGER": "1"}).eager)
        self.assertTrue(mk(eager=True, environ={}).eager)
        with self.assertRaisesRegex(ConfigError, "INGRESSD_EAGER"):
            mk(environ={"INGRESSD_EAGER": "yes please"})


class Eager(unittest.TestCase):
    """With eager=True (INGRESSD_EAGER=1) handlers run from the frame
    dispatch: a Task only for one that suspends (conn.py, eager.py)."""

    def test_handler_that_never_waits_creates_no_task(self):
        import contextvars
        var = contextvars.ContextVar("var", default="unset")

        async def handler(req):
            seen = var.get()
            var.set(req.stream)  # must not leak into the next request
            return "%d %s" % (req.stream, seen)
        with Running(handler, eager=True) as rp, rp.client() as c:
            created = count_tasks(rp)
            for sid in range(1, 41, 2):
                c.request(sid, "GET", "/")
            for sid in range(1, 41, 2):
                r = c.collect(sid)
                self.assertEqual((r.status, r.body),
                                 (200, b"%d unset" % sid))
            self.assertEqual(created, [])
            self.assertEqual(rp.r.active, 0)

    def test_handler_that_waits_gets_a_task(self):
        events = []
        started = threading.Event()

        async def handler(req):
            if req.path == "/yield":
                await asyncio.sleep(0)
                return "yielded"
            if req.path == "/body":
                return {"len": len(await req.body())}
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                events.append(("cancelled", req.stream))
                raise
            return "never"
        with Running(handler, eager=True) as rp, rp.client() as c:
            created = count_tasks(rp)
            c.request(1, "GET", "/yield")
            self.assertEqual(c.collect(1).body, b"yielded")
            # A slow body: the handler waits for DATA that comes later.
            c.request(3, "POST", "/body", end=False)
            c.data(3, b"x" * 1000)
            time.sleep(0.05)
            c.data(3, b"y" * 500, end=True)
            self.assertEqual(json.loads(c.collect(3).body), {"len": 1500})
            # Cancel reaches a handler that suspended eagerly.
            c.request(5, "GET", "/sleep")
            self.assertTrue(started.wait(T))
            c.cancel(5)
            c.ping()
            deadline = time.monotonic() + T
            while rp.r.active and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(events, [("cancelled", 5)])
            self.assertEqual(rp.r.active, 0)
            self.assertEqual(c.pending[5], [])
            self.assertEqual(created, ["resume"] * 3)


class Protocol(unittest.TestCase):
    """A violation closes that connection with ERROR(PROTOCOL) only."""

    def test_violations(self):
        async def handler(req):
            await req.body()
            if req.path == "/hold":
                # Keeps the stream open, so that DATA after END
                # is a violation, not a frame for a finished
                # stream (which the protocol says to ignore).
                await asyncio.sleep(5)
            return b"ok"
        cases = [
            ("request before HELLO", False,
             lambda c: c.request(1, "GET", "/")),
            ("unknown type", True, lambda c: c.send(
                struct.pack(">IBBHI", 0, 42, 0, 0, 1))),
            ("reserved bits", True, lambda c: c.send(
                struct.pack(">IBBHI", 1, wc.DATA, 0, 1, 1) + b"x")),
            ("over max payload", True, lambda c: c.send(
                struct.pack(">IBBHI", (1 << 20) + 1, wc.DATA, 0, 0,
                            1))),
            ("stream id going down", True, lambda c: (
                c.request(5, "GET", "/"), c.collect(5),
                c.request(3, "GET", "/"))),
            ("stream id reused", True, lambda c: (
                c.request(5, "GET", "/"), c.collect(5),
                c.request(5, "GET", "/"))),
            ("DATA after END", True, lambda c: (
                c.request(7, "POST", "/hold", end=False),
                c.end(7), c.data(7, b"x"))),
            ("RESPONSE from ingressd", True, lambda c: c.send_frame(
                wc.RESPONSE, b"\0\xc8\0\0", 0, 1)),
            ("second HELLO", True, lambda c: c.send(
                wc.encode_hello())),
            ("bad REQUEST payload", True, lambda c: c.send_frame(
                wc.REQUEST, b"\x03GE", 0, 1)),
            ("zero WINDOW", True, lambda c: c.send_frame(
                wc.WINDOW, b"\0\0\0\0")),
        ]
        with Running(handler) as rp:
            keep = rp.client()
            keep.request(1, "POST", "/", end=False)
            for name, hello, act in cases:
                with self.subTest(name):
                    with rp.client(hello=hello) as c:
                        if not hello:
                            c.read_hello()
                        act(c)
                        expect_protocol_error(self, c)
            # The connection in the middle of a request is fine.
            keep.end(1)
            self.assertEqual(keep.collect(1).body, b"ok")
            keep.close()

    def test_window_goaway_pong_accepted(self):
        with Running(hello_handler) as rp, rp.client() as c:
            c.send_frame(wc.WINDOW, struct.pack(">I", 65536))
            c.request(1, "POST", "/", end=False)
            c.send_frame(wc.WINDOW, struct.pack(">I", 1), 0, 1)
            c.send_frame(wc.PONG, b"12345678")
            c.end(1)
            self.assertEqual(c.collect(1).body, b"Hello world!")
            c.send_frame(wc.GOAWAY, struct.pack(">IIH", 1, 7, 0))
            c.request(3, "GET", "/")  # ours to refuse or not
            self.assertEqual(c.collect(3).body, b"Hello world!")
            c.ping()

    def test_peer_connection_error_closes_quietly(self):
        with Running(hello_handler) as rp, rp.client() as c:
            c.send_frame(wc.ERROR, struct.pack(">IH", 1, 3) + b"bye")
            self.assertIsNone(c.recv_frame())


class Drain(unittest.TestCase):

    def test_stop_sends_goaway_finishes_in_flight_refuses_new(self):
        started = threading.Event()

        async def handler(req):
            started.set()
            await asyncio.sleep(0.3)
            return b"finished"
        rp = Running(handler, drain_ms=3000)
        try:
            c = rp.client()
            self.addCleanup(c.close)
            c.request(11, "GET", "/")
            self.assertTrue(started.wait(T))
            rp.call(rp.r.stop)
            f = c._next(lambda f: f.type == wc.GOAWAY)
            self.assertEqual(wc.decode_payload(f)[:2],
                             (11, wc.CODE_SHUTDOWN))
            self.assertFalse(os.path.exists(rp.path))
            c.request(13, "GET", "/")
            self.assertEqual(c.collect(13).error[0],
                             wc.CODE_REFUSED)
            self.assertEqual(c.collect(11).body, b"finished")
            self.assertIsNone(c.recv_frame())
            rp.thread.join(T)
            self.assertFalse(rp.thread.is_alive())
        finally:
            rp.stop()

    def test_drain_timeout_cancels(self):
        cancelled = threading.Event()

        async def handler(req):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        rp = Running(handler, drain_ms=200)
        try:
            c = rp.client()
            self.addCleanup(c.close)
            c.request(1, "GET", "/")
            c.ping()
            t0 = time.monotonic()
            rp.call(rp.r.stop)
            rp.thread.join(T)
            self.assertFalse(rp.thread.is_alive())
            self.assertTrue(cancelled.is_set())
            self.assertGreater(time.monotonic() - t0, 0.15)
        finally:
            rp.stop()


class Config(unittest.TestCase):

    def test_parse_address(self):
        self.assertEqual(parse_address("unix:/tmp/x.sock"),
                         ("unix", "/tmp/x.sock"))
        self.assertEqual(parse_address("127.0.0.1:80"),
                         ("tcp", "127.0.0.1", 80))
        self.assertEqual(parse_address("[::1]:9000"),
                         ("tcp", "::1", 9000))
        self.assertEqual(parse_address(":9000"), ("tcp", "", 9000))
        for bad in ("unix:", "x", "::1:80", "h:", "h:99999",
                    "unix:/" + "a" * 120):
            self.assertRaises(ConfigError, parse_address, bad)

    def test_precedence(self):
        env = {"INGRESSD_LISTEN": "unix:/tmp/env.sock",
               "INGRESSD_REPLICA_ID": "env-id",
               "INGRESSD_DEPLOYMENT": "env-dep",
               "INGRESSD_MAX_CONCURRENCY": "9"}
        r = Replica(hello_handler, environ=env)
        self.assertEqual((r.listen, r.replica_id, r.deployment,
                          r.max_concurrency, r.drain_ms), (("unix", "/tmp/env.sock"),
                                                           "env-id", "env-dep", 9, 2000))
        r = Replica(hello_handler, environ=env, argv=["--listen",
                                                      "127.0.0.1:0", "--id=arg-id", "--drain-ms", "5", "--other",
                                                      "x"])
        self.assertEqual((r.listen, r.replica_id, r.drain_ms),
                         (("tcp", "127.0.0.1", 0), "arg-id", 5))
        r = Replica(hello_handler, "unix:/tmp/kw.sock", environ=env,
                    argv=["--listen", "x:1"], replica_id="kw")
        self.assertEqual((r.listen[1], r.replica_id),
                         ("/tmp/kw.sock", "kw"))
        self.assertTrue(Replica(hello_handler, ":1", environ={})
                        .replica_id.startswith("replica-"))
        for kw in ({"max_concurrency": 0}, {"drain_ms": -1},
                   {"replica_id": "x" * 256}, {"threads": "many"}):
            self.assertRaises(ConfigError, Replica, hello_handler,
                              ":1", environ={}, **kw)
        self.assertRaises(ConfigError, Replica, hello_handler,
                          environ={})

    def test_tcp_listen(self):
        r = Replica(hello_handler, "127.0.0.1:0", environ={})
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(r.start())
            host, port = r.address.rsplit(":", 1)
            self.assertEqual(host, "127.0.0.1")
            self.assertGreater(int(port), 0)
        finally:
            r._server.close()
            loop.close()


class Examples(unittest.TestCase):
    """The examples as ingressd runs them: a process, env, SIGTERM."""

    def spawn(self, name, *args):
        d = tempfile.mkdtemp(prefix="pyexample-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "r.sock")
        env = dict(os.environ, INGRESSD_LISTEN="unix:" + path,
                   INGRESSD_REPLICA_ID=name + "-0", INGRESSD_DEPLOYMENT=name)
        script = os.path.join(ROOT, "python", "examples", name + ".py")
        p = subprocess.Popen([sys.executable, script] + list(args), env=env,
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(self.reap, p)
        deadline = time.monotonic() + T
        while not os.path.exists(path):
            if p.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("%s did not listen: %s" % (
                    name, p.stderr.read()))
            time.sleep(0.01)
        # The path exists from bind(); connect is refused until listen().
        while True:
            try:
                c = wc.WireClient.connect("unix:" + path, timeout=T)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        self.addCleanup(c.close)
        c.hello()
        c.ping()
        return p, path, c

    def reap(self, p):
        if p.poll() is None:
            p.kill()
        p.wait(T)
        p.stderr.close()

    def stop(self, p, path):
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(T), 0)
        self.assertFalse(os.path.exists(path))

    def test_echo(self):
        p, path, c = self.spawn("echo")
        self.assertEqual(c.peer_hello.replica_id, "echo-0")
        c.request(1, "POST", "/a?status=201&x", [("X-A", "1"),
                                                 ("x-a", "2")], body=b"hi", deployment="echo",
                  request_id="r1")
        r = c.collect(1)
        self.assertEqual(r.status, 201)
        self.assertEqual(json.loads(r.body), {"method": "POST",
                                              "path": "/a", "query": "status=201&x",
                                              "headers": {"x-a": "1, 2"}, "body_length": 2, "body": "hi",
                                              "replica": "echo-0", "deployment": "echo",
                                              "request_id": "r1", "conn_pings": 1})
        c.request(3, "POST", "/?raw=1", end=False)
        self.assertEqual(c.frames_for(3).type, wc.RESPONSE)
        c.data(3, b"mirror")
        self.assertEqual(c.frames_for(3).payload, b"mirror")
        c.end(3)
        self.assertEqual(c.frames_for(3).type, wc.END)
        self.stop(p, path)

    def test_tokens(self):
        p, path, c = self.spawn("tokens")
        c.request(1, "GET", "/tokens?prompt=a+b&max_tokens=4&ms=1")
        r = c.collect(1)
        self.assertEqual(r.status, 200)
        events = [e for e in r.body.decode().split("\n\n") if e]
        self.assertEqual(events[-1], "data: [DONE]")
        toks = [json.loads(e[6:])["token"] for e in events[:-1]]
        self.assertEqual(toks, ["You", "said", "a", "b"])
        self.assertEqual(len([f for f in r.frames
                              if f.type == wc.DATA]), 5)
        c.request(3, "GET", "/tokens?max_tokens=0")
        self.assertEqual(c.collect(3).status, 400)
        c.request(5, "GET", "/tokens?max_tokens=4096&ms=50")
        self.assertEqual(c.frames_for(5).type, wc.RESPONSE)
        self.assertEqual(c.frames_for(5).type, wc.DATA)
        c.cancel(5)
        c.ping()
        self.stop(p, path)
        self.assertIn(b"stream 5 cancelled", p.stderr.read())

    def test_model_loads_before_listening(self):
        t0 = time.monotonic()
        p, path, c = self.spawn("model", "--load-ms", "300")
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        c.request(1, "GET", "/model/info")
        info = json.loads(c.collect(1).body)
        self.assertTrue(info["warm"])
        self.assertGreaterEqual(info["load_ms"], 300)
        self.assertEqual(info["warmup_runs"], 4)
        c.request(3, "POST", "/model", body=b'{"text": "great day"}')
        j = json.loads(c.collect(3).body)
        self.assertEqual(j["label"], "positive")
        c.request(5, "GET", "/model?text=terrible+and+broken")
        self.assertEqual(json.loads(c.collect(5).body)["label"],
                         "negative")
        c.request(7, "GET", "/model")
        self.assertEqual(c.collect(7).status, 400)
        self.stop(p, path)


if __name__ == "__main__":
    unittest.main()
