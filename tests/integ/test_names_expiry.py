"""Handles idle longer than handle_idle_ttl are freed (counted as
evictions), their replica connection closes when no handle uses it, and
the name comes back through the first-use path; a handle with a request
in flight is never freed."""

import json
import time
import unittest

from harness import Daemon, Replica, metric, request, scrape, wait_until
from harness import deployment as dep

MODELS = {"prefix": "/models/", "deployment_from": "path"}


def put(d, name, rid, address):
	r = request(d.admin_port, "PUT", "/-/deployments/%s/replicas/%s" %
	    (name, rid), body=json.dumps({"address": address}).encode())
	if r.status != 200:
		raise AssertionError("PUT: %d %r" % (r.status, r.body))


class Expiry(unittest.TestCase):

	def test_idle_handles_expire_and_come_back(self):
		conf = {"handle_idle_ttl": 1, "routes": [MODELS,
		    {"prefix": "/echo", "deployment": "echo"}],
		    "deployments": {"echo": {"endpoints": ["127.0.0.1:1"],
		    "prewarm": True}}}
		with Replica("echo", rid="r1") as rep:
			with Daemon(conf=conf) as d:
				for name in ("a", "b"):
					put(d, name, "r1", rep.listen)
					r = d.request("GET", "/models/%s/x" % name)
					self.assertEqual(r.status, 200, r)
				a = dep(d, "a")
				self.assertEqual((a["state"], a["resolutions"],
				    a["evictions"]), ("ready", 1, 0), a)
				# b stays busy; a idles past the TTL and goes.
				deadline = time.monotonic() + 1.8
				while time.monotonic() < deadline:
					self.assertEqual(d.request("GET",
					    "/models/b/x").status, 200)
					time.sleep(0.1)
				a = wait_until(lambda: (lambda x: x if
				    x["evictions"] == 1 else None)(dep(d, "a")),
				    2.0, what="a evicted")
				self.assertEqual(a["state"], "idle", a)
				self.assertEqual(a["handles"]["ready"], 0, a)
				self.assertEqual(dep(d, "b")["evictions"], 0)
				# The connection is b's too: it stays.
				self.assertEqual(a["replicas"][0]["state"], "ready")
				# b goes too once idle; then nobody uses r1: its
				# connection closes.
				b = wait_until(lambda: (lambda x: x if
				    x["evictions"] == 1 else None)(dep(d, "b")),
				    3.0, what="b evicted")
				wait_until(lambda: dep(d, "a")["replicas"][0][
				    "state"] == "idle", 2.0,
				    what="r1's connection released")
				samples = scrape(d.admin_port)
				self.assertGreaterEqual(metric(samples,
				    "ingressd_handle_evictions_total"), 2)
				self.assertEqual(metric(samples,
				    "ingressd_deployment_resolutions_total",
				    deployment="a"), 1)
				# Prewarmed handles never expire.
				self.assertEqual(dep(d, "echo")["evictions"], 0)
				# First use again: resolved (and connected) anew.
				r = d.request("GET", "/models/a/again")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["deployment"], "a")
				a = dep(d, "a")
				self.assertEqual((a["state"], a["resolutions"]),
				    ("ready", 2), a)

	def test_handle_in_use_is_kept(self):
		"""A request in flight longer than the TTL holds its handle:
		it finishes, and only then may the handle go."""
		with Replica("sleep", rid="s1") as rep:
			with Daemon(conf={"handle_idle_ttl": 0.5,
			    "routes": [MODELS], "deployments": {}}) as d:
				put(d, "slow", "s1", rep.listen)
				t0 = time.monotonic()
				r = d.request("GET", "/models/slow/x?ms=1800")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"slept 1800 ms\n")
				self.assertGreaterEqual(time.monotonic() - t0, 1.7)
				s = dep(d, "slow")
				self.assertEqual((s["evictions"], s["resolutions"]),
				    (0, 1), s)
				wait_until(lambda: dep(d, "slow")["evictions"] == 1,
				    2.0, what="evicted once idle")


if __name__ == "__main__":
	unittest.main()
