"""Many requests at once: multiplexing, per-replica limits, cancels."""

import threading
import time
import unittest

from harness import Daemon, wait_until


def parallel(fn, n, join=20.0):
	"""Run fn(i) in n threads; return (results, errors)."""
	results, errors = [None] * n, []

	def run(i):
		try:
			results[i] = fn(i)
		except Exception as e:	# reported by the caller
			errors.append(e)
	threads = [threading.Thread(target=run, args=(i,), daemon=True)
	    for i in range(n)]
	for t in threads:
		t.start()
	deadline = time.monotonic() + join
	for t in threads:
		t.join(max(0.0, deadline - time.monotonic()))
	if any(t.is_alive() for t in threads):
		errors.append("threads still running after %.0fs" % join)
	return results, errors


class Concurrency(unittest.TestCase):

	def test_concurrent_requests_multiplexed(self):
		# 40 requests of 300 ms on 2 replicas: with streams
		# multiplexed they overlap; one at a time would take 6 s.
		with Daemon() as d:
			r = d.request("GET", "/sleep?ms=1")	# warm
			self.assertEqual(r.status, 200, r)
			t0 = time.monotonic()
			rs, errs = parallel(lambda i: d.request("GET",
			    "/sleep?ms=300", timeout=15), 40)
			dt = time.monotonic() - t0
			self.assertEqual(errs, [])
			for r in rs:
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"slept 300 ms\n")
			self.assertLess(dt, 2.5)

	def test_max_ongoing_requests_queues(self):
		over = {"deployments": {"sleep": {"spawn": {"replicas": 1},
		    "max_ongoing_requests": 1}}}
		with Daemon(over) as d:
			r = d.request("GET", "/sleep?ms=1")	# warm
			self.assertEqual(r.status, 200, r)
			t0 = time.monotonic()
			rs, errs = parallel(lambda i: d.request("GET",
			    "/sleep?ms=300", timeout=15), 3)
			dt = time.monotonic() - t0
			self.assertEqual(errs, [])
			for r in rs:
				self.assertEqual(r.status, 200, r)
			# One at a time: at least 3 x 300 ms.
			self.assertGreaterEqual(dt, 0.85)
			self.assertLess(dt, 4.0)

	SLEEP1 = {"deployments": {"sleep": {"spawn": {"replicas": 1}}}}

	def client_gone_cancels(self, d, head):
		"""A sleep request (head) in flight; the client closes; the
		stream is abandoned well before the 3 s sleep would end, and
		the replica serves the next request."""
		r = d.request("GET", "/sleep?ms=1")
		self.assertEqual(r.status, 200, r)
		c = d.conn()
		c.send(head)

		def in_flight():
			return d.deployments()["sleep"]["replicas"][0]["in_flight"]
		wait_until(lambda: in_flight() == 1, 2.0,
		    what="request in flight")
		c.close()
		wait_until(lambda: in_flight() == 0, 1.5,
		    what="in_flight back to 0 after the client left")
		r = d.request("GET", "/sleep?ms=1")
		self.assertEqual(r.status, 200, r)

	def test_client_gone_cancels_stream(self):
		with Daemon(self.SLEEP1) as d:
			self.client_gone_cancels(d,
			    b"GET /sleep?ms=3000 HTTP/1.1\r\nHost: x\r\n\r\n")

	def test_client_gone_cancels_closing_request(self):
		# A request that closes its connection is not read behind at
		# first (src/sock.c: a quick answer then costs no epoll_ctl),
		# but once the answer takes a while the client is watched
		# again: going away still cancels the stream.
		with Daemon(self.SLEEP1) as d:
			self.client_gone_cancels(d,
			    b"GET /sleep?ms=3000 HTTP/1.1\r\nHost: x\r\n"
			    b"Connection: close\r\n\r\n")
			# A quick closing request is answered in full, then
			# closed.
			c = d.conn()
			r = c.request("GET", "/sleep?ms=1", version="HTTP/1.0",
			    host="x")
			self.assertEqual((r.version, r.status),
			    ("HTTP/1.0", 200), r)
			self.assertTrue(c.wait_closed())

if __name__ == "__main__":
	unittest.main()
