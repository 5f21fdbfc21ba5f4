"""dns deployments against a real DNS server on loopback (dnsmasq from
Debian, on a high port, serving a hosts file the test rewrites): records
added and removed while traffic flows are picked up within TTL + 1 s,
without a failed request; a DNS server that goes away changes nothing."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import harness
from harness import Daemon, LoadLoop, Replica, free_port, wait_until

TTL = 1		# dnsmasq --local-ttl: what the answers say


class Dnsmasq:
	"""dnsmasq on 127.0.0.1:port answering for *.test from a hosts file
	only (no upstream, no /etc/hosts); set() rewrites it and SIGHUPs."""

	def __init__(self):
		self.dir = tempfile.mkdtemp(prefix="ingressd-dns-")
		self.hosts = os.path.join(self.dir, "hosts")
		self.port = free_port()
		self.proc = None

	def set(self, records):
		with open(self.hosts + ".tmp", "w") as f:
			for addr, name in records:
				f.write("%s %s\n" % (addr, name))
		os.rename(self.hosts + ".tmp", self.hosts)
		if self.proc is not None:
			self.proc.send_signal(signal.SIGHUP)

	def start(self, records):
		self.set(records)
		self.log = harness.log_path("dnsmasq")
		self.logfile = open(self.log, "wb")
		self.proc = subprocess.Popen(["dnsmasq", "--keep-in-foreground",
		    "--port=%d" % self.port, "--listen-address=127.0.0.1",
		    "--bind-interfaces", "--no-resolv", "--no-hosts",
		    "--addn-hosts=" + self.hosts, "--local-ttl=%d" % TTL,
		    "--local=/test/", "--pid-file=", "--conf-file=/dev/null",
		    "--user=" + ("root" if os.getuid() == 0 else
		    str(os.getuid())), "--log-facility=-", "--log-queries"],
		    stdin=subprocess.DEVNULL, stdout=self.logfile,
		    stderr=self.logfile)
		harness._register(self.proc)
		wait_until(lambda: "read " + self.hosts in open(self.log,
		    errors="replace").read(), 5.0, what="dnsmasq started")
		return self

	def stop(self):
		harness.stop_proc(self.proc)
		if self.proc is not None:
			self.logfile.close()
		shutil.rmtree(self.dir, ignore_errors=True)

	def __enter__(self):
		return self

	def __exit__(self, *exc):
		self.stop()
		return False


def svc_conf(dns, port):
	return {"workers": 2,
	    "resolver": {"nameservers": ["127.0.0.1:%d" % dns.port]},
	    "routes": [{"prefix": "/svc", "deployment": "svc"}],
	    "deployments": {"svc": {"dns": "svc.test:%d" % port}}}


def addresses(d):
	return sorted(r["address"] for r in d.deployments()["svc"]["replicas"])


@unittest.skipUnless(shutil.which("dnsmasq"), "dnsmasq is not installed "
    "(scripts/deps.sh installs dnsmasq-base)")
class Dns(unittest.TestCase):

	def test_records_follow_dns_under_load(self):
		port = free_port()
		a2, a3 = "127.0.0.2:%d" % port, "127.0.0.3:%d" % port
		with Dnsmasq() as dns, \
		    Replica("echo", listen=a2, rid="two") as r2, \
		    Replica("echo", listen=a3, rid="three") as r3:
			dns.start([("127.0.0.2", "svc.test")])
			with Daemon(conf=svc_conf(dns, port)) as d:
				wait_until(lambda: addresses(d) == [a2], 3.0,
				    what="first answer")
				svc = d.deployments()["svc"]
				self.assertEqual((svc["source"], svc["dns"]),
				    ("dns", "svc.test:%d" % port))
				self.assertEqual(svc["replicas"][0]["id"], a2)
				load = LoadLoop(d.port, ["/svc/%d" % i for i in
				    range(4)], threads=4).start()
				try:
					wait_until(lambda: load.count > 100, 10,
					    what="load running")
					# A record added: picked up within TTL + 1 s.
					dns.set([("127.0.0.2", "svc.test"),
					    ("127.0.0.3", "svc.test")])
					t0 = time.monotonic()
					wait_until(lambda: addresses(d) == [a2, a3],
					    TTL + 1.5, what="the new record")
					added = time.monotonic() - t0
					wait_until(lambda: any(r["requests"] > 20 for r
					    in d.deployments()["svc"]["replicas"] if
					    r["address"] == a3), 5.0,
					    what="traffic to the new address")
					# A record removed: the same.
					dns.set([("127.0.0.3", "svc.test")])
					t0 = time.monotonic()
					wait_until(lambda: addresses(d) == [a3],
					    TTL + 1.5, what="the record's removal")
					removed = time.monotonic() - t0
					before = load.count
					wait_until(lambda: load.count > before + 200,
					    10, what="load after the removal")
				finally:
					failures = load.stop()
				self.assertEqual(failures, [])
				self.assertLessEqual(added, TTL + 1.0)
				self.assertLessEqual(removed, TTL + 1.0)
				seen = {d.request("GET", "/svc/x").json()["replica"]
				    for _ in range(10)}
				self.assertEqual(seen, {"three"})
				# Unchanged answers push nothing: the version
				# moved once per change (empty, 1st, 2nd, 3rd).
				self.assertEqual(d.deployments()["svc"]["version"],
				    4)

	def test_dns_server_gone_keeps_addresses(self):
		port = free_port()
		a2 = "127.0.0.2:%d" % port
		with Dnsmasq() as dns, \
		    Replica("echo", listen=a2, rid="two"):
			dns.start([("127.0.0.2", "svc.test")])
			with Daemon(conf=svc_conf(dns, port)) as d:
				wait_until(lambda: addresses(d) == [a2], 3.0,
				    what="first answer")
				dns.stop()
				harness.wait_log(d, "lookup failed: addresses kept",
				    timeout=20.0)
				self.assertEqual(addresses(d), [a2])
				r = d.request("GET", "/svc/x")
				self.assertEqual((r.status, r.json()["replica"]),
				    (200, "two"))


if __name__ == "__main__":
	unittest.main()
