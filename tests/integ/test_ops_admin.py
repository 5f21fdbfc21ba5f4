"""The admin endpoints."""

import unittest

from harness import Daemon, binary, request


class Admin(unittest.TestCase):

	def test_healthz_on_both_ports(self):
		with Daemon() as d:
			self.assertEqual(d.admin_get("/-/healthz").status, 200)
			r = d.request("GET", "/-/healthz")
			self.assertEqual(r.status, 200, r)

	def test_routes_listed(self):
		with Daemon() as d:
			r = d.admin_get("/-/routes")
			self.assertEqual(r.status, 200, r)
			self.assertIn("json", r.header("content-type", ""))
			routes = r.json()
			self.assertIsInstance(routes, list)
			got = [(x["prefix"], x["deployment"]) for x in routes]
			want = [(x["prefix"], x["deployment"])
			    for x in d.conf["routes"]]
			self.assertEqual(sorted(got), sorted(want))

	def test_deployments_keys_match_conf(self):
		over = {
			"admin_on_public": True,
			"routes": [{"prefix": "/echo", "deployment": "echo"},
			    {"prefix": "/e2", "deployment": "echo2"}],
			"deployments": {"hello": None, "sleep": None,
			    "echo2": {"spawn": {"command": [
			    binary("replica-echo")], "replicas": 1}}},
		}
		with Daemon(over) as d:
			for port in (d.admin_port, d.port):
				deps = d.deployments(port)
				self.assertEqual(set(deps), {"echo", "echo2"})
				for name, dep in deps.items():
					self.assertIn(dep["state"], ("idle",
					    "resolving", "warming", "ready",
					    "failed"), dep)
					self.assertIsInstance(dep["resolutions"],
					    int)
			r = d.request("GET", "/e2/x")
			self.assertEqual(r.status, 200, r)
			j = r.json()
			self.assertEqual(j["deployment"], "echo2")
			self.assertEqual(j["replica"], "echo2-0")
			e2 = d.deployments()["echo2"]
			self.assertEqual(len(e2["replicas"]), 1, e2)
			rep = e2["replicas"][0]
			self.assertEqual(rep["id"], "echo2-0")
			self.assertTrue(rep["address"].startswith("unix:" +
			    d.runtime_dir), rep)
			self.assertGreater(rep["pid"], 0)
			self.assertEqual(rep["restarts"], 0)
			self.assertEqual(rep["requests"], 1)

	def test_unknown_path_under_dash_main_port_404(self):
		with Daemon() as d:
			r = d.request("GET", "/-/nonexistent")
			self.assertEqual(r.status, 404, r)

	def test_admin_unknown_path_404(self):
		with Daemon() as d:
			r = request(d.admin_port, "GET", "/-/nope")
			self.assertEqual(r.status, 404, r)


if __name__ == "__main__":
	unittest.main()
