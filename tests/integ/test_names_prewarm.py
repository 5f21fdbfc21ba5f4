"""prewarm: a deployment is resolved and warmed at start."""

import unittest

from harness import Daemon, Replica, wait_until


class Prewarm(unittest.TestCase):

	def test_prewarm_ready_without_request(self):
		over = {"deployments": {"echo": {"prewarm": True}}}
		with Daemon(over) as d:
			echo = wait_until(lambda: (lambda e: e if e["state"] ==
			    "ready" else None)(d.deployments()["echo"]),
			    5.0, what="echo ready by prewarm")
			self.assertEqual(echo["resolutions"], 1, echo)
			self.assertTrue(any(r["state"] == "ready"
			    for r in echo["replicas"]), echo)
			deps = d.deployments()
			self.assertEqual(deps["hello"]["state"], "idle", deps)
			# The first request goes to an already warm connection.
			r = d.request("GET", "/echo/first")
			self.assertEqual(r.status, 200, r)
			self.assertGreaterEqual(r.json()["conn_pings"], 1)
			self.assertEqual(d.deployments()["echo"]["resolutions"],
			    1)

	def test_prewarm_endpoints_deployment(self):
		# An endpoints deployment pointing at the daemon's own spawned
		# echo is not possible; use a hand-run replica instead.
		with Replica("echo", rid="hand-1") as rep:
			over = {
				"routes": [{"prefix": "/ext",
				    "deployment": "ext"}],
				"deployments": {"echo": None, "hello": None,
				    "sleep": None,
				    "ext": {"endpoints": [rep.listen],
				    "prewarm": True}},
			}
			with Daemon(over) as d:
				ext = wait_until(lambda: (lambda e: e if
				    e["state"] == "ready" else None)(
				    d.deployments()["ext"]), 5.0,
				    what="ext ready by prewarm")
				self.assertEqual(ext["replicas"][0]["address"],
				    rep.listen)
				r = d.request("GET", "/ext/x")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["replica"], "hand-1")


if __name__ == "__main__":
	unittest.main()
