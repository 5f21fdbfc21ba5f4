"""SIGTERM/SIGINT: exit 0, replicas gone, sockets removed."""

import signal
import threading
import time
import unittest

from harness import Daemon, pid_alive, sockets_under, wait_until


class Stop(unittest.TestCase):

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

	def test_sigterm_with_idle_client_connection(self):
		with Daemon() as d:
			with d.conn() as c:
				r = c.request("GET", "/echo/idle")
				self.assertEqual(r.status, 200, r)
				# The keep-alive connection stays open, idle.
				status = d.stop()
				self.assertEqual(status, 0)
				self.assertLess(d.stop_elapsed, 5.0)
				self.assertTrue(c.wait_closed(1.0))

	def test_sigterm_lets_in_flight_request_finish(self):
		# drain is 2 s in the harness conf: a 600 ms request that is
		# running at SIGTERM completes, then the daemon exits 0.
		with Daemon() as d:
			r = d.request("GET", "/sleep?ms=1")
			self.assertEqual(r.status, 200, r)
			out = {}

			def slow():
				try:
					out["r"] = d.request("GET", "/sleep?ms=600",
					    timeout=10)
				except Exception as e:	# checked below
					out["e"] = e
			t = threading.Thread(target=slow, daemon=True)
			t.start()
			wait_until(lambda: sum(r["in_flight"] for r in
			    d.deployments()["sleep"]["replicas"]) == 1, 2.0,
			    what="request in flight")
			d.stop()
			t.join(5)
			self.assertLess(d.stop_elapsed, 5.0)
			self.assertNotIn("e", out)
			self.assertEqual(out["r"].status, 200, out["r"])
			self.assertEqual(out["r"].body, b"slept 600 ms\n")

	def test_stop_before_any_request(self):
		with Daemon() as d:
			t0 = time.monotonic()
			d.stop()
			self.assertLess(time.monotonic() - t0, 5.0)


if __name__ == "__main__":
	unittest.main()
