"""gRPC end to end (issue 14): grpcio as the client, on raw bytes (no code
generation), through ingressd's HTTP/2 edge to both example gRPC replicas
(C build/replica-grpc-echo, Python python/examples/grpc_echo.py): the four
RPC kinds, metadata and trailers both ways (incl. -bin keys), a handler
that aborts with a status, 4 MiB messages, 100 concurrent streams on one
connection, a replica killed mid-stream, a deadline shorter than the
handler, a client cancel mid-stream.  And a differential check: one client
script against a grpcio server implementing the same methods directly, and
against ingressd -> the Python SDK replica, sees the same codes, messages,
metadata and payloads."""

import os
import signal
import sys
import threading
import unittest
from concurrent import futures

import harness
from harness import Daemon, timeout, wait_until

try:
	import grpc
except ImportError:			# run with /usr/bin/python3
	grpc = None

SVC = "/ingressd.example.Echo/"
MIB4 = 4 << 20
# grpcio's default max receive is 4 MiB (the prefix included): lift it.
OPTIONS = [("grpc.max_receive_message_length", 16 << 20),
    ("grpc.max_send_message_length", 16 << 20)]


def backend(kind):
	if kind == "c":
		return harness.spawn("grpc-echo", 1)
	return {"spawn": {"command": [sys.executable, os.path.join(harness.ROOT,
	    "python", "examples", "grpc_echo.py")], "replicas": 1}}


def conf(kind):
	"""/ingressd.example.Echo/ to deployment g, and /b/ (prefix stripped)
	to a second one, g2, with the same replica."""
	c = harness.base_conf()
	c["routes"] = [{"prefix": SVC, "deployment": "g"},
	    {"prefix": "/b/", "deployment": "g2", "strip_prefix": True}]
	c["deployments"] = {"g": backend(kind), "g2": backend(kind)}
	return c


def stub(ch, kind, method):
	f = {"uu": ch.unary_unary, "us": ch.unary_stream,
	    "su": ch.stream_unary, "ss": ch.stream_stream}[kind]
	return f(method, request_serializer=None, response_deserializer=None)


class Gate:
	"""A request iterator that yields what is put, until closed."""

	def __init__(self):
		self.cv = threading.Condition()
		self.items, self.closed = [], False

	def put(self, x):
		with self.cv:
			self.items.append(x)
			self.cv.notify()

	def close(self):
		with self.cv:
			self.closed = True
			self.cv.notify()

	def __iter__(self):
		while True:
			with self.cv:
				self.cv.wait_for(lambda: self.items or self.closed)
				if not self.items:
					return
				x = self.items.pop(0)
			yield x


def picked(md):
	"""The metadata the service sets (x-echo-*, x-trail-*), not what a
	proxy or the transport adds (x-request-id, content-type...)."""
	return sorted((k, v) for k, v in (md or ()) if
	    k.startswith(("x-echo-", "x-trail-")))


def script(ch):
	"""One client script: what it saw, call by call."""
	md = (("x-echo-a", "1"), ("x-echo-k-bin", b"\x00\xff\x10"))
	out = []

	def rec(name, fn):
		try:
			payload, call = fn()
			out.append((name, call.code(), call.details(), payload,
			    picked(call.initial_metadata()),
			    picked(call.trailing_metadata())))
		except grpc.RpcError as e:
			out.append((name, e.code(), e.details(), None,
			    picked(e.initial_metadata()),
			    picked(e.trailing_metadata())))

	def streamed(call):
		return list(call), call

	rec("unary", lambda: stub(ch, "uu", SVC + "Unary").with_call(
	    b"hello", metadata=md))
	rec("server", lambda: streamed(stub(ch, "us", SVC + "ServerStream")(
	    b"abc", metadata=md)))
	rec("client", lambda: stub(ch, "su", SVC + "ClientStream").with_call(
	    iter([b"a", b"bb", b"ccc"]), metadata=md))
	rec("bidi", lambda: streamed(stub(ch, "ss", SVC + "BidiStream")(
	    iter([b"x", b"yy"]), metadata=md)))
	rec("abort", lambda: stub(ch, "uu", SVC + "Abort").with_call(
	    b"why % \xc3\xa9"))
	rec("empty", lambda: stub(ch, "uu", SVC + "Unary").with_call(b""))
	return out


class Reference:
	"""ingressd.example.Echo in grpcio itself, as the examples answer."""

	def __init__(self):
		self.cancels = 0

	@staticmethod
	def metadata(ctx):
		md = [(k, v) for k, v in ctx.invocation_metadata()
		    if k.startswith("x-echo-")]
		ctx.send_initial_metadata(md)
		ctx.set_trailing_metadata([("x-trail-" + k[7:], v)
		    for k, v in md])

	def unary(self, msg, ctx):
		self.metadata(ctx)
		return msg

	def server(self, msg, ctx):
		self.metadata(ctx)
		for _ in range(3):
			yield msg

	def client(self, it, ctx):
		self.metadata(ctx)
		return b"".join(it)

	def bidi(self, it, ctx):
		self.metadata(ctx)
		for m in it:
			yield m

	def abort(self, msg, ctx):
		ctx.abort(grpc.StatusCode.INVALID_ARGUMENT,
		    "aborted: " + msg.decode("utf-8", "replace"))

	def start(self):
		h = grpc.method_handlers_generic_handler("ingressd.example.Echo", {
		    "Unary": grpc.unary_unary_rpc_method_handler(self.unary),
		    "ServerStream": grpc.unary_stream_rpc_method_handler(
		        self.server),
		    "ClientStream": grpc.stream_unary_rpc_method_handler(
		        self.client),
		    "BidiStream": grpc.stream_stream_rpc_method_handler(self.bidi),
		    "Abort": grpc.unary_unary_rpc_method_handler(self.abort)})
		self.server_ = grpc.server(futures.ThreadPoolExecutor(4),
		    handlers=(h,))
		self.port = self.server_.add_insecure_port("127.0.0.1:0")
		self.server_.start()
		return self

	def stop(self):
		self.server_.stop(0)


@unittest.skipIf(grpc is None, "python3-grpcio missing (/usr/bin/python3)")
class _Both:
	"""Each test, against one example replica (KIND)."""

	KIND = None

	def setUp(self):
		self.d = Daemon(conf=conf(self.KIND)).start()
		self.addCleanup(self.d.stop)
		self.ch = grpc.insecure_channel("127.0.0.1:%d" % self.d.port,
		    options=OPTIONS)
		self.addCleanup(self.ch.close)

	def cancels(self, prefix=""):
		r = stub(self.ch, "uu", prefix + SVC + "Stats")(b"", timeout=5)
		return int(r.split(b"=")[1])

	@timeout(30)
	def test_four_rpc_kinds(self):
		self.assertEqual(stub(self.ch, "uu", SVC + "Unary")(b"hi",
		    timeout=5), b"hi")
		self.assertEqual(list(stub(self.ch, "us", SVC + "ServerStream")(
		    b"s", timeout=5)), [b"s"] * 3)
		self.assertEqual(stub(self.ch, "su", SVC + "ClientStream")(
		    iter([b"a", b"b", b"c"]), timeout=5), b"abc")
		# Bidi: each answer arrives before the next message is sent.
		g = Gate()
		self.addCleanup(g.close)
		it = stub(self.ch, "ss", SVC + "BidiStream")(iter(g), timeout=10)
		for m in (b"one", b"two", b"three"):
			g.put(m)
			self.assertEqual(next(it), m)
		g.close()
		self.assertEqual(list(it), [])
		self.assertEqual(it.code(), grpc.StatusCode.OK)

	@timeout(30)
	def test_abort_with_status(self):
		with self.assertRaises(grpc.RpcError) as e:
			stub(self.ch, "uu", SVC + "Abort")(b"bad input 100%",
			    timeout=5)
		self.assertEqual(e.exception.code(),
		    grpc.StatusCode.INVALID_ARGUMENT)
		self.assertEqual(e.exception.details(), "aborted: bad input 100%")

	@timeout(60)
	def test_4mib_messages(self):
		big = bytes(range(256)) * (MIB4 // 256)
		self.assertEqual(stub(self.ch, "uu", SVC + "Unary")(big,
		    timeout=30), big)
		got = list(stub(self.ch, "us", SVC + "ServerStream")(big,
		    timeout=30))
		self.assertEqual([len(x) for x in got], [MIB4] * 3)
		self.assertTrue(all(x == big for x in got))

	@timeout(60)
	def test_100_concurrent_streams_one_connection(self):
		g = [Gate() for _ in range(100)]
		for x in g:
			self.addCleanup(x.close)
		m = stub(self.ch, "ss", SVC + "BidiStream")
		calls = [m(iter(x), timeout=30) for x in g]
		# Every stream open at once: each answers its first message
		# while all 100 are still going.
		for i, (x, c) in enumerate(zip(g, calls)):
			x.put(b"m%d" % i)
		for i, c in enumerate(calls):
			self.assertEqual(next(c), b"m%d" % i)
		for x in g:
			x.close()
		for c in calls:
			self.assertEqual(list(c), [])
			self.assertEqual(c.code(), grpc.StatusCode.OK)
		self.assertEqual(harness.tcp_conns_to(self.d.port), 1)

	@timeout(60)
	def test_replica_killed_mid_stream(self):
		ga, gb = Gate(), Gate()
		self.addCleanup(ga.close)
		self.addCleanup(gb.close)
		a = stub(self.ch, "ss", SVC + "BidiStream")(iter(ga), timeout=20)
		b = stub(self.ch, "ss", "/b" + SVC + "BidiStream")(iter(gb),
		    timeout=20)
		ga.put(b"a1")
		gb.put(b"b1")
		self.assertEqual((next(a), next(b)), (b"a1", b"b1"))
		pid, = self.d.replica_pids("g").values()
		os.kill(pid, signal.SIGKILL)
		with self.assertRaises(grpc.RpcError) as e:
			next(a)
		# Lost after the response started: UNAVAILABLE or INTERNAL
		# (docs/http.md, the gRPC status mapping).
		self.assertIn(e.exception.code(), (grpc.StatusCode.UNAVAILABLE,
		    grpc.StatusCode.INTERNAL), e.exception.details())
		self.assertIn("replica", e.exception.details())
		# The other stream on the same connection goes on.
		gb.put(b"b2")
		self.assertEqual(next(b), b"b2")
		gb.close()
		self.assertEqual(list(b), [])
		self.assertEqual(b.code(), grpc.StatusCode.OK)
		self.assertEqual(harness.tcp_conns_to(self.d.port), 1)

	@timeout(30)
	def test_deadline_shorter_than_handler(self):
		before = self.cancels()
		g = Gate()
		self.addCleanup(g.close)
		# The handler waits for a message that never comes.
		call = stub(self.ch, "ss", SVC + "BidiStream")(iter(g),
		    timeout=0.5)
		with self.assertRaises(grpc.RpcError) as e:
			list(call)
		self.assertEqual(e.exception.code(),
		    grpc.StatusCode.DEADLINE_EXCEEDED)
		wait_until(lambda: self.cancels() == before + 1, 5.0,
		    what="the replica sees the CANCEL")

	@timeout(30)
	def test_metadata_and_trailers_both_ways(self):
		md = (("x-echo-plain", "v 1"), ("x-echo-key-bin", b"\x00\xff"))
		r, call = stub(self.ch, "uu", SVC + "Unary").with_call(b"m",
		    metadata=md, timeout=5)
		self.assertEqual(r, b"m")
		self.assertEqual(picked(call.initial_metadata()),
		    sorted(md))
		self.assertEqual(picked(call.trailing_metadata()),
		    [("x-trail-key-bin", b"\x00\xff"), ("x-trail-plain", "v 1")])
		self.assertIn("x-request-id", dict(call.initial_metadata()))

	@timeout(30)
	def test_metadata_on_streaming_kinds(self):
		md = (("x-echo-s", "1"), ("x-echo-b-bin", b"\x01\x02\x03"))
		want_h = sorted(md)
		want_t = [("x-trail-b-bin", b"\x01\x02\x03"), ("x-trail-s", "1")]
		calls = [stub(self.ch, "us", SVC + "ServerStream")(b"s",
		    metadata=md, timeout=5)]
		r, c = stub(self.ch, "su", SVC + "ClientStream").with_call(
		    iter([b"a", b"b"]), metadata=md, timeout=5)
		self.assertEqual(r, b"ab")
		calls.append(stub(self.ch, "ss", SVC + "BidiStream")(
		    iter([b"x"]), metadata=md, timeout=5))
		self.assertEqual(list(calls[0]), [b"s"] * 3)
		self.assertEqual(list(calls[1]), [b"x"])
		for call in calls + [c]:
			self.assertEqual(picked(call.initial_metadata()), want_h)
			self.assertEqual(picked(call.trailing_metadata()), want_t)

	@timeout(30)
	def test_client_cancel_mid_stream(self):
		before = self.cancels()
		g = Gate()
		self.addCleanup(g.close)
		call = stub(self.ch, "ss", SVC + "BidiStream")(iter(g), timeout=20)
		g.put(b"first")
		self.assertEqual(next(call), b"first")
		call.cancel()
		self.assertEqual(call.code(), grpc.StatusCode.CANCELLED)
		wait_until(lambda: self.cancels() == before + 1, 5.0,
		    what="the replica sees the CANCEL")
		# The connection serves the next call.
		self.assertEqual(stub(self.ch, "uu", SVC + "Unary")(b"next",
		    timeout=5), b"next")


class GrpcE2EC(_Both, unittest.TestCase):
	KIND = "c"


class GrpcE2EPython(_Both, unittest.TestCase):
	KIND = "py"


@unittest.skipIf(grpc is None, "python3-grpcio missing (/usr/bin/python3)")
class GrpcDifferential(unittest.TestCase):

	@timeout(60)
	def test_same_answers_direct_and_through_ingressd(self):
		ref = Reference().start()
		self.addCleanup(ref.stop)
		with grpc.insecure_channel("127.0.0.1:%d" % ref.port,
		    options=OPTIONS) as ch:
			direct = script(ch)
		with Daemon(conf=conf("py")) as d, grpc.insecure_channel(
		    "127.0.0.1:%d" % d.port, options=OPTIONS) as ch:
			proxied = script(ch)
		self.assertEqual(len(direct), 6)
		for a, b in zip(direct, proxied):
			self.assertEqual(a, b)
		# The script saw what it should, not the same failure twice.
		self.assertEqual([x[1] for x in direct], [grpc.StatusCode.OK] * 4 +
		    [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OK])
		self.assertEqual(direct[1][3], [b"abc"] * 3)
		self.assertEqual(direct[0][4], [("x-echo-a", "1"),
		    ("x-echo-k-bin", b"\x00\xff\x10")])


if __name__ == "__main__":
	unittest.main()
