"""SIGTERM/SIGINT: exit 0, replicas gone, sockets removed."""

import signal
import time
import unittest

from harness import Daemon, pid_alive, sockets_under


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

	def test_stop_before_any_request(self):
		with Daemon() as d:
			t0 = time.monotonic()
			d.stop()
			self.assertLess(time.monotonic() - t0, 5.0)


if __name__ == "__main__":
	unittest.main()
