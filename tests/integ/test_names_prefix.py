"""Routing: longest prefix, host, strip_prefix, endpoints deployments."""

import os
import shutil
import tempfile
import unittest

from harness import Daemon, Replica, free_port


class Routes(unittest.TestCase):

	def test_longest_prefix_wins(self):
		over = {"routes": [
			{"prefix": "/echo", "deployment": "echo"},
			{"prefix": "/echo/deep", "deployment": "hello"},
		]}
		with Daemon(over) as d:
			with d.conn() as c:
				r = c.request("GET", "/echo/deep/x")
				self.assertEqual(r.body, b"Hello world!")
				r = c.request("GET", "/echo/deep")
				self.assertEqual(r.body, b"Hello world!")
				r = c.request("GET", "/echo/deepx")
				self.assertEqual(r.json()["path"], "/echo/deepx")
				r = c.request("GET", "/echo/other")
				self.assertEqual(r.json()["path"], "/echo/other")

	def test_host_route(self):
		over = {"routes": [
			{"prefix": "/", "deployment": "hello",
			    "host": "hello.test"},
			{"prefix": "/", "deployment": "echo"},
		]}
		with Daemon(over) as d:
			with d.conn() as c:
				r = c.request("GET", "/x", host="hello.test")
				self.assertEqual(r.body, b"Hello world!")
				r = c.request("GET", "/x", host="other.test")
				self.assertEqual(r.json()["path"], "/x")

	def test_strip_prefix(self):
		over = {"routes": [
			{"prefix": "/api", "deployment": "echo",
			    "strip_prefix": True},
		]}
		with Daemon(over) as d:
			r = d.request("GET", "/api/v1/items?x=1")
			self.assertEqual(r.status, 200, r)
			j = r.json()
			self.assertEqual(j["path"], "/v1/items")
			self.assertEqual(j["query"], "x=1")

	def _endpoints(self, listens):
		reps = [Replica("echo", listen=l, rid="hand-%d" % i)
		    for i, l in enumerate(listens)]
		try:
			for rp in reps:
				rp.start()
			over = {
				"routes": [{"prefix": "/ext",
				    "deployment": "ext"}],
				"deployments": {"echo": None, "hello": None,
				    "sleep": None, "ext": {"endpoints":
				    [rp.listen for rp in reps]}},
			}
			with Daemon(over) as d:
				seen = {}
				with d.conn() as c:
					for i in range(100):
						r = c.request("GET", "/ext/%d"
						    % i)
						self.assertEqual(r.status, 200,
						    r)
						j = r.json()
						seen[j["replica"]] = seen.get(
						    j["replica"], 0) + 1
				self.assertEqual(set(seen), {rp.rid
				    for rp in reps}, seen)
				ext = d.deployments()["ext"]
				self.assertEqual(sorted(r["address"] for r in
				    ext["replicas"]), sorted(listens))
				for r in ext["replicas"]:
					self.assertNotIn("pid", r)
			# Not ours: ingressd leaves them running.
			for rp in reps:
				self.assertIsNone(rp.proc.poll())
		finally:
			for rp in reps:
				rp.stop()

	def test_endpoints_tcp(self):
		self._endpoints(["127.0.0.1:%d" % free_port(),
		    "127.0.0.1:%d" % free_port()])

	def test_endpoints_unix(self):
		d = tempfile.mkdtemp(prefix="ingressd-ep-")
		try:
			self._endpoints(["unix:" + os.path.join(d, "a.sock")])
		finally:
			shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
	unittest.main()
