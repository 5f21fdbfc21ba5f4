"""Backpressure and deadlines (issue 4): a full queue and an expired wait
get 503 with Retry-After; the request deadline gets 504 and a CANCEL to the
replica; x-request-timeout-seconds shortens it but never lengthens it; a
client that goes away mid-response makes ingressd CANCEL the stream."""

import socket
import threading
import time
import unittest

import harness
from harness import Daemon, sleep_stats, timeout, wait_replica, wait_until

CODE_CANCEL = 4
CODE_TIMEOUT = 5


def one_sleep(**extra):
	"""Overrides: the sleep deployment with one replica (so its stats
	are the whole story) and the given deployment keys."""
	dep = {"spawn": {"replicas": 1}}
	dep.update(extra)
	return {"deployments": {"sleep": dep}}


class Request(threading.Thread):
	"""One request on its own connection, in a thread; .resp, .error,
	.elapsed."""

	def __init__(self, port, target, headers=None):
		super().__init__(daemon=True)
		self.port, self.target, self.headers = port, target, headers
		self.resp = self.error = None
		self.elapsed = None

	def run(self):
		t0 = time.monotonic()
		try:
			self.resp = harness.request(self.port, "GET", self.target,
			    self.headers, timeout=15)
		except Exception as e:		# reported by the test
			self.error = e
		self.elapsed = time.monotonic() - t0

	def result(self, timeout=15):
		self.join(timeout)
		if self.is_alive():
			raise AssertionError("%s: no answer in %ss" % (
			    self.target, timeout))
		if self.error is not None:
			raise AssertionError("%s: %r" % (self.target, self.error))
		return self.resp


class Deadlines(unittest.TestCase):

	def warm(self, d):
		r = d.request("GET", "/sleep?ms=0")
		self.assertEqual(r.status, 200, r)

	@timeout(20)
	def test_queue_full_503_retry_after(self):
		over = one_sleep(max_ongoing_requests=1, queue=1)
		with Daemon(over) as d:
			self.warm(d)
			first = Request(d.port, "/sleep?ms=800")
			first.start()
			wait_replica(d, "sleep", "sleep-0",
			    lambda r: r["in_flight"] == 1, 3.0)
			second = Request(d.port, "/sleep?ms=10")
			second.start()
			wait_until(lambda: d.deployments()["sleep"]["queued"] == 1,
			    3.0, what="second request queued")
			# The queue (1) is full: the third is refused at once.
			t0 = time.monotonic()
			r = d.request("GET", "/sleep?ms=10")
			dt = time.monotonic() - t0
			self.assertEqual(r.status, 503, r)
			self.assertIsNotNone(r.header("retry-after"), r.headers)
			self.assertTrue(r.header("retry-after").isdigit(),
			    r.headers)
			self.assertLess(dt, 0.5, "503 after %.3fs" % dt)
			# The running and the queued one both succeed.
			r1, r2 = first.result(), second.result()
			self.assertEqual((r1.status, r1.body),
			    (200, b"slept 800 ms\n"), r1)
			self.assertEqual((r2.status, r2.body),
			    (200, b"slept 10 ms\n"), r2)
			# The second waited for the first.
			self.assertGreater(second.elapsed, 0.4, second.elapsed)
			# The gauge is published on the worker's 250 ms tick.
			wait_until(lambda: d.deployments()["sleep"]["queued"] == 0,
			    1.0, what="queue gauge back to 0")

	@timeout(20)
	def test_queue_wait_expired_503(self):
		over = one_sleep(max_ongoing_requests=1, queue=10,
		    queue_timeout=0.3)
		with Daemon(over) as d:
			self.warm(d)
			first = Request(d.port, "/sleep?ms=1500")
			first.start()
			wait_replica(d, "sleep", "sleep-0",
			    lambda r: r["in_flight"] == 1, 3.0)
			t0 = time.monotonic()
			r = d.request("GET", "/sleep?ms=10")
			dt = time.monotonic() - t0
			self.assertEqual(r.status, 503, r)
			self.assertIsNotNone(r.header("retry-after"), r.headers)
			self.assertGreaterEqual(dt, 0.25, "503 after %.3fs" % dt)
			self.assertLess(dt, 1.0, "503 after %.3fs" % dt)
			# The gauge is published on the worker's 250 ms tick.
			wait_until(lambda: d.deployments()["sleep"]["queued"] == 0,
			    1.0, what="queue gauge back to 0")
			r1 = first.result()
			self.assertEqual(r1.status, 200, r1)
			# The replica never saw the expired one.
			self.assertEqual(sleep_stats(d.port)["requests"], 2)

	@timeout(20)
	def test_request_deadline_504_and_cancel(self):
		with Daemon(one_sleep(request_timeout=0.5)) as d:
			self.warm(d)
			before = sleep_stats(d.port)
			t0 = time.monotonic()
			r = d.request("GET", "/sleep?ms=3000")
			dt = time.monotonic() - t0
			self.assertEqual(r.status, 504, r)
			self.assertGreaterEqual(dt, 0.45, dt)
			self.assertLess(dt, 1.5, dt)

			def cancelled():
				s = sleep_stats(d.port)
				return s if s["cancel_frames"] == \
				    before["cancel_frames"] + 1 and \
				    s["open"] == 0 else None
			s = wait_until(cancelled, 2.0,
			    what="the replica sees one CANCEL")
			self.assertEqual(s["cancels"], before["cancels"] + 1, s)
			wait_replica(d, "sleep", "sleep-0",
			    lambda r: r["in_flight"] == 0, 2.0)
			# The connection to the replica is still good.
			r = d.request("GET", "/sleep?ms=1")
			self.assertEqual(r.status, 200, r)

	@timeout(20)
	def test_deadline_cancel_code_is_timeout(self):
		"""protocol.md: CANCEL carries TIMEOUT (5) when the deadline
		passed, CANCEL (4) when the client went away."""
		with Daemon(one_sleep(request_timeout=0.3)) as d:
			self.warm(d)
			r = d.request("GET", "/sleep?ms=3000")
			self.assertEqual(r.status, 504, r)
			s = wait_until(lambda: sleep_stats(d.port)["cancel_frames"]
			    and sleep_stats(d.port), 2.0, what="a CANCEL")
			self.assertEqual(s["cancel_codes"], {str(CODE_TIMEOUT): 1},
			    "the replica got CANCEL with codes %r for a "
			    "request whose deadline passed" % s["cancel_codes"])

	@timeout(20)
	def test_client_timeout_header(self):
		with Daemon(one_sleep(request_timeout=0.8)) as d:
			self.warm(d)
			# Shorter than the conf: honoured.
			t0 = time.monotonic()
			r = d.request("GET", "/sleep?ms=2000",
			    {"X-Request-Timeout-Seconds": "0.2"})
			dt = time.monotonic() - t0
			self.assertEqual(r.status, 504, r)
			self.assertGreaterEqual(dt, 0.15, dt)
			self.assertLess(dt, 0.6, dt)
			# Longer than the conf: capped at the conf's 0.8 s.
			t0 = time.monotonic()
			r = d.request("GET", "/sleep?ms=3000",
			    {"X-Request-Timeout-Seconds": "5"})
			dt = time.monotonic() - t0
			self.assertEqual(r.status, 504, r)
			self.assertGreaterEqual(dt, 0.7, dt)
			self.assertLess(dt, 1.8, dt)
			# Within the deadline: answered.
			r = d.request("GET", "/sleep?ms=100",
			    {"X-Request-Timeout-Seconds": "0.6"})
			self.assertEqual(r.status, 200, r)
			# Nonsense is ignored (the conf's deadline applies).
			for v in ("abc", "0", "-1", "0.1s"):
				t0 = time.monotonic()
				r = d.request("GET", "/sleep?ms=300",
				    {"X-Request-Timeout-Seconds": v})
				self.assertEqual(r.status, 200, (v, r))
			s = wait_until(lambda: (lambda s: s["open"] == 0 and s)(
			    sleep_stats(d.port)), 2.0, what="no stream open")
			self.assertEqual(s["cancel_frames"], 2, s)

	def test_deadline_travels_in_request(self):
		over = {"deployments": {"echo": {"request_timeout": 7}}}
		with Daemon(over) as d:
			r = d.request("GET", "/echo/x")
			self.assertEqual(r.json()["deadline_ms"], 7000, r)
			r = d.request("GET", "/echo/x",
			    {"X-Request-Timeout-Seconds": "0.25"})
			self.assertEqual(r.json()["deadline_ms"], 250, r)
			r = d.request("GET", "/echo/x",
			    {"X-Request-Timeout-Seconds": "99"})
			self.assertEqual(r.json()["deadline_ms"], 7000, r)

	@timeout(20)
	def test_client_gone_mid_response_cancels(self):
		with Daemon(one_sleep()) as d:
			self.warm(d)
			before = sleep_stats(d.port)
			s = socket.create_connection(("127.0.0.1", d.port),
			    timeout=5)
			try:
				s.sendall(b"GET /sleep?chunks=1000&ms=20 HTTP/1.1\r\n"
				    b"Host: x\r\n\r\n")
				got = b""
				while b"chunk 2\n" not in got:
					d1 = s.recv(4096)
					self.assertTrue(d1, "closed early: %r" % got)
					got += d1
				self.assertTrue(got.startswith(b"HTTP/1.1 200"), got)
				wait_replica(d, "sleep", "sleep-0",
				    lambda r: r["in_flight"] == 1, 2.0)
			finally:
				s.close()
			t0 = time.monotonic()

			def cancelled():
				st = sleep_stats(d.port)
				return st if st["cancel_frames"] == \
				    before["cancel_frames"] + 1 and \
				    st["open"] == 0 else None
			st = wait_until(cancelled, 2.0,
			    what="the replica sees CANCEL")
			self.assertLess(time.monotonic() - t0, 1.0)
			self.assertEqual(st["cancel_codes"].get(str(CODE_CANCEL)),
			    before["cancel_codes"].get(str(CODE_CANCEL), 0) + 1,
			    st)
			wait_replica(d, "sleep", "sleep-0",
			    lambda r: r["in_flight"] == 0, 2.0)
			# Far fewer than 1000 chunks were produced.
			self.assertLess(st["bytes_out"] - before["bytes_out"],
			    1000 * 8, st)


if __name__ == "__main__":
	unittest.main()
