"""gRPC at the front door (issue 14): grpcio (python3-grpcio, raw bytes,
no code generation) as the real client.  Calls route like any request;
every error ingressd makes is a gRPC status (no route: UNIMPLEMENTED, no
replica: UNAVAILABLE, deadline: DEADLINE_EXCEEDED with CANCEL to the
replica); grpc-timeout becomes the deadline of the whole call; a client
cancel reaches the replica; 100 concurrent streams share one connection;
metadata passes (incl. -bin keys); /metrics counts calls by grpc-status."""

import json
import time
import unittest

from h2_client import H2, grpc_frame
import harness
from harness import Daemon, sleep_stats, timeout, wait_until

try:
	import grpc
except ImportError:			# run with /usr/bin/python3
	grpc = None


def one_sleep():
	return {"deployments": {"sleep": {"spawn": {"replicas": 1}}}}


@unittest.skipIf(grpc is None, "python3-grpcio missing (/usr/bin/python3)")
class GrpcFront(unittest.TestCase):

	def channel(self, d):
		ch = grpc.insecure_channel("127.0.0.1:%d" % d.port)
		self.addCleanup(ch.close)
		return ch

	def unary(self, ch, method, req=b"hi", **kw):
		return ch.unary_unary(method, request_serializer=None,
		    response_deserializer=None)(req, **kw)

	def code(self, ch, method, **kw):
		try:
			self.unary(ch, method, **kw)
		except grpc.RpcError as e:
			return e.code(), e.details()
		return grpc.StatusCode.OK, None

	@timeout(30)
	def test_unary_through_route_and_no_route(self):
		with Daemon() as d:
			ch = self.channel(d)
			# echo's raw mode mirrors the framed message back.
			r = self.unary(ch, "/echo/pkg.Svc/Unary?raw=1",
			    b"\x01payload")
			self.assertEqual(r, b"\x01payload")
			code, msg = self.code(ch, "/pkg.Svc/Method")
			self.assertEqual(code, grpc.StatusCode.UNIMPLEMENTED)
			self.assertEqual(msg, "no route for this path")
			samples = harness.scrape(d.admin_port, "/metrics")
			self.assertEqual(harness.metric_sum(samples,
			    "ingressd_grpc_calls_total",
			    grpc_code="UNIMPLEMENTED"), 1.0)
			self.assertEqual(harness.metric_sum(samples,
			    "ingressd_grpc_calls_total", grpc_code="OK"), 1.0)

	@timeout(30)
	def test_no_replica_unavailable(self):
		over = {"deployments": {"dead": {"endpoints": ["127.0.0.1:1"],
		    "queue_timeout": 0.3}}, "routes": [{"prefix": "/dead",
		    "deployment": "dead"}] + harness.base_conf()["routes"]}
		with Daemon(over) as d:
			code, msg = self.code(self.channel(d), "/dead/pkg.Svc/M")
			self.assertEqual(code, grpc.StatusCode.UNAVAILABLE, msg)
			self.assertIn("replica", msg)

	@timeout(30)
	def test_grpc_timeout_deadline_exceeded_and_cancel(self):
		"""grpc-timeout is the call's deadline; ingressd answers
		DEADLINE_EXCEEDED itself (no client-side deadline here) and
		cancels the replica's stream."""
		with Daemon(one_sleep()) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=0").status, 200)
			before = sleep_stats(d.port)
			c = H2(d.port)
			t0 = time.monotonic()
			c.request(1, "/sleep/pkg.Svc/M?ms=5000", method="POST",
			    extra=[("content-type", "application/grpc"),
			    ("te", "trailers"), ("grpc-timeout", "300m")],
			    end_stream=False)
			c.data(1, grpc_frame(b"x"))
			h, body, trailers, rst = c.response(1)
			dt = time.monotonic() - t0
			self.assertEqual((h[":status"], h["grpc-status"]),
			    ("200", "4"), h)	# Trailers-Only
			self.assertIsNone(trailers)
			self.assertGreaterEqual(dt, 0.25)
			self.assertLess(dt, 2.0)
			wait_until(lambda: sleep_stats(d.port)["cancels"] ==
			    before["cancels"] + 1, 3.0,
			    what="the replica sees the CANCEL")

	@timeout(30)
	def test_client_cancel_reaches_replica(self):
		with Daemon(one_sleep()) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=0").status, 200)
			before = sleep_stats(d.port)
			ch = self.channel(d)
			fut = ch.unary_unary("/sleep/pkg.Svc/M?ms=5000",
			    request_serializer=None,
			    response_deserializer=None).future(b"x")
			wait_until(lambda: sleep_stats(d.port)["open"] >= 1, 3.0,
			    what="the call reaches the replica")
			fut.cancel()
			wait_until(lambda: sleep_stats(d.port)["cancels"] ==
			    before["cancels"] + 1, 3.0,
			    what="the replica sees the CANCEL")

	@timeout(60)
	def test_100_concurrent_streams_one_connection(self):
		with Daemon() as d:
			ch = self.channel(d)
			m = ch.unary_unary("/echo/pkg.Svc/Unary?raw=1",
			    request_serializer=None, response_deserializer=None)
			futs = [m.future(b"msg-%d" % i) for i in range(100)]
			got = [f.result(timeout=20) for f in futs]
			self.assertEqual(got, [b"msg-%d" % i for i in range(100)])
			self.assertEqual(harness.tcp_conns_to(d.port), 1)

	@timeout(30)
	def test_metadata_passes_both_ways(self):
		with Daemon() as d:
			ch = self.channel(d)
			m = ch.unary_unary("/echo/pkg.Svc/Unary?raw=1",
			    request_serializer=None, response_deserializer=None)
			r, call = m.with_call(b"x", metadata=(("x-meta", "v1"),
			    ("x-key-bin", b"\x00\xff")))
			self.assertEqual(r, b"x")
			# The replica saw them (echo's JSON mode shows headers).
			c = H2(d.port)
			c.request(1, "/echo/pkg.Svc/Unary", method="POST",
			    extra=[("content-type", "application/grpc"),
			    ("te", "trailers"), ("x-meta", "v1"),
			    ("x-key-bin", "AP8=")], end_stream=False)
			c.data(1, grpc_frame(b"x"))
			h, body, trailers, rst = c.response(1)
			j = json.loads(body)
			self.assertEqual(j["headers"]["x-meta"], "v1")
			self.assertEqual(j["headers"]["x-key-bin"], "AP8=")
			self.assertNotIn("te", j["headers"])
			# A replica without trailers: the status from its 200.
			self.assertEqual(trailers.get("grpc-status"), "0")
			self.assertIn("x-request-id", h)


if __name__ == "__main__":
	unittest.main()
