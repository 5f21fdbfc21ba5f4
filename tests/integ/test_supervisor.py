"""Spawned replicas are supervised: a killed one is restarted."""

import os
import signal
import threading
import time
import unittest

from harness import Daemon, wait_pid_dead, wait_until


class Supervisor(unittest.TestCase):

	def test_killed_replica_restarted(self):
		with Daemon() as d:
			with d.conn() as c:
				for i in range(10):
					r = c.request("GET", "/echo/warm/%d" % i)
					self.assertEqual(r.status, 200, r)
			pids = d.replica_pids("echo")
			self.assertEqual(set(pids), {"echo-0", "echo-1"}, pids)
			victim, old = "echo-0", pids["echo-0"]
			os.kill(old, signal.SIGKILL)
			self.assertTrue(wait_pid_dead(old, 2.0))
			# Let the daemon see the EOF; nothing in flight now.
			time.sleep(0.1)
			t_kill = time.monotonic()

			# New requests keep succeeding, without retries.
			with d.conn() as c:
				for i in range(50):
					r = c.request("GET", "/echo/after/%d" % i)
					self.assertEqual(r.status, 200,
					    "request %d after the kill: %r" %
					    (i, r))

			def restarted():
				dep = d.deployments()["echo"]
				for r in dep["replicas"]:
					if r["id"] == victim and r.get("pid") and \
					    r["pid"] != old and \
					    r.get("restarts", 0) >= 1 and \
					    r["state"] == "ready":
						return r
				return None
			rep = wait_until(restarted, 5.0 - (time.monotonic() -
			    t_kill), what="%s restarted and ready" % victim)
			self.assertTrue(os.path.exists("/proc/%d" % rep["pid"]))
			# And it serves again.
			seen = set()
			with d.conn() as c:
				for i in range(200):
					r = c.request("GET", "/echo/back/%d" % i)
					self.assertEqual(r.status, 200, r)
					seen.add(r.json()["replica"])
					if victim in seen:
						break
			self.assertIn(victim, seen)

	def test_502_when_replica_dies_mid_request(self):
		over = {"deployments": {"sleep": {"spawn": {"replicas": 1}}}}
		with Daemon(over) as d:
			r = d.request("GET", "/sleep?ms=1")
			self.assertEqual(r.status, 200, r)
			pid = d.replica_pids("sleep")["sleep-0"]
			out = {}

			def slow():
				try:
					out["r"] = d.request("GET", "/sleep?ms=3000",
					    timeout=10)
				except Exception as e:	# checked below
					out["e"] = e
			t = threading.Thread(target=slow, daemon=True)
			t.start()
			# Wait until the request is at the replica.
			wait_until(lambda: d.deployments()["sleep"]["replicas"]
			    [0]["in_flight"] == 1, 2.0,
			    what="sleep request in flight")
			os.kill(pid, signal.SIGKILL)
			t.join(8)
			self.assertFalse(t.is_alive())
			self.assertNotIn("e", out)
			self.assertEqual(out["r"].status, 502, out["r"])
			# It comes back.
			def back():
				r = d.request("GET", "/sleep?ms=1", timeout=5)
				return r.status == 200
			wait_until(back, 5.0, interval=0.2,
			    what="sleep answering again")


if __name__ == "__main__":
	unittest.main()
