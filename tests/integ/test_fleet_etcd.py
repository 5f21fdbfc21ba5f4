"""registry.etcd: several ingressd instances follow one registry in etcd.
Debian's etcd runs on loopback (tests/integ/etcd_util.py); faults are made
by stopping it, by a relay that cuts or freezes the connection, and by
compaction."""

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

from harness import Daemon, LoadLoop, Replica, ROOT, _register, binary, \
    free_port, log_path, metric, request, scrape, stop_proc, wait_log, \
    wait_until
from harness import deployment as dep
from etcd_util import Etcd, Relay

PREFIX = "/ingressd"


class _Hello(http.server.BaseHTTPRequestHandler):
	protocol_version = "HTTP/1.1"

	def do_GET(self):
		body = b"hello from http\n"
		self.send_response(200)
		self.send_header("Content-Length", str(len(body)))
		self.end_headers()
		self.wfile.write(body)

	def log_message(self, *a):
		pass
MODELS = {"prefix": "/models/", "deployment_from": "path"}


def fleet_conf(endpoints, **etcd):
	e = {"endpoints": list(endpoints), "prefix": PREFIX}
	e.update(etcd)
	return {"routes": [MODELS], "deployments": {},
	    "registry": {"etcd": e}}


def key(name, rid):
	return "%s/deployments/%s/replicas/%s" % (PREFIX, name, rid)


def routes(d, name):
	try:
		r = d.request("GET", "/models/%s/x" % name, timeout=2.0)
	except OSError:
		return False
	return r.status == 200


def version(d, name):
	return dep(d, name)["version"]


def etcd_metrics(d):
	s = scrape(d.admin_port, "/metrics")
	return {n: metric(s, "ingressd_etcd_" + n) for n in ("revision",
	    "reconnects_total", "relists_total", "events_total", "watch_up",
	    "in_sync", "last_heard_seconds")}


class Fleet(unittest.TestCase):

	def test_put_reaches_three_instances(self):
		with Etcd() as e, Replica("echo", rid="r1") as rep, \
		    Daemon(conf=fleet_conf(e.endpoints)) as a, \
		    Daemon(conf=fleet_conf(e.endpoints)) as b, \
		    Daemon(conf=fleet_conf(e.endpoints)) as c:
			fleet = (a, b, c)
			for d in fleet:
				self.assertEqual(d.request("GET",
				    "/models/m/x").status, 404)
				wait_until(lambda: etcd_metrics(d)["watch_up"] == 1,
				    5, what="watch up")
			t0 = time.monotonic()
			e.put(key("m", "r1"), {"address": rep.listen,
			    "max_ongoing_requests": 8, "weight": 3,
			    "priority": 2})
			took = []
			for d in fleet:
				wait_until(lambda: routes(d, "m"), 5,
				    interval=0.002, what="routed")
				took.append(time.monotonic() - t0)
			sys.stderr.write("put -> routed on 3 instances: %s ms\n" %
			    ", ".join("%.1f" % (t * 1000) for t in took))
			for d in fleet:
				m = dep(d, "m")
				self.assertEqual(m["source"], "register")
				self.assertEqual([(x["id"], x["address"],
				    x["weight"], x["priority"]) for x in
				    m["replicas"]], [("r1", rep.listen, 3, 2)])
			e.delete(key("m", "r1"))
			for d in fleet:
				wait_until(lambda: d.request("GET", "/models/m/x")
				    .status == 404, 5, what="404 after delete")
			self.assertLess(max(took), 2.0)

	def test_admin_put_writes_through(self):
		with Etcd() as e, Replica("echo", rid="r1") as rep, \
		    Daemon(conf=fleet_conf(e.endpoints)) as a, \
		    Daemon(conf=fleet_conf(e.endpoints)) as b:
			body = json.dumps({"address": rep.listen,
			    "max_ongoing_requests": 7}).encode()
			r = request(a.admin_port, "PUT",
			    "/-/deployments/m/replicas/r1", body=body, timeout=5)
			self.assertEqual(r.status, 200, r.body)
			self.assertEqual(e.get(key("m", "r1")), {"address":
			    rep.listen, "max_ongoing_requests": 7,
			    "protocol": "wire", "weight": 1, "priority": 0})
			self.assertTrue(routes(a, "m"))
			wait_until(lambda: routes(b, "m"), 5, what="b routes m")
			# Bad input is refused before etcd hears of it.
			r = request(a.admin_port, "PUT",
			    "/-/deployments/m/replicas/r2", body=b'{"address": '
			    b'"localhost:1"}', timeout=5)
			self.assertEqual(r.status, 400)
			self.assertIsNone(e.get(key("m", "r2")))
			r = request(b.admin_port, "DELETE",
			    "/-/deployments/m/replicas/r1", timeout=5)
			self.assertEqual(r.status, 200, r.body)
			self.assertIsNone(e.get(key("m", "r1")))
			wait_until(lambda: a.request("GET", "/models/m/x").status
			    == 404, 5, what="a drops m")
			r = request(b.admin_port, "DELETE",
			    "/-/deployments/m/replicas/r1", timeout=5)
			self.assertEqual(r.status, 404)

	def test_http_replica_from_etcd(self):
		"""A key's "protocol": "http" puts a plain HTTP server behind
		every instance; an admin PUT writes the protocol through."""
		srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
		    _Hello)
		threading.Thread(target=srv.serve_forever, daemon=True).start()
		self.addCleanup(srv.server_close)
		self.addCleanup(srv.shutdown)
		addr = "127.0.0.1:%d" % srv.server_address[1]
		with Etcd() as e, Daemon(conf=fleet_conf(e.endpoints)) as a, \
		    Daemon(conf=fleet_conf(e.endpoints)) as b:
			e.put(key("web", "h1"), {"address": addr,
			    "max_ongoing_requests": 4, "protocol": "http"})
			for d in (a, b):
				wait_until(lambda: d.request("GET", "/models/web/x")
				    .status == 200, 10, what="http replica serves")
				r = d.request("GET", "/models/web/x")
				self.assertEqual(r.body, b"hello from http\n")
			r = request(a.admin_port, "PUT",
			    "/-/deployments/web2/replicas/h1", body=json.dumps(
			    {"address": addr, "protocol": "http"}).encode(),
			    timeout=5)
			self.assertEqual(r.status, 200, r.body)
			self.assertEqual(e.get(key("web2", "h1"))["protocol"],
			    "http")
			wait_until(lambda: b.request("GET", "/models/web2/y")
			    .status == 200, 10, what="b serves web2 over http")
			e.put(key("bad", "h1"), {"address": addr,
			    "protocol": "gopher"})
			wait_log(a, "protocol: must be", 5)

	def test_admin_put_etcd_down_is_503(self):
		with Etcd() as e, Daemon(conf=fleet_conf(e.endpoints,
		    request_timeout=1)) as a:
			e.stop_member(0)
			r = request(a.admin_port, "PUT",
			    "/-/deployments/m/replicas/r1",
			    body=b'{"address": "127.0.0.1:1"}', timeout=5)
			self.assertEqual(r.status, 503, r.body)
			self.assertIn("etcd", r.json()["error"])

	def test_lease_replica_killed_leaves_everywhere(self):
		with Etcd() as e:
			# A request to the dead replica waits in the queue:
			# briefly, so the probes below see the 404 in time.
			conf = fleet_conf(e.endpoints)
			conf["timeouts"] = {"queue": 0.3}
			fleet = [Daemon(conf=conf) for _ in range(3)]
			for d in fleet:
				d.start()
			port = free_port()
			logf = open(log_path("replica-py-etcd"), "wb")
			proc = subprocess.Popen([sys.executable, os.path.join(ROOT,
			    "python/examples/echo.py"), "--listen",
			    "127.0.0.1:%d" % port, "--id", "p1", "--deployment",
			    "pm", "--register", "etcd://127.0.0.1:%d%s?ttl=2" %
			    (e.client[0], PREFIX)], stdout=logf, stderr=logf)
			_register(proc)
			try:
				for d in fleet:
					wait_until(lambda: routes(d, "pm"), 10,
					    what="lease-registered replica routed")
				t0 = time.monotonic()
				proc.send_signal(signal.SIGKILL)
				proc.wait(5)
				for d in fleet:
					wait_until(lambda: d.request("GET",
					    "/models/pm/x").status == 404, 3 + 1,
					    interval=0.02, what="gone within TTL+1")
				sys.stderr.write("SIGKILL -> gone everywhere: %.2f s "
				    "(ttl 2)\n" % (time.monotonic() - t0))
			finally:
				stop_proc(proc)
				logf.close()
				for d in fleet:
					d.stop()
					d._cleanup_dir()

	def test_lease_c_replica(self):
		"""The C library's --register: SIGTERM revokes at once, SIGKILL
		expires with the lease; weight and priority from the URL."""
		with Etcd() as e:
			conf = fleet_conf(e.endpoints)
			conf["timeouts"] = {"queue": 0.3}
			with Daemon(conf=conf) as a, Daemon(conf=conf) as b:
				for sig, limit in ((signal.SIGTERM, 1.0),
				    (signal.SIGKILL, 3.0)):
					port = free_port()
					logf = open(log_path("replica-c-etcd"), "wb")
					proc = subprocess.Popen([binary("replica-echo"),
					    "--listen", "127.0.0.1:%d" % port, "--id",
					    "c1", "--deployment", "cm", "--register",
					    "etcd://127.0.0.1:%d%s?ttl=2&weight=4&"
					    "priority=3" % (e.client[0], PREFIX)],
					    stdout=logf, stderr=logf)
					_register(proc)
					try:
						for d in (a, b):
							wait_until(lambda: routes(d, "cm"), 10,
							    what="C replica registered")
						self.assertEqual(e.get(key("cm", "c1")),
						    {"address": "127.0.0.1:%d" % port,
						    "weight": 4, "priority": 3})
						self.assertEqual([(x["weight"],
						    x["priority"]) for x in
						    dep(a, "cm")["replicas"]], [(4, 3)])
						t0 = time.monotonic()
						proc.send_signal(sig)
						proc.wait(5)
						for d in (a, b):
							wait_until(lambda: d.request("GET",
							    "/models/cm/x").status == 404,
							    limit + 1, interval=0.02,
							    what="gone after %s" %
							    signal.Signals(sig).name)
						sys.stderr.write("C replica %s -> gone: "
						    "%.2f s\n" % (signal.Signals(sig).name,
						    time.monotonic() - t0))
					finally:
						stop_proc(proc)
						logf.close()

	def test_lease_replica_drain_revokes(self):
		with Etcd() as e, Daemon(conf=fleet_conf(e.endpoints)) as d:
			port = free_port()
			logf = open(log_path("replica-py-etcd"), "wb")
			proc = subprocess.Popen([sys.executable, os.path.join(ROOT,
			    "python/examples/echo.py"), "--listen",
			    "127.0.0.1:%d" % port, "--id", "p1", "--deployment",
			    "pm", "--register", "etcd://127.0.0.1:%d%s?ttl=30&"
			    "weight=2&priority=1" % (e.client[0], PREFIX)],
			    stdout=logf, stderr=logf)
			_register(proc)
			try:
				wait_until(lambda: routes(d, "pm"), 10, what="routed")
				self.assertEqual(e.get(key("pm", "p1"))["weight"], 2)
				self.assertEqual([(x["weight"], x["priority"]) for x
				    in dep(d, "pm")["replicas"]], [(2, 1)])
				proc.send_signal(signal.SIGTERM)
				proc.wait(10)
				self.assertIsNone(e.get(key("pm", "p1")))
				wait_until(lambda: d.request("GET", "/models/pm/x")
				    .status == 404, 2, what="gone at once on drain")
			finally:
				stop_proc(proc)
				logf.close()


class Faults(unittest.TestCase):

	def test_etcd_restart_under_load_resumes_watch(self):
		with Etcd() as e, Replica("echo", rid="r1") as rep, \
		    Replica("echo", rid="r2") as rep2, \
		    Daemon(conf=fleet_conf(e.endpoints)) as d:
			e.put(key("m", "r1"), {"address": rep.listen})
			wait_until(lambda: routes(d, "m"), 5, what="routed")
			load = LoadLoop(d.port, ["/models/m/x"], threads=2).start()
			try:
				time.sleep(0.3)
				e.stop_member(0)
				wait_until(lambda: etcd_metrics(d)["watch_up"] == 0,
				    5, what="watch down")
				time.sleep(1.0)
				e.start_member(0)
				e.wait_up(0)
				e.put(key("n", "r2"), {"address": rep2.listen})
				wait_until(lambda: routes(d, "n"), 10,
				    what="change after restart arrives")
			finally:
				failures = load.stop()
			self.assertEqual(failures, [])
			self.assertGreater(load.count, 50)
			m = etcd_metrics(d)
			self.assertGreaterEqual(m["reconnects_total"], 1)
			self.assertEqual(m["relists_total"], 0)

	def test_compaction_while_disconnected_relists_diff(self):
		with Etcd() as e, Replica("echo", rid="r1") as rep, \
		    Replica("echo", rid="r2") as rep2:
			relay = Relay(e.client[0])
			try:
				for n in ("a", "b", "c"):
					e.put(key(n, "r1"), {"address": rep.listen})
				with Daemon(conf=fleet_conf([relay.endpoint])) as d:
					for n in ("a", "b", "c"):
						wait_until(lambda: routes(d, n), 5)
					before = {n: (version(d, n),
					    dep(d, n)["resolutions"]) for n in "abc"}
					relay.set("down")
					wait_until(lambda: etcd_metrics(d)["watch_up"]
					    == 0, 5, what="watch down")
					e.put(key("b", "r2"), {"address": rep2.listen})
					e.delete(key("c", "r1"))
					e.put(key("d", "r1"), {"address": rep.listen})
					e.compact()
					relay.set("up")
					wait_until(lambda: routes(d, "d"), 10,
					    what="re-listed")
					m = etcd_metrics(d)
					self.assertEqual(m["relists_total"], 1)
					self.assertEqual(version(d, "a"), before["a"][0])
					self.assertEqual(dep(d, "a")["resolutions"],
					    before["a"][1])
					self.assertGreater(version(d, "b"),
					    before["b"][0])
					self.assertEqual(sorted(x["id"] for x in
					    dep(d, "b")["replicas"]), ["r1", "r2"])
					self.assertEqual(d.request("GET",
					    "/models/c/x").status, 404)
			finally:
				relay.close()

	def test_silent_watch_is_dead(self):
		with Etcd(progress=0.5) as e, Replica("echo", rid="r1") as rep:
			relay = Relay(e.client[0])
			try:
				with Daemon(conf=fleet_conf([relay.endpoint],
				    watch_timeout=1.5)) as d:
					wait_until(lambda: etcd_metrics(d)["watch_up"]
					    == 1, 5)
					time.sleep(2.0)   # progress keeps it alive
					self.assertEqual(etcd_metrics(d)
					    ["reconnects_total"], 0)
					relay.set("frozen")
					e.put(key("m", "r1"), {"address": rep.listen})
					time.sleep(0.5)
					self.assertFalse(routes(d, "m"))
					self.assertGreater(etcd_metrics(d)
					    ["last_heard_seconds"], 0.3)
					# (A frozen relay loses bytes, which TCP never
					# would: only a new stream may carry the event.)
					wait_until(lambda: etcd_metrics(d)
					    ["reconnects_total"] >= 1, 4,
					    what="watchdog fired")
					relay.set("up")
					wait_until(lambda: routes(d, "m"), 6,
					    what="reconnected past the silence")
					self.assertGreaterEqual(etcd_metrics(d)
					    ["reconnects_total"], 1)
					self.assertIn("watch silent", d.log_text())
			finally:
				relay.close()

	def test_snapshot_serves_when_etcd_is_down(self):
		with Replica("echo", rid="r1") as rep:
			e = Etcd().start()
			try:
				snap = os.path.join(e.tmp, "etcd.snapshot")
				conf = fleet_conf(e.endpoints, snapshot=snap)
				e.put(key("m", "r1"), {"address": rep.listen})
				with Daemon(conf=conf) as d:
					wait_until(lambda: routes(d, "m"), 5)
					wait_until(lambda: os.path.exists(snap), 3,
					    what="snapshot written")
				e.stop_member(0)
				with Daemon(conf=conf) as d:
					r = request(d.admin_port, "GET", "/-/ready")
					self.assertEqual(r.status, 200, r.body)
					self.assertTrue(routes(d, "m"))
					self.assertEqual(etcd_metrics(d)["in_sync"], 1)
					self.assertEqual(etcd_metrics(d)["watch_up"], 0)
			finally:
				e.stop()

	def test_not_ready_until_listed(self):
		port = free_port()
		conf = fleet_conf(["http://127.0.0.1:%d" % port])
		with Daemon(conf=conf) as d:
			r = request(d.admin_port, "GET", "/-/ready")
			self.assertEqual(r.status, 503)
			self.assertIn(b"registry not in sync", r.body)
			time.sleep(0.5)
			self.assertGreaterEqual(etcd_metrics(d)
			    ["reconnects_total"], 1)

	def test_cluster_leader_killed(self):
		with Etcd(members=3) as e, Replica("echo", rid="r1") as rep:
			with Daemon(conf=fleet_conf(e.endpoints)) as d:
				wait_until(lambda: etcd_metrics(d)["watch_up"] == 1,
				    5)
				leader = e.leader()
				self.assertIsNotNone(leader)
				e.stop_member(leader, signal.SIGKILL)
				def put():
					try:
						e.put(key("m", "r1"), {"address":
						    rep.listen})
						return True
					except OSError:
						return False
				wait_until(put, 15, interval=0.2,
				    what="a new leader takes the put")
				wait_until(lambda: routes(d, "m"), 15,
				    what="the watch moved on")


class Secure(unittest.TestCase):
	"""registry.etcd over https with client certificates, and with etcd
	auth (username + password_file)."""

	def tls(self, e, ca="ca"):
		c = e.tls
		return {"ca": c[ca][0], "cert": c["client"][0],
		    "key": c["client"][1]}

	def test_mtls_follow(self):
		with Etcd(tls=True) as e, Replica("echo", rid="r1") as rep, \
		    Daemon(conf=fleet_conf(e.endpoints, tls=self.tls(e))) as d:
			wait_until(lambda: etcd_metrics(d)["watch_up"] == 1, 10,
			    what="watch up over TLS")
			e.put(key("m", "r1"), {"address": rep.listen})
			wait_until(lambda: routes(d, "m"), 5, what="routed")
			# The admin write-through speaks TLS too.
			r = request(d.admin_port, "PUT",
			    "/-/deployments/m2/replicas/r2", body=json.dumps(
			    {"address": rep.listen}).encode(), timeout=5)
			self.assertEqual(r.status, 200, r.body)
			self.assertEqual(e.get(key("m2", "r2"))["address"],
			    rep.listen)

	def test_wrong_ca_refused(self):
		with Etcd(tls=True) as e, Daemon(conf=fleet_conf(e.endpoints,
		    tls=self.tls(e, ca="ca2"))) as d:
			wait_log(d, "TLS: etcd's certificate not verified", 10)
			self.assertEqual(etcd_metrics(d)["watch_up"], 0)

	def auth_conf(self, e, password):
		pw = os.path.join(e.tmp, "pw-%s" % password)
		with open(pw, "w") as f:
			f.write(password + "\n")
		return fleet_conf(e.endpoints, username="fleet",
		    password_file=pw)

	def test_auth_follow(self):
		with Etcd() as e, Replica("echo", rid="r1") as rep:
			e.enable_auth("fleet", "s3cret", PREFIX)
			with Daemon(conf=self.auth_conf(e, "s3cret")) as d:
				wait_until(lambda: etcd_metrics(d)["watch_up"] == 1,
				    10, what="watch up with a token")
				e.put(key("m", "r1"), {"address": rep.listen})
				wait_until(lambda: routes(d, "m"), 5, what="routed")
				r = request(d.admin_port, "PUT",
				    "/-/deployments/m2/replicas/r2", body=json.dumps(
				    {"address": rep.listen}).encode(), timeout=5)
				self.assertEqual(r.status, 200, r.body)
				self.assertEqual(e.get(key("m2", "r2"))["address"],
				    rep.listen)

	def test_bad_password_retried(self):
		with Etcd() as e:
			e.enable_auth("fleet", "s3cret", PREFIX)
			with Daemon(conf=self.auth_conf(e, "wrong")) as d:
				log = wait_until(lambda: d.log_text().count(
				    'authenticate as "fleet"') >= 3 and d.log_text(),
				    15, what="three refused authentications")
				self.assertIn("authentication failed", log)
				delays = [float(x.split(" ms")[0]) for x in
				    log.split("again in ")[1:4]]
				self.assertLess(delays[0], delays[2])
				self.assertEqual(etcd_metrics(d)["watch_up"], 0)

	def test_python_replica_registers_over_tls(self):
		with Etcd(tls=True) as e, Daemon(conf=fleet_conf(e.endpoints,
		    tls=self.tls(e))) as d:
			port = free_port()
			c = e.tls
			url = ("etcds://127.0.0.1:%d%s?ttl=5&ca=%s&cert=%s&key=%s" %
			    (e.client[0], PREFIX, c["ca"][0], c["client"][0],
			    c["client"][1]))
			logf = open(log_path("replica-py-etcd-tls"), "wb")
			proc = subprocess.Popen([sys.executable, os.path.join(ROOT,
			    "python/examples/echo.py"), "--listen",
			    "127.0.0.1:%d" % port, "--id", "p1", "--deployment",
			    "pm", "--register", url], stdout=logf, stderr=logf)
			_register(proc)
			try:
				self.assertEqual(wait_until(lambda: e.get(key("pm",
				    "p1")), 10, what="registered over TLS")
				    ["address"], "127.0.0.1:%d" % port)
				wait_until(lambda: routes(d, "pm"), 10,
				    what="routed by the instance over mTLS")
			finally:
				stop_proc(proc)
				logf.close()


class Conf(unittest.TestCase):

	def test_bad_endpoints(self):
		for ep, msg in (("127.0.0.1:2379", 'must be "http://IP:PORT"'),
		    ("http://etcd.example:2379", '"etcd.example": must be an '
		    'IPv4 address, not a name')):
			d = Daemon(conf=fleet_conf([ep]), expect_exit=None)
			try:
				with self.assertRaises(AssertionError):
					d.start()
				d.proc.wait(5)
				self.assertIn("registry.etcd.endpoints[0]: " + msg,
				    d.log_text())
			finally:
				d._kill_quietly()


if __name__ == "__main__":
	unittest.main()
