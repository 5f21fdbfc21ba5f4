"""Graceful stop on SIGTERM: no new connections, in-flight requests finish
(up to timeouts.drain), then replicas stop and ingressd exits 0.  SIGTERM
and SIGINT alike: exit 0, replicas gone, sockets removed."""

import signal
import socket
import threading
import time
import unittest

from harness import Daemon, pid_alive, sockets_under, timeout, wait_until


def in_flight(d, name="sleep"):
	return sum(r["in_flight"] for r in d.deployments()[name]["replicas"])


class GracefulStop(unittest.TestCase):

	def _slow(self, d, ms, out):
		def run():
			try:
				out["r"] = d.request("GET", "/sleep?ms=%d" % ms,
				    timeout=10)
			except Exception as e:	# checked by the test
				out["e"] = e
		t = threading.Thread(target=run, daemon=True)
		t.start()
		wait_until(lambda: in_flight(d) == 1, 2.0,
		    what="request in flight")
		return t

	@timeout(15)
	def test_slow_request_completes(self):
		with Daemon() as d:
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    200)
			pids = d.replica_pids()
			out = {}
			t = self._slow(d, 1500, out)
			t0 = time.monotonic()
			d.send_signal(signal.SIGTERM)
			# Listeners close at once: a new client is refused
			# while the slow request still runs.
			def refused():
				try:
					s = socket.create_connection(("127.0.0.1",
					    d.port), timeout=0.5)
				except ConnectionRefusedError:
					return True
				s.close()
				return False
			wait_until(refused, 1.0, what="connections refused")
			self.assertIsNone(d.proc.poll())
			t.join(5)
			self.assertNotIn("e", out)
			self.assertEqual(out["r"].status, 200, out["r"])
			self.assertEqual(out["r"].body, b"slept 1500 ms\n")
			d.proc.wait(timeout=5)
			elapsed = time.monotonic() - t0
			self.assertEqual(d.proc.returncode, 0)
			# Exited once the request was done, well before the
			# 2 s drain deadline plus replica stop.
			self.assertLess(elapsed, 3.5)
			self.assertIn("drained: no request in flight",
			    d.log_text())
			d.seen_pids.update(pids.values())
			self.assertEqual(d.stop(), 0)

	@timeout(15)
	def test_drain_deadline_cuts_request(self):
		with Daemon({"timeouts": {"drain": 0.5}}) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    200)
			out = {}
			t = self._slow(d, 5000, out)
			t0 = time.monotonic()
			d.send_signal(signal.SIGTERM)
			d.proc.wait(timeout=5)
			elapsed = time.monotonic() - t0
			t.join(5)
			self.assertEqual(d.proc.returncode, 0)
			self.assertGreater(elapsed, 0.45)
			self.assertLess(elapsed, 3.5)
			# The client saw the connection end, not a response.
			self.assertIn("e", out)
			self.assertIn("drain timeout (0.5s): closing 1 busy "
			    "connection(s)", d.log_text())
			self.assertEqual(d.stop(), 0)

	@timeout(15)
	def test_second_signal_stops_at_once(self):
		with Daemon({"timeouts": {"drain": 30}}) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    200)
			out = {}
			t = self._slow(d, 8000, out)
			d.send_signal(signal.SIGTERM)
			time.sleep(0.2)
			self.assertIsNone(d.proc.poll())
			t0 = time.monotonic()
			d.send_signal(signal.SIGINT)
			d.proc.wait(timeout=5)
			self.assertLess(time.monotonic() - t0, 3.0)
			t.join(5)
			self.assertEqual(d.proc.returncode, 0)
			self.assertIn("again: stopping now", d.log_text())
			self.assertEqual(d.stop(), 0)

	@timeout(15)
	def test_streamed_response_completes(self):
		# A response still streaming at SIGTERM is delivered whole,
		# its last bytes flushed before ingressd exits.
		with Daemon() as d:
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    200)
			with d.conn() as c:
				c.send(b"GET /sleep?chunks=8&ms=80 HTTP/1.1\r\n"
				    b"Host: x\r\n\r\n")
				wait_until(lambda: in_flight(d) == 1, 2.0,
				    what="request in flight")
				d.send_signal(signal.SIGTERM)
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"".join(b"chunk %d\n" % i
				    for i in range(1, 9)))
			d.proc.wait(timeout=5)
			self.assertEqual(d.stop(), 0)

	def test_idle_keepalive_closed_at_once(self):
		with Daemon() as d:
			with d.conn() as c:
				self.assertEqual(c.request("GET", "/hello").status,
				    200)
				t0 = time.monotonic()
				d.send_signal(signal.SIGTERM)
				self.assertTrue(c.wait_closed(1.0))
				d.proc.wait(timeout=5)
				self.assertLess(time.monotonic() - t0, 3.0)
				self.assertEqual(d.proc.returncode, 0)
			self.assertEqual(d.stop(), 0)

	def test_busy_keepalive_gets_connection_close(self):
		# A keep-alive connection with a request running at SIGTERM
		# gets its response with "Connection: close", then EOF.
		with Daemon() as d:
			with d.conn() as c:
				self.assertEqual(c.request("GET",
				    "/sleep?ms=1").status, 200)
				c.send(b"GET /sleep?ms=600 HTTP/1.1\r\n"
				    b"Host: x\r\n\r\n")
				wait_until(lambda: in_flight(d) == 1, 2.0,
				    what="request in flight")
				d.send_signal(signal.SIGTERM)
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.header("connection"), "close")
				self.assertTrue(c.wait_closed(1.0))
			d.proc.wait(timeout=5)
			self.assertEqual(d.stop(), 0)



class SignalStop(unittest.TestCase):


	def _stop_and_check(self, d, sig):
		# Every deployment used, so every replica is known and warm.
		for path in ("/echo/x", "/hello", "/sleep?ms=1"):
			r = d.request("GET", path)
			self.assertEqual(r.status, 200, "%s: %r" % (path, r))
		pids = d.replica_pids()
		self.assertEqual(len(pids), 6, pids)
		for pid in pids.values():
			self.assertTrue(pid_alive(pid))
		self.assertTrue(sockets_under(d.runtime_dir),
		    "spawned replicas have no sockets in runtime_dir")
		# stop() asserts exit status 0, every replica gone (1 s of
		# grace) and no socket left in runtime_dir.
		status = d.stop(sig=sig)
		self.assertEqual(status, 0)
		self.assertLess(d.stop_elapsed, 5.0)

	def test_sigterm(self):
		with Daemon() as d:
			self._stop_and_check(d, signal.SIGTERM)

	def test_sigint(self):
		with Daemon() as d:
			self._stop_and_check(d, signal.SIGINT)

	def test_stop_before_any_request(self):
		with Daemon() as d:
			t0 = time.monotonic()
			d.stop()
			self.assertLess(time.monotonic() - t0, 5.0)


if __name__ == "__main__":
	unittest.main()
