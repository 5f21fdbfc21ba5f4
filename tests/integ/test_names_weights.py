"""Replica weights and priorities with the real daemon: dns_srv records
from dnsmasq (weights 1 and 3 share requests about 1:3; a priority-10
backup gets nothing while the priority-0 target is ready, takes over when
it is killed, and hands back when it returns), conf endpoints in their
object form (the same share; errors name file and key), and the admin
registration API (weight and priority in the body, shown on
/-/deployments, bad values refused with 400).

Requests are sent one after another, so every replica is idle when one is
picked and the pick follows the weights alone (balance.h); the bounds
below hold by several standard deviations and fail when weights are
ignored (1:1)."""

import collections
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import ROOT, Daemon, Replica, binary, free_port, request, \
    wait_until
from test_names_dns_srv import SRV, HOSTS, SrvDnsmasq, addresses, srv_conf

N = 400		# requests counted per share check


def served_by(d, path="/svc/x"):
	"""The replica id that answered one request, or None."""
	try:
		r = d.request("GET", path, timeout=5.0)
	except OSError:
		return None
	return r.json()["replica"] if r.status == 200 else None


def count(d, n, path="/svc/x"):
	seen = collections.Counter()
	for _ in range(n):
		r = d.request("GET", path, timeout=5.0)
		assert r.status == 200, r
		seen[r.json()["replica"]] += 1
	return seen


def shares(d, name="svc"):
	return sorted((x["address"], x["weight"], x["priority"]) for x in
	    d.deployments()[name]["replicas"])


class Share(unittest.TestCase):

	def assert_one_to_three(self, seen, light, heavy):
		"""light (weight 1) got about a quarter of N, heavy the rest:
		expected 100 of 400, standard deviation 8.7; 1:1 gives 200."""
		self.assertEqual(set(seen), {light, heavy}, seen)
		self.assertEqual(seen[light] + seen[heavy], N)
		self.assertGreater(seen[light], N * 0.15, seen)
		self.assertLess(seen[light], N * 0.35, seen)

	def warm(self, d, ids, path="/svc/x"):
		"""Every replica of ids has answered (its connection is ready)."""
		seen = set()
		wait_until(lambda: seen.add(served_by(d, path)) or
		    ids <= seen, 10.0, what="replicas %s ready" % sorted(ids))


@unittest.skipUnless(shutil.which("dnsmasq"), "dnsmasq is not installed "
    "(scripts/deps.sh installs dnsmasq-base)")
class SrvWeights(Share):

	def test_srv_weights_one_to_three(self):
		pa, pb = free_port(), free_port()
		a, b = "127.0.0.2:%d" % pa, "127.0.0.3:%d" % pb
		with SrvDnsmasq(HOSTS) as dns, \
		    Replica("echo", listen=a, rid="light"), \
		    Replica("echo", listen=b, rid="heavy"):
			dns.start([(SRV, "a.test", pa, 0, 1),
			    (SRV, "b.test", pb, 0, 3)])
			conf = srv_conf(dns)
			conf["workers"] = 1
			with Daemon(conf=conf) as d:
				wait_until(lambda: addresses(d) == [a, b], 5.0,
				    what="both targets")
				self.assertEqual(shares(d), [(a, 1, 0), (b, 3, 0)])
				self.warm(d, {"light", "heavy"})
				self.assert_one_to_three(count(d, N), "light",
				    "heavy")

	@harness.timeout(90)
	def test_srv_priority_backup_failover(self):
		pa, pb = free_port(), free_port()
		a, b = "127.0.0.2:%d" % pa, "127.0.0.3:%d" % pb
		with SrvDnsmasq(HOSTS) as dns, \
		    Replica("echo", listen=b, rid="backup"):
			primary = Replica("echo", listen=a, rid="primary").start()
			try:
				dns.start([(SRV, "a.test", pa, 0, 1),
				    (SRV, "b.test", pb, 10, 100)])
				with Daemon(conf=srv_conf(dns)) as d:
					wait_until(lambda: addresses(d) == [a, b],
					    5.0, what="both targets")
					self.assertEqual(shares(d), [(a, 1, 0),
					    (b, 100, 10)])
					primary = self.failover(d, primary, a)
			finally:
				primary.stop()

	def failover(self, d, primary, a):
		def only(rid):
			"""20 requests in a row served by rid: each worker's
			connections have settled."""
			return all(served_by(d) == rid for _ in range(20))

		# Until a worker's connection to the primary is ready the
		# backup may serve there (it is the best ready level then);
		# after, never.
		wait_until(lambda: only("primary"), 10.0,
		    what="the primary serving")
		self.assertEqual(count(d, 200), {"primary": 200})
		primary.stop()
		wait_until(lambda: only("backup"), 10.0,
		    what="the backup taking over")
		self.assertEqual(count(d, 100), {"backup": 100})
		# Back at the same address: it takes over again once its
		# connections are up (reconnect backoff).
		primary = Replica("echo", listen=a, rid="primary").start()
		wait_until(lambda: only("primary"), 20.0,
		    what="the primary back")
		self.assertEqual(count(d, 100), {"primary": 100})
		return primary


class ConfWeights(Share):

	def test_conf_endpoints_weights(self):
		with Replica("echo", rid="light") as lt, \
		    Replica("echo", rid="heavy") as hv:
			dead = "127.0.0.1:%d" % free_port()
			conf = {"workers": 1,
			    "routes": [{"prefix": "/svc", "deployment": "svc"}],
			    "deployments": {"svc": {"endpoints": [lt.listen,
			        {"address": hv.listen, "weight": 3},
			        {"address": dead, "priority": 1}]}}}
			with Daemon(conf=conf) as d:
				self.assertEqual(shares(d), sorted([
				    (lt.listen, 1, 0), (hv.listen, 3, 0),
				    (dead, 1, 1)]))
				self.warm(d, {"light", "heavy"})
				self.assert_one_to_three(count(d, N), "light",
				    "heavy")

	def test_conf_errors_name_file_and_key(self):
		tmp = tempfile.mkdtemp(prefix="ingressd-conf-")
		self.addCleanup(shutil.rmtree, tmp, True)
		path = os.path.join(tmp, "c.json")
		cases = [
		    ({"address": "127.0.0.1:1", "weight": 0},
		        "deployments.svc.endpoints[1].weight: must be an "
		        "integer in 1..65535"),
		    ({"address": "127.0.0.1:1", "priority": 70000},
		        "deployments.svc.endpoints[1].priority: must be an "
		        "integer in 0..65535"),
		    ({"weight": 2}, "deployments.svc.endpoints[1].address: "
		        "required key missing"),
		]
		for entry, want in cases:
			c = {"listen": ["127.0.0.1:%d" % free_port()],
			    "runtime_dir": tmp,
			    "routes": [{"prefix": "/svc", "deployment": "svc"}],
			    "deployments": {"svc": {"endpoints": [
			        "127.0.0.1:2", entry]}}}
			with open(path, "w") as f:
				json.dump(c, f, indent=2)
			p = subprocess.run([binary("ingressd"), "-t", "-c", path],
			    cwd=ROOT, stdin=subprocess.DEVNULL,
			    capture_output=True, timeout=5)
			err = p.stderr.decode(errors="replace")
			self.assertEqual(p.returncode, 1, err)
			self.assertIn(path + ": " + want, err)


def put(port, rid, body):
	if not isinstance(body, bytes):
		body = json.dumps(body).encode()
	return request(port, "PUT", "/-/deployments/m/replicas/%s" % rid,
	    body=body, timeout=5.0)


class RegisterWeights(Share):

	def test_admin_weight_priority(self):
		conf = {"workers": 1, "deployments": {}, "routes": [
		    {"prefix": "/models/", "deployment_from": "path"}]}
		with Replica("echo", rid="light") as lt, \
		    Replica("echo", rid="heavy") as hv, \
		    Daemon(conf=conf) as d:
			a = d.admin_port
			r = put(a, "light", {"address": lt.listen})
			self.assertEqual(r.status, 200, r)
			self.assertEqual((r.json()["weight"],
			    r.json()["priority"]), (1, 0))
			r = put(a, "heavy", {"address": hv.listen, "weight": 3})
			self.assertEqual((r.status, r.json()["weight"]), (200, 3))
			# A backup that is never ready changes nothing.
			r = put(a, "spare", {"address": "127.0.0.1:%d" %
			    free_port(), "priority": 5})
			self.assertEqual((r.status, r.json()["priority"]),
			    (200, 5))
			self.assertEqual(sorted((x["id"], x["weight"],
			    x["priority"]) for x in
			    d.deployments()["m"]["replicas"]),
			    [("heavy", 3, 0), ("light", 1, 0), ("spare", 1, 5)])
			self.warm(d, {"light", "heavy"}, "/models/m/x")
			self.assert_one_to_three(count(d, N, "/models/m/x"),
			    "light", "heavy")

			version = d.deployments()["m"]["version"]
			bad = [
			    (b'{"address": "127.0.0.1:1", "weight": 0}',
			        "body: weight: must be an integer in 1..65535"),
			    (b'{"address": "127.0.0.1:1", "weight": 65536}',
			        "body: weight: must be an integer in 1..65535"),
			    (b'{"address": "127.0.0.1:1", "weight": "3"}',
			        "body: weight: must be an integer in 1..65535"),
			    (b'{"address": "127.0.0.1:1", "weight": 1.5}',
			        "body: weight: must be an integer in 1..65535"),
			    (b'{"address": "127.0.0.1:1", "priority": -1}',
			        "body: priority: must be an integer in 0..65535"),
			    (b'{"address": "127.0.0.1:1", "priority": 65536}',
			        "body: priority: must be an integer in 0..65535"),
			    (b'{"address": "127.0.0.1:1", "priority": null}',
			        "body: priority: must be an integer in 0..65535"),
			]
			for body, text in bad:
				r = put(a, "x", body)
				self.assertEqual(r.status, 400, (body, r))
				self.assertIn(text, r.json()["error"], body)
			# A changed weight is a change; nothing refused was.
			self.assertEqual(d.deployments()["m"]["version"], version)
			r = put(a, "heavy", {"address": hv.listen, "weight": 4})
			self.assertEqual((r.status, r.json()["changed"]),
			    (200, True))
			self.assertIn(("heavy", 4, 0), [(x["id"], x["weight"],
			    x["priority"]) for x in
			    d.deployments()["m"]["replicas"]])


if __name__ == "__main__":
	unittest.main()
