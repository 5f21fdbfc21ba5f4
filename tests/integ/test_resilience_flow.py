"""Flow control and the memory bound (issue 4): a 200 MB response to a
client reading at 20 MB/s and a 200 MB upload to a replica reading at
20 MB/s go through with ingressd's RSS under 64 MB, because WINDOW credits
push back on the fast side instead of ingressd buffering."""

import os
import socket
import threading
import time
import unittest

import harness
from harness import Daemon, RssSampler, sleep_stats, timeout

SIZE = 200 * 1024 * 1024	# ~10.5 s at RATE each way
RATE = 20 * 1000 * 1000		# bytes/s
RSS_MAX_KB = 64 * 1024
# Under ASan the RSS holds shadow memory and the quarantine of freed
# buffers (up to 256 MB): the bound is proven by the plain build's run.
SANITIZED = os.environ.get("INGRESSD_SANITIZED") == "1"
# How far the fast side may run ahead of the slow one: a window, the
# daemon's buffers and the kernel's socket buffers (several MB each on
# loopback TCP).  Without flow control it would be most of SIZE.
AHEAD_MAX = 32 * 1024 * 1024


def conf():
	return {"limits": {"max_body": 1 << 30},
	    "deployments": {"sleep": {"spawn": {"replicas": 1}}}}


class Flow(unittest.TestCase):

	@timeout(45)
	def test_large_response_to_slow_reader(self):
		if SANITIZED:
			self.skipTest("RSS bound not meaningful under ASan")
		with Daemon(conf()) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=0").status,
			    200)
			rss = RssSampler(d.proc.pid).start()
			try:
				got, elapsed, ahead = self.slow_read(d)
			finally:
				max_kb = rss.stop()
			self.assertEqual(got, SIZE)
			# The client really was the slow side.
			self.assertGreater(elapsed, 0.9 * SIZE / RATE, elapsed)
			self.assertLess(ahead, AHEAD_MAX, "the replica ran "
			    "%d bytes ahead of the client" % ahead)
			self.assertLess(max_kb, RSS_MAX_KB, "ingressd VmRSS "
			    "reached %d kB" % max_kb)
			self.assertGreater(len(rss.samples), 20)

	def slow_read(self, d):
		"""GET a SIZE-byte response produced as fast as credit allows
		and read it at RATE; returns (bytes, seconds, how far ahead the
		replica was half way)."""
		with d.conn(timeout=30) as c:
			c.send(harness.build_request("GET",
			    "/sleep?source=%d" % SIZE))
			resp = harness.Response()
			c.read_head(resp)
			self.assertEqual(resp.status, 200, resp)
			self.assertEqual(resp.header("content-length"), str(SIZE))
			got = len(c.buf)
			c.buf.clear()
			ahead = None
			t0 = time.monotonic()
			for _ in range(10 * SIZE // 65536):
				if got >= SIZE:
					break
				wait = t0 + got / RATE - time.monotonic()
				if wait > 0:
					time.sleep(wait)
				n = len(c.sock.recv(min(262144, SIZE - got)))
				self.assertGreater(n, 0, "closed after %d" % got)
				got += n
				if ahead is None and got >= SIZE // 2:
					ahead = sleep_stats(d.port)["bytes_out"] - got
			elapsed = time.monotonic() - t0
			# Nothing more than the body; the connection is kept.
			r = c.request("GET", "/sleep?ms=0")
			self.assertEqual(r.status, 200, r)
		return got, elapsed, ahead

	@timeout(45)
	def test_large_upload_to_slow_replica(self):
		if SANITIZED:
			self.skipTest("RSS bound not meaningful under ASan")
		with Daemon(conf()) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=0").status,
			    200)
			rss = RssSampler(d.proc.pid).start()
			try:
				resp, elapsed, ahead = self.fast_send(d)
			finally:
				max_kb = rss.stop()
			self.assertEqual(resp.status, 200, resp)
			self.assertEqual(resp.json(), {"received": SIZE})
			self.assertGreater(elapsed, 0.9 * SIZE / RATE, elapsed)
			self.assertLess(ahead, AHEAD_MAX, "the client ran %d "
			    "bytes ahead of the replica" % ahead)
			self.assertLess(max_kb, RSS_MAX_KB, "ingressd VmRSS "
			    "reached %d kB" % max_kb)

	def fast_send(self, d):
		"""POST SIZE bytes as fast as the socket takes them to a
		replica reading at RATE; returns (response, seconds, how far
		the client was ahead of the replica half way)."""
		piece = b"u" * (1 << 20)
		sent = [0]
		err = []
		with d.conn(timeout=30) as c:
			c.send(harness.build_request("POST",
			    "/sleep?sink=%d" % RATE,
			    {"Content-Length": str(SIZE)}))

			def send():
				try:
					while sent[0] < SIZE:
						n = min(len(piece), SIZE - sent[0])
						c.sock.sendall(piece[:n])
						sent[0] += n
				except OSError as e:
					err.append(e)
			t0 = time.monotonic()
			th = threading.Thread(target=send, daemon=True)
			th.start()
			ahead = None
			deadline = t0 + 3 * SIZE / RATE
			while ahead is None and time.monotonic() < deadline:
				time.sleep(0.05)
				s = sleep_stats(d.port)
				if s["bytes_in"] >= SIZE // 2:
					ahead = sent[0] - s["bytes_in"]
			self.assertIsNotNone(ahead, "half the body not through "
			    "in time")
			resp = c.read_response("POST")
			elapsed = time.monotonic() - t0
			th.join(10)
			self.assertFalse(th.is_alive())
			self.assertEqual(err, [])
		return resp, elapsed, ahead


if __name__ == "__main__":
	unittest.main()
