"""HTTP/2 upstreams (issue 16, "protocol": "h2c"): an unmodified grpcio
server (tests/integ/grpc_backend.py, raw bytes) as the replica, a grpcio
client through ingressd's HTTP/2 front; one multiplexed connection per
(worker, replica), proven by SETTINGS + PING; deadlines and client
cancels reach the server as RST_STREAM(CANCEL); trailers and metadata
pass both ways; a killed server fails only what was in flight; a GOAWAY
lets in-flight calls finish while new ones go elsewhere.  And plain HTTP
through an h2c replica (python3-h2 origin) from an HTTP/1.1 client."""

import os
import subprocess
import sys
import threading
import time
import unittest

import harness
from harness import (Daemon, base_conf, free_port, tcp_conns_to, timeout,
    wait_until)

try:
	import grpc
except ImportError:			# run with /usr/bin/python3
	grpc = None

HERE = os.path.dirname(os.path.abspath(__file__))


class Backend:
	"""grpc_backend.py on a free loopback port (tls: (cert, key) to
	serve over TLS)."""

	def __init__(self, name="a", tls=None):
		self.name = name
		self.tls = tls
		self.port = free_port()
		self.address = "127.0.0.1:%d" % self.port
		self.events = harness.log_path("grpc-" + name)[:-4] + ".events"
		open(self.events, "w").close()
		self.proc = None

	def __enter__(self):
		log = open(harness.log_path("grpc-" + self.name), "wb")
		self.proc = subprocess.Popen(["/usr/bin/python3",
		    os.path.join(HERE, "grpc_backend.py"), str(self.port),
		    self.name, self.events] + list(self.tls or ()),
		    stdout=subprocess.PIPE, stderr=log,
		    stdin=subprocess.DEVNULL)
		harness._register(self.proc)
		line = self.proc.stdout.readline()
		if line.strip() != b"ready":
			raise AssertionError("grpc backend did not start")
		return self

	def __exit__(self, *exc):
		harness.stop_proc(self.proc, timeout=8)

	def lines(self):
		with open(self.events) as f:
			return f.read().splitlines()


def h2c_conf(*addresses, **extra):
	c = base_conf()
	dep = {"endpoints": list(addresses), "protocol": "h2c"}
	dep.update(extra)
	c["deployments"] = {"g": dep}
	c["routes"] = [{"prefix": "/t.S/", "deployment": "g"}]
	return c


@unittest.skipIf(grpc is None, "python3-grpcio missing (/usr/bin/python3)")
class GrpcUpstream(unittest.TestCase):

	def channel(self, d):
		ch = grpc.insecure_channel("127.0.0.1:%d" % d.port)
		self.addCleanup(ch.close)
		return ch

	def call(self, ch, method, req=b"hi", **kw):
		return ch.unary_unary("/t.S/" + method)(req, **kw)

	@timeout(30)
	def test_unary_streams_metadata_trailers(self):
		with Backend() as b, Daemon(conf=h2c_conf(b.address)) as d:
			ch = self.channel(d)
			r, call = ch.unary_unary("/t.S/Unary").with_call(
			    b"\x00payload", metadata=(("x-md", "v1"),
			    ("x-md-bin", b"\x00\xff\x01")))
			self.assertEqual(r, b"\x00payload")
			init = dict(call.initial_metadata())
			trail = dict(call.trailing_metadata())
			self.assertEqual(init.get("x-init"), "1")
			self.assertEqual(trail.get("x-trail"), "done")
			self.assertEqual(trail.get("x-md"), "v1")
			self.assertEqual(trail.get("x-md-bin"), b"\x00\xff\x01")
			got = list(ch.unary_stream("/t.S/ServerStream")(b"abc"))
			self.assertEqual(got, [b"abc"] * 3)
			r = ch.stream_unary("/t.S/ClientStream")(
			    iter([b"a", b"bc", b"def"]))
			self.assertEqual(r, b"abcdef")
			got = list(ch.stream_stream("/t.S/Bidi")(
			    iter([b"x%d" % i for i in range(20)])))
			self.assertEqual(got, [b"x%d" % i for i in range(20)])
			# A large message both ways (flow control, several
			# windows).
			big = os.urandom(3 << 20)
			self.assertEqual(self.call(ch, "Unary", big), big)
			rep = d.deployments()["g"]["replicas"][0]
			self.assertEqual(rep["protocol"], "h2c")
			self.assertEqual(rep["state"], "ready")
			self.assertGreaterEqual(rep["pongs"], 1)
			self.assertEqual(rep["connections_open"], 1)

	@timeout(30)
	def test_abort_status_reaches_client(self):
		with Backend() as b, Daemon(conf=h2c_conf(b.address)) as d:
			with self.assertRaises(grpc.RpcError) as e:
				self.call(self.channel(d), "Abort")
			self.assertEqual(e.exception.code(),
			    grpc.StatusCode.INVALID_ARGUMENT)
			self.assertEqual(e.exception.details(), "bad thing")

	@timeout(30)
	def test_deadline_and_cancel_reach_server(self):
		with Backend() as b, Daemon(conf=h2c_conf(b.address)) as d:
			ch = self.channel(d)
			t0 = time.monotonic()
			with self.assertRaises(grpc.RpcError) as e:
				self.call(ch, "Slow", b"5", timeout=0.5,
				    metadata=(("x-tag", "dl"),))
			self.assertEqual(e.exception.code(),
			    grpc.StatusCode.DEADLINE_EXCEEDED)
			self.assertLess(time.monotonic() - t0, 3)
			wait_until(lambda: "cancelled dl" in b.lines(),
			    timeout=3, what="the server saw the deadline")
			# A client cancel mid-call.
			fut = ch.unary_unary("/t.S/Slow").future(b"5",
			    metadata=(("x-tag", "cx"),))
			wait_until(lambda: "started cx" in b.lines(), timeout=3)
			fut.cancel()
			wait_until(lambda: "cancelled cx" in b.lines(),
			    timeout=3, what="the server saw the cancel")
			# The connection stays: a per-stream cancel.
			self.assertEqual(self.call(ch, "Unary", b"ok"), b"ok")
			rep = d.deployments()["g"]["replicas"][0]
			self.assertEqual(rep["connections_open"], 1)

	@timeout(60)
	def test_100_concurrent_calls_multiplexed(self):
		with Backend() as b, Daemon(conf=h2c_conf(b.address,
		    max_ongoing_requests=200)) as d:
			ch = self.channel(d)
			futs = [ch.unary_unary("/t.S/Slow").future(b"0.3",
			    metadata=(("x-tag", "m%d" % i),)) for i in range(100)]
			wait_until(lambda: sum(1 for ln in b.lines()
			    if ln.startswith("started")) == 100, timeout=10,
			    what="100 calls on the server at once")
			self.assertEqual(tcp_conns_to(b.port), 1)
			self.assertEqual(d.deployments()["g"]["replicas"][0]
			    ["in_flight"], 100)
			for f in futs:
				self.assertEqual(f.result(timeout=10), b"a")
			self.assertEqual(tcp_conns_to(b.port), 1)

	@timeout(40)
	def test_server_killed_fails_in_flight_only(self):
		with Backend("a") as a, Daemon(conf=h2c_conf(a.address)) as d:
			ch = self.channel(d)
			self.assertEqual(self.call(ch, "Who"), b"a")
			fut = ch.unary_unary("/t.S/Slow").future(b"5",
			    metadata=(("x-tag", "k"),))
			wait_until(lambda: "started k" in a.lines(), timeout=3)
			a.proc.kill()
			with self.assertRaises(grpc.RpcError) as e:
				fut.result(timeout=5)
			self.assertEqual(e.exception.code(),
			    grpc.StatusCode.UNAVAILABLE)
			a.proc.wait()
			wait_until(lambda: d.deployments()["g"]["replicas"][0]
			    ["state"] != "ready", timeout=5,
			    what="the replica out of rotation")

	@timeout(60)
	def test_goaway_in_flight_finish_new_go_elsewhere(self):
		with Backend("a") as a, Backend("b") as b, Daemon(
		    conf=h2c_conf(a.address, b.address)) as d:
			ch = self.channel(d)
			self.call(ch, "Who")	# resolves the name: both warm
			wait_until(lambda: all(r["state"] == "ready" for r in
			    d.deployments()["g"]["replicas"]), timeout=5)
			futs = [ch.unary_unary("/t.S/Slow").future(b"1.5",
			    metadata=(("x-tag", "g%d" % i),)) for i in range(6)]
			def started(be):
				return sum(1 for ln in be.lines()
				    if ln.startswith("started"))

			# Every call reached a server (and some a) before the stop,
			# so none of them is still on its way when GOAWAY comes.
			wait_until(lambda: started(a) >= 1 and
			    started(a) + started(b) >= 6, timeout=5)
			na = started(a)
			a.proc.terminate()		# stop(grace): GOAWAY

			def a_out():
				return all(r["state"] != "ready" for r in
				    d.deployments()["g"]["replicas"]
				    if r["address"] == a.address)
			wait_until(a_out, timeout=5, what="a out of rotation")
			whos = [self.call(ch, "Who") for _ in range(10)]
			self.assertEqual(set(whos), {b"b"})
			for f in futs:
				self.assertIn(f.result(timeout=10), (b"a", b"b"))
			self.assertEqual(sum(1 for ln in a.lines()
			    if ln.startswith("finished")), na)


NGHTTPD = "/usr/sbin/nghttpd"


@unittest.skipIf(not os.access(NGHTTPD, os.X_OK), "nghttp2-server missing")
class PlainHttpOverH2c(unittest.TestCase):

	@timeout(30)
	def test_http1_client_to_nghttpd(self):
		"""nghttpd (cleartext HTTP/2 only) serves a file; an HTTP/1.1
		client gets it through ingressd, body and status intact, many
		requests on the one upstream connection."""
		root = harness.log_path("nghttpd")[:-4] + ".root"
		os.makedirs(root, exist_ok=True)
		body = os.urandom(300000)
		with open(os.path.join(root, "f.bin"), "wb") as f:
			f.write(body)
		port = free_port()
		log = open(harness.log_path("nghttpd"), "wb")
		proc = subprocess.Popen([NGHTTPD, "--no-tls", "-d", root,
		    "-a", "127.0.0.1", str(port)], stdout=log, stderr=log,
		    stdin=subprocess.DEVNULL)
		harness._register(proc)
		self.addCleanup(harness.stop_proc, proc)
		c = base_conf()
		c["deployments"] = {"web": {"endpoints": ["127.0.0.1:%d" % port],
		    "protocol": "h2c"}}
		c["routes"] = [{"prefix": "/web", "deployment": "web",
		    "strip_prefix": True}]
		with Daemon(conf=c) as d:
			wait_until(lambda: d.request("GET", "/web/f.bin").status
			    == 200, timeout=5)
			with d.conn() as conn:
				for _ in range(20):
					r = conn.request("GET", "/web/f.bin")
					self.assertEqual(r.status, 200)
					self.assertEqual(r.body, body)
				r = conn.request("GET", "/web/none")
				self.assertEqual(r.status, 404)
			self.assertEqual(tcp_conns_to(port), 1)


if __name__ == "__main__":
	unittest.main()
