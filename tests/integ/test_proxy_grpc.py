"""gRPC-shaped calls over HTTP/1.1 through ingressd to the example gRPC
replicas (C build/replica-grpc-echo, Python python/examples/grpc_echo.py),
and response trailers (wire v2 TRAILERS) on their way to the client: in
the last chunk when the client sent TE: trailers, dropped otherwise.  A
v1 replica keeps working; a v1 replica that sends TRAILERS anyway is cut
off as a protocol error.  (gRPC clients over HTTP/2 come with the HTTP/2
front edge.)"""

import os
import struct
import sys
import unittest

import harness
from harness import BadReplica, Daemon, wait_until

ROOT = harness.ROOT
GRPC = {"Content-Type": "application/grpc", "TE": "trailers"}


def msg(b):
	return b"\0" + struct.pack(">I", len(b)) + b


def messages(body):
	out, off = [], 0
	while off < len(body):
		flag, n = struct.unpack_from(">BI", body, off)
		assert flag == 0, flag
		out.append(body[off + 5:off + 5 + n])
		off += 5 + n
	return out


def grpc_conf():
	conf = harness.base_conf()
	conf["routes"] = [
	    {"prefix": "/ingressd.example.Echo/", "deployment": "grpc-c"},
	    {"prefix": "/py/", "deployment": "grpc-py", "strip_prefix": True},
	]
	conf["deployments"] = {
		"grpc-c": harness.spawn("grpc-echo", 1),
		"grpc-py": {"spawn": {"command": [sys.executable, os.path.join(
		    ROOT, "python", "examples", "grpc_echo.py")],
		    "replicas": 1}},
	}
	return conf


class GrpcOverHttp1(unittest.TestCase):

	def setUp(self):
		self.d = Daemon(conf=grpc_conf()).start()
		self.addCleanup(self.d.stop)

	def call(self, prefix, method, body, headers=GRPC):
		return self.d.request("POST", prefix + "/ingressd.example.Echo/" +
		    method, headers=headers, body=body)

	def each(self):
		"""Both replicas: "" is the C one, "/py" the Python one."""
		return ("", "/py")

	def test_unary_status_in_trailers(self):
		for prefix in self.each():
			r = self.call(prefix, "Unary", msg(b"hello"))
			self.assertEqual(r.status, 200, (prefix, r))
			self.assertEqual(r.header("content-type"),
			    "application/grpc")
			self.assertTrue(r.chunked, r)
			self.assertEqual(messages(r.body), [b"hello"])
			self.assertEqual(r.trailers, [("grpc-status", "0")])

	def test_server_stream_three_messages(self):
		for prefix in self.each():
			r = self.call(prefix, "ServerStream", msg(b"x" * 1000))
			self.assertEqual(messages(r.body), [b"x" * 1000] * 3)
			self.assertEqual(r.trailers, [("grpc-status", "0")])

	def test_client_and_bidi_streams(self):
		for prefix in self.each():
			r = self.call(prefix, "ClientStream", msg(b"ab") + msg(b"c"))
			self.assertEqual(messages(r.body), [b"abc"])
			self.assertEqual(r.trailers, [("grpc-status", "0")])
			r = self.call(prefix, "BidiStream", msg(b"ab") + msg(b"c"))
			self.assertEqual(messages(r.body), [b"ab", b"c"])
			self.assertEqual(r.trailers, [("grpc-status", "0")])

	def test_abort_is_trailers_only(self):
		for prefix in self.each():
			r = self.call(prefix, "Abort", msg(b"bad 100%"))
			self.assertEqual(r.status, 200)
			self.assertEqual(r.header("grpc-status"), "3")
			self.assertEqual(r.header("grpc-message"),
			    "aborted: bad 100%25")
			self.assertEqual(r.body, b"")
			self.assertEqual(r.trailers, [])

	def test_unknown_method_unimplemented(self):
		for prefix in self.each():
			r = self.call(prefix, "Nope", msg(b"x"))
			self.assertEqual(r.status, 200)
			self.assertEqual(r.header("grpc-status"), "12")

	def test_no_te_trailers_no_trailer_section(self):
		for prefix in self.each():
			r = self.call(prefix, "Unary", msg(b"hi"),
			    {"Content-Type": "application/grpc"})
			self.assertEqual(r.status, 200)
			self.assertTrue(r.chunked)
			self.assertEqual(messages(r.body), [b"hi"])
			self.assertEqual(r.trailers, [])

	def test_keep_alive_after_trailers(self):
		with self.d.conn() as c:
			for i in range(3):
				r = c.request("POST", "/ingressd.example.Echo/Unary",
				    headers=GRPC, body=msg(b"%d" % i))
				self.assertEqual(messages(r.body), [b"%d" % i])
				self.assertEqual(r.trailers, [("grpc-status", "0")])


def bad_conf(bad):
	return {
		"workers": 1,
		"timeouts": {"connect": 2, "drain": 1},
		"routes": [{"prefix": "/t", "deployment": "t"}],
		"deployments": {"t": {"endpoints": [bad.listen],
		    "prewarm": True, "max_ongoing_requests": 10}},
	}


class Versions(unittest.TestCase):

	def run_bad(self, mode, version, check):
		bad = BadReplica(mode, args=["--version", str(version)]).start()
		try:
			with Daemon(conf=bad_conf(bad)) as d:
				wait_until(lambda: bad.events("hello"), 5.0,
				    what="ingressd's HELLO")
				# ingressd offers v2 whatever the replica says.
				self.assertEqual(bad.events("hello")[0]["version"], 2)
				check(d, bad)
		finally:
			bad.stop()

	def test_v2_replica_trailers_reach_the_client(self):
		def check(d, bad):
			r = d.request("GET", "/t", headers={"TE": "trailers"})
			self.assertEqual(r.status, 200)
			self.assertEqual(r.body, b"trailers ahead")
			self.assertEqual(r.trailers, [("x-sum", "42"),
			    ("grpc-status", "0")])
		self.run_bad("trailers", 2, check)

	def test_v1_replica_keeps_working(self):
		def check(d, bad):
			for _ in range(3):
				r = d.request("GET", "/t")
				self.assertEqual(r.status, 200)
				self.assertEqual(r.json()["replica"], bad.rid)
		self.run_bad("wrong-ids", 1, check)

	def test_v1_replica_sending_trailers_is_cut_off(self):
		def check(d, bad):
			# The head went out before the bad frame: the client
			# sees a cut response (no last chunk), never trailers.
			with self.assertRaises(harness.HTTPError):
				d.request("GET", "/t", headers={"TE": "trailers"})
			wait_until(lambda: "TRAILERS on a v1 connection" in
			    open(d.log, errors="replace").read(), 5.0,
			    what="the protocol error logged")
		self.run_bad("trailers", 1, check)


if __name__ == "__main__":
	unittest.main()
