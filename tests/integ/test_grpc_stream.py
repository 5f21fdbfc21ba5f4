"""A long gRPC server stream through the HTTP/2 edge (issue 14): grpcio
(python3-grpcio, raw bytes) as the client, build/replica-grpc-echo's
Source method as the server (a byte count in, that many bytes out in
64 KiB messages, paced by the replica library's credit).  The whole
stream arrives, then grpc-status 0; and a client that reads slowly keeps
ingressd's RSS bounded, because HTTP/2 flow control reaches the replica
through the wire protocol's credit instead of ingressd buffering: the
replica runs ahead of the reader by windows and socket buffers only, and
a cancel stops it."""

import os
import struct
import time
import unittest

import harness
from harness import Daemon, RssSampler, timeout, wait_until

try:
	import grpc
except ImportError:			# run with /usr/bin/python3
	grpc = None

SVC = "/ingressd.example.Echo/"
MSG = 64 << 10			# Source's message size
SIZE = 200 * 1024 * 1024	# offered to the slow reader
RATE = 20 * 1000 * 1000		# bytes/s it reads
SECS = 3.0			# for this long, then it cancels
RSS_MAX_KB = 64 * 1024		# as test_resilience_flow's bound
RSS_GROWTH_KB = 16 * 1024	# peak over start: "flat" as the benches say
# How far the source may run ahead of the reader: the client's window
# (grpcio grows it by its BDP estimate), ingressd's buffers, the kernel's
# socket buffers.  Without flow control it would be most of SIZE.
AHEAD_MAX = 32 * 1024 * 1024
SANITIZED = os.environ.get("INGRESSD_SANITIZED") == "1"


def conf():
	c = harness.base_conf()
	c["routes"] = [{"prefix": SVC, "deployment": "g"}]
	c["deployments"] = {"g": harness.spawn("grpc-echo", 1)}
	return c


@unittest.skipIf(grpc is None, "python3-grpcio missing (/usr/bin/python3)")
class GrpcStream(unittest.TestCase):

	def setUp(self):
		self.d = Daemon(conf=conf()).start()
		self.addCleanup(self.d.stop)
		self.ch = grpc.insecure_channel("127.0.0.1:%d" % self.d.port)
		self.addCleanup(self.ch.close)

	def call(self, method, kind="uu"):
		f = self.ch.unary_stream if kind == "us" else self.ch.unary_unary
		return f(SVC + method, request_serializer=None,
		    response_deserializer=None)

	def sent(self):
		"""Bytes the replica's Source calls have sent so far."""
		r = self.call("SourceStats")(b"", timeout=5)
		return int(r.split(b"=")[1])

	@timeout(30)
	def test_source_whole_stream(self):
		n = 3 * MSG + 1000
		it = self.call("Source", "us")(struct.pack(">Q", n), timeout=10)
		msgs = list(it)
		self.assertEqual([len(m) for m in msgs], [MSG, MSG, MSG, 1000])
		self.assertEqual(set(b"".join(msgs)), {ord("x")})
		self.assertEqual(it.code(), grpc.StatusCode.OK)
		self.assertEqual(list(self.call("Source", "us")(
		    struct.pack(">Q", 0), timeout=10)), [])
		with self.assertRaises(grpc.RpcError) as e:
			list(self.call("Source", "us")(b"\x01\x02", timeout=10))
		self.assertEqual(e.exception.code(),
		    grpc.StatusCode.INVALID_ARGUMENT)

	@timeout(30)
	def test_concurrent_streams_interleave_whole(self):
		"""Four 8 MiB streams at once on one connection: their DATA
		frames interleave in ingressd's output (past its high-water
		mark frames wait their turn); each arrives whole, in order."""
		n = 8 * MSG * 16 + 7
		calls = [self.call("Source", "us")(struct.pack(">Q", n),
		    timeout=20) for _ in range(4)]
		for it in calls:
			msgs = list(it)
			self.assertEqual(it.code(), grpc.StatusCode.OK)
			self.assertEqual(len(msgs), n // MSG + 1)
			self.assertTrue(all(len(m) == MSG for m in msgs[:-1]))
			self.assertEqual(len(msgs[-1]), n % MSG)
			self.assertEqual(sum(m.count(b"x") for m in msgs), n)

	@timeout(30)
	def test_slow_reader_rss_bounded(self):
		if SANITIZED:
			self.skipTest("RSS bound not meaningful under ASan")
		self.assertEqual(self.sent(), 0)
		rss = RssSampler(self.d.proc.pid).start()
		try:
			got, ahead, elapsed = self.slow_read()
		finally:
			max_kb = rss.stop()
		# The reader really was the slow side, and stopped early.
		self.assertGreater(got, 0.5 * RATE * SECS, got)
		self.assertLess(got, 1.2 * RATE * elapsed + 4 * MSG, got)
		self.assertLess(ahead, AHEAD_MAX, "the replica ran %d bytes "
		    "ahead of the client" % ahead)
		self.assertLess(max_kb, RSS_MAX_KB, "ingressd VmRSS reached "
		    "%d kB" % max_kb)
		self.assertLess(max_kb - rss.samples[0][1], RSS_GROWTH_KB,
		    "ingressd VmRSS grew from %d to %d kB" % (
		    rss.samples[0][1], max_kb))
		self.assertGreater(len(rss.samples), 20)
		# The cancel reached the replica: its source stops short.
		last = [-1]

		def still():
			n, last[0] = last[0], self.sent()
			return n == last[0]
		wait_until(still, timeout=5, interval=0.3,
		    what="the replica's Source to stop")
		self.assertLess(last[0], SIZE // 2, last[0])

	def slow_read(self):
		"""Source SIZE bytes, read at RATE for SECS, then cancel:
		(bytes read, how far ahead the replica was, seconds)."""
		it = self.call("Source", "us")(struct.pack(">Q", SIZE),
		    timeout=25)
		got, ahead, t0 = 0, None, time.monotonic()
		for m in it:
			got += len(m)
			now = time.monotonic()
			if ahead is None and now - t0 >= SECS / 2:
				ahead = self.sent() - got
			if now - t0 >= SECS:
				break
			wait = t0 + got / RATE - now
			if wait > 0:
				time.sleep(wait)
		it.cancel()
		return got, ahead, time.monotonic() - t0


if __name__ == "__main__":
	unittest.main()
