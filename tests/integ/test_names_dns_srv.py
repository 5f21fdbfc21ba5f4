"""dns_srv deployments against a real DNS server on loopback (dnsmasq from
Debian, on a high port, with --srv-host records and a hosts file for the
targets): both targets of an SRV name serve, a worse priority's target is
resolved and shown but serves nothing (weights and failover:
test_names_weights.py); a record change (dnsmasq
restarted with other records) is followed within resolver.srv_interval
without a failed request; NXDOMAIN leaves the deployment without replicas
(503 with the reason) and is logged; bad values are conf errors."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import harness
from harness import (ROOT, Daemon, LoadLoop, Replica, binary, free_port,
    wait_until)

INTERVAL = 1		# resolver.srv_interval in these tests
SRV = "_svc._tcp.svc.test"


class SrvDnsmasq:
	"""dnsmasq on 127.0.0.1:port answering for *.test only: SRV records
	from its command line, target addresses from a hosts file.  restart()
	runs it again on the same port with other SRV records (dnsmasq reads
	--srv-host only at start)."""

	def __init__(self, hosts):
		self.dir = tempfile.mkdtemp(prefix="ingressd-srv-")
		self.hosts = os.path.join(self.dir, "hosts")
		with open(self.hosts, "w") as f:
			for addr, name in hosts:
				f.write("%s %s\n" % (addr, name))
		self.port = free_port()
		self.proc = None
		self.logfile = None

	def start(self, srv):
		"""srv: [(name, target, port, priority, weight)]."""
		self.log = harness.log_path("dnsmasq")
		self.logfile = open(self.log, "wb")
		args = ["dnsmasq", "--keep-in-foreground",
		    "--port=%d" % self.port, "--listen-address=127.0.0.1",
		    "--bind-interfaces", "--no-resolv", "--no-hosts",
		    "--addn-hosts=" + self.hosts, "--local-ttl=1",
		    "--local=/test/", "--pid-file=", "--conf-file=/dev/null",
		    "--user=" + ("root" if os.getuid() == 0 else
		    str(os.getuid())), "--log-facility=-", "--log-queries"]
		args += ["--srv-host=%s,%s,%d,%d,%d" % r for r in srv]
		self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
		    stdout=self.logfile, stderr=self.logfile)
		harness._register(self.proc)
		wait_until(lambda: "read " + self.hosts in open(self.log,
		    errors="replace").read(), 5.0, what="dnsmasq started")
		return self

	def restart(self, srv):
		self._stop_proc()
		return self.start(srv)

	def _stop_proc(self):
		if self.proc is not None:
			harness.stop_proc(self.proc)
			self.logfile.close()
			self.proc = None

	def stop(self):
		self._stop_proc()
		shutil.rmtree(self.dir, ignore_errors=True)

	def __enter__(self):
		return self

	def __exit__(self, *exc):
		self.stop()
		return False


def srv_conf(dns, name=SRV, **dep):
	d = {"dns_srv": name}
	d.update(dep)
	return {"workers": 2,
	    "resolver": {"nameservers": ["127.0.0.1:%d" % dns.port],
	        "srv_interval": INTERVAL},
	    "routes": [{"prefix": "/svc", "deployment": "svc"}],
	    "deployments": {"svc": d}}


def addresses(d):
	return sorted(r["address"] for r in d.deployments()["svc"]["replicas"])


HOSTS = [("127.0.0.2", "a.test"), ("127.0.0.3", "b.test"),
    ("127.0.0.4", "c.test")]


@unittest.skipUnless(shutil.which("dnsmasq"), "dnsmasq is not installed "
    "(scripts/deps.sh installs dnsmasq-base)")
class DnsSrv(unittest.TestCase):

	def test_srv_two_targets_both_serve(self):
		pa, pb, pc = free_port(), free_port(), free_port()
		a, b = "127.0.0.2:%d" % pa, "127.0.0.3:%d" % pb
		with SrvDnsmasq(HOSTS) as dns, \
		    Replica("echo", listen=a, rid="two"), \
		    Replica("echo", listen=b, rid="three"):
			# c.test has a worse priority: a backup, resolved and
			# shown, unused while a better target is ready.
			c = "127.0.0.4:%d" % pc
			dns.start([(SRV, "a.test", pa, 1, 10),
			    (SRV, "b.test", pb, 1, 30),
			    (SRV, "c.test", pc, 2, 10)])
			with Daemon(conf=srv_conf(dns)) as d:
				wait_until(lambda: addresses(d) == [a, b, c], 5.0,
				    what="the three targets")
				svc = d.deployments()["svc"]
				self.assertEqual((svc["source"], svc["dns_srv"]),
				    ("dns_srv", SRV))
				self.assertEqual(sorted((x["address"], x["weight"],
				    x["priority"]) for x in svc["replicas"]),
				    [(a, 10, 1), (b, 30, 1), (c, 10, 2)])
				seen = set()
				for _ in range(40):
					r = d.request("GET", "/svc/x")
					self.assertEqual(r.status, 200)
					seen.add(r.json()["replica"])
				self.assertEqual(seen, {"two", "three"})
				# Lookups every second with nothing changed push
				# nothing: one version bump, empty to both.
				time.sleep(2.5 * INTERVAL)
				self.assertEqual(d.deployments()["svc"]["version"],
				    2)

	@harness.timeout(90)
	def test_srv_change_followed_within_interval_under_load(self):
		pa, pb = free_port(), free_port()
		a, b = "127.0.0.2:%d" % pa, "127.0.0.3:%d" % pb
		with SrvDnsmasq(HOSTS) as dns, \
		    Replica("echo", listen=a, rid="two") as ra, \
		    Replica("echo", listen=b, rid="three") as rb:
			dns.start([(SRV, "a.test", pa, 1, 1)])
			with Daemon(conf=srv_conf(dns)) as d:
				wait_until(lambda: addresses(d) == [a], 5.0,
				    what="first answer")
				load = LoadLoop(d.port, ["/svc/%d" % i for i in
				    range(4)], threads=4).start()
				try:
					wait_until(lambda: load.count > 100, 10,
					    what="load running")
					dns.restart([(SRV, "a.test", pa, 1, 1),
					    (SRV, "b.test", pb, 1, 1)])
					t0 = time.monotonic()
					wait_until(lambda: addresses(d) == [a, b],
					    INTERVAL + 5, what="the added target")
					added = time.monotonic() - t0
					wait_until(lambda: any(r["requests"] > 20 for r
					    in d.deployments()["svc"]["replicas"] if
					    r["address"] == b), 5.0,
					    what="traffic to the new target")
					dns.restart([(SRV, "b.test", pb, 1, 1)])
					t0 = time.monotonic()
					wait_until(lambda: addresses(d) == [b],
					    INTERVAL + 5, what="the target's removal")
					removed = time.monotonic() - t0
					before = load.count
					wait_until(lambda: load.count > before + 200,
					    10, what="load after the removal")
				finally:
					failures = load.stop()
				self.assertEqual(failures, [])
				# The interval, plus a lookup that may have hit
				# the restart's gap (one 1 s backoff).
				self.assertLessEqual(added, 2 * INTERVAL + 1.5)
				self.assertLessEqual(removed, 2 * INTERVAL + 1.5)
				seen = {d.request("GET", "/svc/x").json()["replica"]
				    for _ in range(10)}
				self.assertEqual(seen, {"three"})

	def test_srv_name_changed_by_reload(self):
		pa, pb = free_port(), free_port()
		a, b = "127.0.0.2:%d" % pa, "127.0.0.3:%d" % pb
		other = "_other._tcp.svc.test"
		with SrvDnsmasq(HOSTS) as dns, \
		    Replica("echo", listen=a, rid="two"), \
		    Replica("echo", listen=b, rid="three"):
			dns.start([(SRV, "a.test", pa, 1, 1),
			    (other, "b.test", pb, 1, 1)])
			conf = srv_conf(dns)
			# Looked up rarely: only the reload makes the change.
			conf["resolver"]["srv_interval"] = 3600
			with Daemon(conf=conf) as d:
				wait_until(lambda: addresses(d) == [a], 5.0,
				    what="first answer")
				conf["deployments"]["svc"]["dns_srv"] = other
				harness.reload(d, conf=conf)
				wait_until(lambda: addresses(d) == [b], 5.0,
				    what="the new name's targets")
				self.assertEqual(d.deployments()["svc"]["dns_srv"],
				    other)
				r = d.request("GET", "/svc/x")
				self.assertEqual((r.status, r.json()["replica"]),
				    (200, "three"))

	def test_srv_nxdomain_is_unavailable_and_logged(self):
		pa = free_port()
		with SrvDnsmasq(HOSTS) as dns:
			dns.start([(SRV, "a.test", pa, 1, 1)])
			conf = srv_conf(dns, name="_svc._tcp.missing.test",
			    queue_timeout=0.5)
			with Daemon(conf=conf) as d:
				harness.wait_log(d, "dns_srv svc: "
				    "_svc._tcp.missing.test: no such name",
				    timeout=5.0)
				self.assertEqual(addresses(d), [])
				r = d.request("GET", "/svc/x")
				self.assertEqual(r.status, 503)
				self.assertIn("no replica of deployment 'svc'",
				    r.body.decode())
				# Logged once, not at every lookup.
				time.sleep(2.5 * INTERVAL)
				self.assertEqual(d.log_text().count(
				    "no such name"), 1)

	def test_srv_bad_conf_values(self):
		tmp = tempfile.mkdtemp(prefix="ingressd-conf-")
		self.addCleanup(shutil.rmtree, tmp, True)
		base = {"listen": ["127.0.0.1:%d" % free_port()],
		    "runtime_dir": tmp,
		    "routes": [{"prefix": "/svc", "deployment": "svc"}]}
		cases = [
		    ({"svc": {"dns_srv": "svc.test:80"}}, None,
		        "deployments.svc.dns_srv: must be an SRV name"),
		    ({"svc": {"dns_srv": "_svc._tcp"}}, None,
		        "deployments.svc.dns_srv: must be an SRV name"),
		    ({"svc": {"dns_srv": "_a._tcp.x..y"}}, None,
		        "deployments.svc.dns_srv: must be an SRV name"),
		    ({"svc": {"dns_srv": 5}}, None,
		        "deployments.svc.dns_srv: must be an SRV name"),
		    ({"svc": {"dns_srv": SRV, "dns": "svc.test:80"}}, None,
		        "deployments.svc: needs exactly one of"),
		    ({"svc": {"dns_srv": SRV}}, {"srv_interval": 0},
		        "resolver.srv_interval: must be a number of seconds"),
		    ({"svc": {"dns_srv": SRV}}, {"srv_interval": "30"},
		        "resolver.srv_interval: must be a number of seconds"),
		]
		for deps, resolver, want in cases:
			c = dict(base, deployments=deps)
			if resolver is not None:
				c["resolver"] = resolver
			path = os.path.join(tmp, "c.json")
			with open(path, "w") as f:
				json.dump(c, f, indent=2)
			p = subprocess.run([binary("ingressd"), "-t", "-c", path],
			    cwd=ROOT, stdin=subprocess.DEVNULL,
			    capture_output=True, timeout=5)
			err = p.stderr.decode(errors="replace")
			self.assertEqual(p.returncode, 1, (deps, err))
			self.assertIn(path, err)
			self.assertIn(want, err, (deps, resolver))
		c = dict(base, deployments={"svc": {"dns_srv": SRV + "."}},
		    resolver={"srv_interval": 0.5})
		with open(path, "w") as f:
			json.dump(c, f)
		p = subprocess.run([binary("ingressd"), "-t", "-c", path],
		    cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
		    timeout=5)
		self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
	unittest.main()
