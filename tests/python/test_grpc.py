"""Response trailers (wire v2) and the gRPC helpers of the SDK, driven
frame by frame with tests/integ/wire_client.py (an independent peer that
plays ingressd), plus the example python/examples/grpc_echo.py as a
process.
"""

import asyncio
import os
import struct
import subprocess
import sys
import unittest

from test_replica import ROOT, T, Running, expect_protocol_error

import wire_client as wc  # noqa: E402
from ingressd_replica import Response  # noqa: E402
from ingressd_replica import grpc  # noqa: E402

GRPC = [("content-type", "application/grpc"), ("te", "trailers")]


def msg(b):
    return b"\0" + struct.pack(">I", len(b)) + b


def messages(body):
    """The messages of a gRPC body (the 5-byte framing, checked)."""
    out, off = [], 0
    while off < len(body):
        flag, n = struct.unpack_from(">BI", body, off)
        assert flag == 0 and off + 5 + n <= len(body), (flag, n)
        out.append(body[off + 5:off + 5 + n])
        off += 5 + n
    return out


def with_trailers(c, stream):
    """WireClient.collect() (which ends at TRAILERS too, and checks it
    came after RESPONSE on a v2 connection), granting the replica credit
    for what it takes; (response, trailer fields or None)."""
    c.auto_window = True
    r = c.collect(stream, T)
    return r, r.trailers


class Trailers(unittest.TestCase):

    def test_fixed_body_then_trailers(self):
        async def h(req):
            return Response(b"abc", 200, {"content-type": "text/x"},
                            trailers={"x-sum": "3"})
        with Running(h) as rp, rp.client() as c:
            self.assertEqual(c.version, 2)
            c.request(1, "GET", "/")
            r, tr = with_trailers(c, 1)
            self.assertEqual(r.status, 200)
            self.assertEqual(r.body, b"abc")
            self.assertEqual([f.type for f in r.frames],
                             [wc.RESPONSE, wc.DATA, wc.TRAILERS])
            self.assertEqual(r.frames[1].flags, 0)   # END is the TRAILERS
            # No content-length: ingressd must frame it chunked.
            self.assertNotIn("content-length", [k for k, _ in r.headers])
            self.assertEqual(tr, [("x-sum", "3")])

    def test_streamed_body_trailers_decided_at_the_end(self):
        seen = []

        async def h(req):
            async def gen():
                for i in range(3):
                    seen.append(i)
                    yield b"%d" % i
            return Response(gen(), 200, trailers=lambda: [
                ("x-count", str(len(seen)))])
        with Running(h) as rp, rp.client() as c:
            c.request(1, "GET", "/")
            r, tr = with_trailers(c, 1)
            self.assertEqual(r.body, b"012")
            self.assertEqual(tr, [("x-count", "3")])
            self.assertEqual(r.frames[-1].type, wc.TRAILERS)

    def test_v1_ingressd_gets_no_trailers(self):
        async def h(req):
            return Response(b"abc", trailers={"x-sum": "3"})
        with Running(h) as rp:
            c = rp.client(hello=False)
            c.hello(version=1)
            c.ping()
            self.assertEqual(c.version, 1)
            c.request(1, "GET", "/")
            r, tr = with_trailers(c, 1)
            self.assertEqual(r.body, b"abc")
            self.assertIsNone(tr)
            self.assertTrue(r.ended)
            self.assertEqual(r.frames[-1].type, wc.END)
            c.close()

    def test_trailers_from_ingressd_are_a_protocol_error(self):
        async def h(req):
            await asyncio.sleep(5)
        with Running(h) as rp, rp.client() as c:
            c.request(1, "POST", "/", end=False)
            c.send(wc.encode_frame(wc.TRAILERS, struct.pack(">H", 0), 0,
                                   1))
            expect_protocol_error(self, c)


def grpc_service():
    svc = grpc.GrpcService(max_message=1000)

    @svc.unary("/t.S/Unary")
    async def unary(m, ctx):
        ctx.set_header("x-head", "h")
        ctx.set_trailer("x-tail", "t")
        return m.upper()

    @svc.server_stream("/t.S/Fail")
    async def fail(m, ctx):
        yield b"one"
        grpc.abort(grpc.StatusCode.DATA_LOSS, "lost 100% of it\n")

    @svc.server_stream("/t.S/Nothing")
    async def nothing(m, ctx):
        return
        yield  # noqa: unreachable -- an async generator

    @svc.client_stream("/t.S/Count")
    async def count(ms, ctx):
        return b"%d" % len([m async for m in ms])

    @svc.bidi_stream("/t.S/Bidi")
    async def bidi(ms, ctx):
        async for m in ms:
            yield m + b"!"

    @svc.unary("/t.S/Crash")
    async def crash(m, ctx):
        raise ValueError("boom")

    @svc.unary("/t.S/Abort")
    async def ab(m, ctx):
        ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing: é")
    return svc


class Grpc(unittest.TestCase):

    def setUp(self):
        self.rp = Running(grpc_service().handler)
        self.c = self.rp.client()

    def tearDown(self):
        self.c.close()
        self.rp.stop()

    def call(self, stream, path, body, headers=GRPC):
        self.c.request(stream, "POST", path, headers, body=body)
        return with_trailers(self.c, stream)

    def test_unary_with_metadata(self):
        r, tr = self.call(1, "/t.S/Unary", msg(b"abc"))
        self.assertEqual(r.status, 200)
        self.assertIn(("content-type", "application/grpc"), r.headers)
        self.assertIn(("x-head", "h"), r.headers)
        self.assertEqual(messages(r.body), [b"ABC"])
        self.assertEqual(tr, [("x-tail", "t"), ("grpc-status", "0")])

    def test_message_split_across_data_frames(self):
        self.c.request(1, "POST", "/t.S/Unary", GRPC, end=False)
        for piece in (b"\0\0", b"\0\0\x04a", b"bc", b"d"):
            self.c.data(1, piece)
        self.c.end(1)
        r, tr = with_trailers(self.c, 1)
        self.assertEqual(messages(r.body), [b"ABCD"])
        self.assertEqual(tr[-1], ("grpc-status", "0"))

    def test_status_after_a_message_goes_in_the_trailers(self):
        r, tr = self.call(1, "/t.S/Fail", msg(b"x"))
        self.assertEqual(messages(r.body), [b"one"])
        self.assertEqual(tr, [("grpc-status", "15"),
                              ("grpc-message", "lost 100%25 of it%0A")])

    def test_abort_before_any_message_is_trailers_only(self):
        r, tr = self.call(1, "/t.S/Abort", msg(b"x"))
        self.assertIsNone(tr)
        self.assertEqual([f.type for f in r.frames], [wc.RESPONSE])
        self.assertTrue(r.frames[0].flags & wc.FLAG_END)
        h = dict(r.headers)
        self.assertEqual(h["grpc-status"], "5")
        self.assertEqual(h["grpc-message"], "no such thing: %C3%A9")
        self.assertEqual(grpc.percent_decode(h["grpc-message"]),
                         "no such thing: é")

    def test_empty_server_stream_is_trailers_only(self):
        r, tr = self.call(1, "/t.S/Nothing", msg(b""))
        self.assertEqual(dict(r.headers)["grpc-status"], "0")
        self.assertEqual(r.body, b"")

    def test_client_and_bidi_streaming(self):
        r, tr = self.call(1, "/t.S/Count", msg(b"a") + msg(b"") + msg(b"b"))
        self.assertEqual(messages(r.body), [b"3"])
        self.assertEqual(tr, [("grpc-status", "0")])
        r, tr = self.call(3, "/t.S/Bidi", msg(b"a") + msg(b"bc"))
        self.assertEqual(messages(r.body), [b"a!", b"bc!"])
        self.assertEqual(tr, [("grpc-status", "0")])

    def test_bidi_answers_before_the_client_is_done(self):
        self.c.request(1, "POST", "/t.S/Bidi", GRPC, end=False)
        self.c.data(1, msg(b"ping"))
        f = self.c.frames_for(1)
        self.assertEqual(f.type, wc.RESPONSE)
        f = self.c.frames_for(1)
        self.assertEqual(f.type, wc.DATA)
        self.assertEqual(messages(f.payload), [b"ping!"])
        self.c.data(1, msg(b"x"), end=True)
        f = self.c.frames_for(1)
        self.assertEqual(messages(f.payload), [b"x!"])
        f = self.c.frames_for(1)
        self.assertEqual(f.type, wc.TRAILERS)
        self.assertEqual(wc.decode_payload(f), [("grpc-status", "0")])

    def test_errors_answered_as_statuses(self):
        cases = [
            ("/t.S/Missing", msg(b"x"), "12"),   # UNIMPLEMENTED
            ("/t.S/Crash", msg(b"x"), "2"),      # UNKNOWN
            ("/t.S/Unary", msg(b"x" * 1001), "8"),  # RESOURCE_EXHAUSTED
            ("/t.S/Unary", b"\1" + msg(b"x")[1:], "12"),  # compressed
            ("/t.S/Unary", msg(b"x")[:-1], "13"),  # cut inside a message
            ("/t.S/Unary", msg(b"a") + msg(b"b"), "13"),  # two for unary
            ("/t.S/Unary", b"", "13"),           # none for unary
        ]
        for i, (path, body, code) in enumerate(cases):
            r, tr = self.call(2 * i + 1, path, body)
            self.assertEqual(r.status, 200, path)
            self.assertEqual(dict(r.headers).get("grpc-status"), code,
                             (path, body[:8], r.headers))
            self.assertIsNone(tr)

    def test_not_grpc_is_415(self):
        r, tr = self.call(1, "/t.S/Unary", msg(b"x"),
                          [("content-type", "application/json")])
        self.assertEqual(r.status, 415)


class Helpers(unittest.TestCase):

    def test_percent_encoding(self):
        self.assertEqual(grpc.percent_encode("a b%c\r\n"), "a b%25c%0D%0A")
        self.assertEqual(grpc.percent_encode("日"), "%E6%97%A5")
        for s in ("", "plain", "100%", "x\ty", "日本", "%zz"):
            self.assertEqual(grpc.percent_decode(grpc.percent_encode(s)), s)
        self.assertEqual(grpc.percent_decode("%zz%4"), "%zz%4")

    def test_frame(self):
        self.assertEqual(grpc.frame(b"ab"), b"\0\0\0\0\2ab")
        self.assertEqual(grpc.status_fields(3, "a b"),
                         [("grpc-status", "3"), ("grpc-message", "a b")])

    def test_bad_paths_refused(self):
        svc = grpc.GrpcService()
        self.assertRaises(ValueError, svc.add, "Svc/M", None, "unary")
        self.assertRaises(ValueError, svc.add, "/a.S/M", None, "other")

    @unittest.skipUnless(sys.version_info >= (3, 8), "protobuf optional")
    def test_protobuf_classes(self):
        try:
            from google.protobuf import wrappers_pb2
        except ImportError:
            self.skipTest("python3-protobuf is not installed")
        svc = grpc.GrpcService()

        @svc.unary("/t.S/Hello", request=wrappers_pb2.StringValue,
                   response=wrappers_pb2.StringValue)
        async def hello(m, ctx):
            return wrappers_pb2.StringValue(value="hello " + m.value)
        with Running(svc.handler) as rp, rp.client() as c:
            req = wrappers_pb2.StringValue(value="you").SerializeToString()
            c.request(1, "POST", "/t.S/Hello", GRPC, body=msg(req))
            r, tr = with_trailers(c, 1)
            out = wrappers_pb2.StringValue.FromString(messages(r.body)[0])
            self.assertEqual(out.value, "hello you")
            self.assertEqual(tr, [("grpc-status", "0")])


class Example(unittest.TestCase):
    """python/examples/grpc_echo.py as ingressd spawns it."""

    def test_grpc_echo(self):
        r = wc._Replica(sys.executable, os.path.join(
            ROOT, "python", "examples", "grpc_echo.py"))
        try:
            with r.client() as c:
                c.request(1, "POST", "/ingressd.example.Echo/Unary", GRPC,
                          body=msg(b"hi"))
                resp = c.collect(1)
                self.assertEqual(messages(resp.body), [b"hi"])
                self.assertEqual(resp.trailers, [("grpc-status", "0")])
                c.request(3, "POST", "/ingressd.example.Echo/ServerStream",
                          GRPC, body=msg(b"x"))
                resp = c.collect(3)
                self.assertEqual(messages(resp.body), [b"x"] * 3)
                c.request(5, "POST", "/ingressd.example.Echo/Abort", GRPC,
                          body=msg(b"bad"))
                resp = c.collect(5)
                self.assertEqual(dict(resp.headers)["grpc-message"],
                                 "aborted: bad")
        finally:
            rc, gone = r.stop()
        self.assertEqual((rc, gone), (0, True))


if __name__ == "__main__":
    unittest.main()
