"""Registration through the admin API: validation, one resolution per
worker, changes pushed once per worker, replicas added and removed under
load without a failed request."""

import json
import time
import unittest

from harness import Conn, Daemon, LoadLoop, Replica, request, \
    tcp_conns_to, wait_until
from harness import deployment as dep

MODELS = {"prefix": "/models/", "deployment_from": "path"}


def names_conf(**extra):
	c = {"routes": [MODELS], "deployments": {}}
	c.update(extra)
	return c


def put(port, name, rid, body):
	if not isinstance(body, bytes):
		body = json.dumps(body).encode()
	return request(port, "PUT", "/-/deployments/%s/replicas/%s" % (name,
	    rid), body=body, timeout=5.0)


def delete(port, name, rid):
	return request(port, "DELETE", "/-/deployments/%s/replicas/%s" %
	    (name, rid), timeout=5.0)


def replica(d, name, rid):
	for r in dep(d, name)["replicas"]:
		if r["id"] == rid:
			return r
	return None


class Register(unittest.TestCase):

	def test_admin_api(self):
		conf = names_conf(deployments={"fixed": {"endpoints":
		    ["127.0.0.1:1"]}})
		with Replica("echo", rid="r1") as rep:
			with Daemon(conf=conf) as d:
				a = d.admin_port
				r = put(a, "m", "r1", {"address": rep.listen,
				    "max_ongoing_requests": 5})
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json(), {"deployment": "m",
				    "replica": "r1", "address": rep.listen,
				    "max_ongoing_requests": 5, "version": 1,
				    "changed": True, "protocol": "wire",
				    "weight": 1, "priority": 0})
				r = put(a, "m", "r1", {"address": rep.listen,
				    "max_ongoing_requests": 5})
				self.assertEqual((r.status, r.json()["changed"],
				    r.json()["version"]), (200, False, 1))
				m = dep(d, "m")
				self.assertEqual(m["source"], "register")
				self.assertEqual([(x["id"], x["address"]) for x in
				    m["replicas"]], [("r1", rep.listen)])
				self.assertIn("m", d.deployments())

				bad = [
				    (b"{", 400, "body: "),
				    (b"[]", 400, "must be a JSON object"),
				    (b"{}", 400, "address: required key missing"),
				    (b'{"address": 1}', 400, "must be a string"),
				    (b'{"address": "127.0.0.1:1", "x": 1}', 400,
				     "x: unknown key"),
				    (b'{"address": "127.0.0.1:1", '
				     b'"max_ongoing_requests": 0}', 400,
				     "1..100000"),
				    (b'{"address": "localhost:1"}', 400,
				     "must be IP:PORT"),
				    (b'{"address": "127.0.0.1"}', 400,
				     "must be IP:PORT"),
				    (b'{"address": "127.0.0.1:70000"}', 400,
				     "port out of range"),
				]
				for body, status, text in bad:
					r = put(a, "m", "r2", body)
					self.assertEqual(r.status, status, (body, r))
					self.assertIn(text, r.json()["error"], body)
				r = put(a, "a%20b", "r2", {"address": "127.0.0.1:1"})
				self.assertEqual(r.status, 400, r)
				r = put(a, "fixed", "r2", {"address": "127.0.0.1:1"})
				self.assertEqual(r.status, 409, r)
				self.assertIn("defined in the configuration",
				    r.json()["error"])
				# Registration is never served on the public port
				# (where /-/ holds only the probes by default).
				r = put(d.port, "m", "r2", {"address": rep.listen})
				self.assertEqual(r.status, 404, r)
				r = delete(d.port, "m", "r1")
				self.assertEqual(r.status, 404, r)
				r = request(a, "GET", "/-/deployments/m/replicas/r1")
				self.assertEqual(r.status, 405, r)
				r = request(a, "PUT", "/-/deployments/m/replicas/r1",
				    body=b"x" * (64 * 1024 + 1))
				self.assertEqual(r.status, 413, r)
				self.assertEqual(delete(a, "m", "zz").status, 404)
				self.assertEqual(delete(a, "nope", "r1").status, 404)
				self.assertEqual(d.admin_get(
				    "/-/deployments/nope").status, 404)
				# Nothing refused changed anything.
				self.assertEqual(dep(d, "m")["version"], 1)
				self.assertEqual(d.request("GET",
				    "/models/m/x").status, 200)

				r = delete(a, "m", "r1")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json(), {"deployment": "m",
				    "replica": "r1", "version": 2,
				    "removed": True})
				self.assertNotIn("m", d.deployments())
				wait_until(lambda: d.request("GET",
				    "/models/m/x").status == 404, 2.0,
				    what="m unknown after its last replica went")

	def test_resolved_once_per_worker_and_pushed_once(self):
		with Replica("echo", rid="r1") as r1, \
		    Replica("echo", rid="r2") as r2:
			with Daemon(conf=names_conf(workers=2)) as d:
				self.assertEqual(put(d.admin_port, "m", "r1",
				    {"address": r1.listen}).status, 200)
				for _ in range(3):
					for _ in range(100):
						with d.conn() as c:
							for _ in range(3):
								r = c.request("GET",
								    "/models/m/x")
								self.assertEqual(
								    r.status, 200, r)
					m = dep(d, "m")
					held = m["handles"]["ready"]
					# However many requests: one resolution
					# per worker that holds the name.
					self.assertIn(held, (1, 2), m)
					self.assertEqual(m["resolutions"], held, m)
				# A change reaches each holder once: one more
				# resolution per handle, none for the others.
				self.assertEqual(put(d.admin_port, "m", "r2",
				    {"address": r2.listen}).status, 200)
				wait_until(lambda: dep(d, "m")["resolutions"] ==
				    2 * held, 3.0, what="one refresh per worker")
				time.sleep(0.3)
				self.assertEqual(dep(d, "m")["resolutions"], 2 * held)
				self.assertEqual(dep(d, "m")["version"], 2)
				# The new replica is warmed before it is used.
				wait_until(lambda: replica(d, "m", "r2")["state"] ==
				    "ready", 3.0, what="r2 ready")
				seen = set()
				for _ in range(40):
					r = d.request("GET", "/models/m/y")
					self.assertEqual(r.status, 200, r)
					j = r.json()
					self.assertGreaterEqual(j["conn_pings"], 1, j)
					seen.add(j["replica"])
				self.assertEqual(seen, {"r1", "r2"})

	def test_add_and_remove_under_load(self):
		# Slow answers (20 ms), so removals catch requests in flight.
		with Replica("sleep", rid="r1") as r1, \
		    Replica("sleep", rid="r2") as r2, \
		    Replica("sleep", rid="r3") as r3:
			with Daemon(conf=names_conf(workers=2)) as d:
				a = d.admin_port
				for rep in (r1, r2):
					self.assertEqual(put(a, "m", rep.rid,
					    {"address": rep.listen}).status, 200)
				load = LoadLoop(d.port, ["/models/m/%d?ms=20" % i
				    for i in range(8)], threads=8).start()
				try:
					wait_until(lambda: load.count > 100, 10,
					    what="load running")
					# Added while traffic flows: warmed, then used.
					self.assertEqual(put(a, "m", "r3",
					    {"address": r3.listen}).status, 200)
					wait_until(lambda: (replica(d, "m", "r3") or
					    {}).get("requests", 0) > 30, 10,
					    what="r3 taking traffic")
					# Removed while traffic flows: drains.
					self.assertEqual(delete(a, "m", "r1").status,
					    200)
					wait_until(lambda: replica(d, "m", "r1") is
					    None, 2.0, what="r1 gone")
					before = load.count
					wait_until(lambda: load.count > before + 100,
					    10, what="load after the removal")
					self.assertEqual(delete(a, "m", "r2").status,
					    200)
					before = load.count
					wait_until(lambda: load.count > before + 100,
					    10, what="load on r3 alone")
				finally:
					failures = load.stop()
				self.assertEqual(failures, [])
				# Only r3 serves now; r1's and r2's connections,
				# used by no name, were closed.
				seen = {d.request("GET", "/models/m/stats").json()[
				    "replica"] for _ in range(20)}
				self.assertEqual(seen, {"r3"})
				for rep in (r1, r2):
					port = int(rep.listen.rsplit(":", 1)[1])
					wait_until(lambda: tcp_conns_to(port) == 0,
					    3.0, what="%s's connections closed" %
					    rep.rid)
				self.assertEqual(tcp_conns_to(int(r3.listen.rsplit(
				    ":", 1)[1])), 2)

	def test_many_names_one_replica_process(self):
		"""A replica that hosts many models: the name travels in the
		REQUEST; names share its connection."""
		with Replica("echo", rid="multi") as rep:
			with Daemon(conf=names_conf()) as d:
				with Conn(d.admin_port) as c:
					for i in range(50):
						r = c.request("PUT",
						    "/-/deployments/n%d/replicas/x" % i,
						    body=json.dumps({"address":
						    rep.listen}).encode())
						self.assertEqual(r.status, 200, r)
				for i in range(50):
					j = d.request("GET", "/models/n%d/q" %
					    i).json()
					self.assertEqual((j["deployment"],
					    j["replica"]), ("n%d" % i, "multi"))
				# One connection for all 50: every name's replica
				# entry counts the pings of the same connection.
				pings = {json.dumps([r["pings"] for r in dep(d,
				    "n%d" % i)["replicas"]]) for i in (0, 49)}
				self.assertEqual(len(pings), 1, pings)


if __name__ == "__main__":
	unittest.main()
