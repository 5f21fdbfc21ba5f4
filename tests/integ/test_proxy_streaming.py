"""Responses without a Content-Length are streamed to the client."""

import time
import unittest

from harness import Daemon


class Streaming(unittest.TestCase):

	def test_chunks_arrive_as_sent(self):
		with Daemon() as d:
			with d.conn() as c:
				# Resolve and warm first: only streaming is
				# timed below.
				r = c.request("GET", "/sleep?ms=1")
				self.assertEqual(r.status, 200, r)
				t0 = time.monotonic()
				r = c.request("GET", "/sleep?chunks=5&ms=100")
				self.assertEqual(r.status, 200, r)
				self.assertTrue(r.chunked, r.headers)
				self.assertIsNone(r.header("content-length"))
				lines = r.body.decode().splitlines()
				self.assertEqual(len(lines), 5, r.body)
				for ln in lines:
					self.assertRegex(ln, r"^chunk \d+$")
				n = [int(ln.split()[1]) for ln in lines]
				self.assertEqual(n, list(range(n[0], n[0] + 5)))
				first = r.chunk_times[0][0]
				last = r.chunk_times[-1][0]
				# 5 chunks 100 ms apart: ~400 ms from the first
				# to the last; buffered would be ~0.
				self.assertGreater(last - first, 0.25,
				    "first chunk at %.3fs, last at %.3fs" % (
				    first - t0, last - t0))
				self.assertLess(first - t0, 0.3,
				    "first chunk only after %.3fs" % (
				    first - t0))
				# Still usable after the terminating chunk.
				r = c.request("GET", "/hello")
				self.assertEqual(r.body, b"Hello world!")

	def test_source_chunked(self):
		"""replica-sleep ?source=N&chunked=1 sends no content-length:
		ingressd frames it chunked to an HTTP/1.1 client (the bench's
		down-chunked mode); without chunked=1 it has a Content-Length."""
		n = 100000
		with Daemon() as d:
			with d.conn() as c:
				r = c.request("GET",
				    "/sleep?source=%d&chunked=1" % n)
				self.assertEqual(r.status, 200, r)
				self.assertTrue(r.chunked, r.headers)
				self.assertEqual(
				    r.header("transfer-encoding").lower(),
				    "chunked", r.headers)
				self.assertIsNone(r.header("content-length"),
				    r.headers)
				self.assertEqual(len(r.body), n)
				self.assertEqual(r.body, b"x" * n)
				self.assertGreater(len(r.chunk_times), 0)
				# The same connection, Content-Length framing.
				r = c.request("GET", "/sleep?source=%d" % n)
				self.assertEqual(r.status, 200, r)
				self.assertFalse(r.chunked, r.headers)
				self.assertIsNone(r.header("transfer-encoding"),
				    r.headers)
				self.assertEqual(r.header("content-length"),
				    str(n))
				self.assertEqual(r.body, b"x" * n)
				r = c.request("GET",
				    "/sleep?source=%d&chunked=0" % n)
				self.assertEqual(r.header("content-length"),
				    str(n), r.headers)
				self.assertEqual(len(r.body), n)
				r = c.request("GET",
				    "/sleep?source=%d&chunked=2" % n)
				self.assertEqual(r.status, 400, r)

	def test_sleep_with_content_length(self):
		with Daemon() as d:
			t0 = time.monotonic()
			r = d.request("GET", "/sleep?ms=200")
			dt = time.monotonic() - t0
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.body, b"slept 200 ms\n")
			self.assertGreaterEqual(dt, 0.19)


if __name__ == "__main__":
	unittest.main()
