"""HTTP and HTTP/2 replicas over TLS (a deployment's "tls" with "protocol":
"http" or "h2"): Debian's nginx as an HTTPS origin (keep-alive over TLS,
session resumption when the pool opens new connections, health checks
over TLS, a replica whose certificate does not verify is never ready,
mutual TLS), a grpcio server with TLS credentials behind "h2", and a TLS
server that does not select ALPN h2.  Certificates: test_tls's, made by
the openssl CLI (a.pem: a.test and IP 127.0.0.1, signed by ca; ca2 signs
nothing here)."""

import os
import socket
import ssl
import subprocess
import threading
import time
import unittest

import harness
from harness import (Daemon, base_conf, free_port, metric, scrape,
    tcp_conns_to, timeout, wait_until)
from http_backends import Nginx
from test_tls import certs
from test_upstream_h2c import NGHTTPD, Backend, grpc


def tls_dep(address, protocol="http", ca="ca", server_name="a.test",
    client=None, **extra):
	c = certs()
	t = {"ca": c[ca][0]}
	if server_name:
		t["server_name"] = server_name
	if client:
		t["cert"], t["key"] = c[client]
	d = {"endpoints": [address], "protocol": protocol, "tls": t}
	d.update(extra)
	return d


def conf_for(deps, routes=None, **timeouts):
	"""The default conf with these deployments, a route /NAME each
	(prefix stripped)."""
	c = base_conf()
	c["deployments"] = deps
	c["routes"] = routes or [{"prefix": "/" + n, "deployment": n,
	    "strip_prefix": True} for n in deps]
	c["timeouts"].update(timeouts)
	return c


def nginx_tls(**extra):
	c = certs()
	t = {"cert": c["a"][0], "key": c["a"][1]}
	t.update(extra)
	return Nginx(files={"index.html": b"hello from nginx\n",
	    "churn.html": b"churn\n"}, tls=t)


class HttpsOrigin(unittest.TestCase):

	@timeout(60)
	def test_keepalive_health_and_resumption(self):
		"""200 requests over a handful of TLS connections (nginx's
		$connection); health checks go over TLS too; connections the
		pool opens later resume the session ($ssl_session_reused), and
		one idle past the look before reuse is still reused."""
		with nginx_tls() as ng, Daemon(conf=conf_for({
		    "web": tls_dep(ng.address, health={"path": "/health",
		    "interval": 1, "timeout": 1}),
		    "churn": tls_dep(ng.address, idle_timeout=0.2)})) as d:
			with d.conn() as c:
				for _ in range(200):
					r = c.request("GET", "/web/index.html")
					self.assertEqual(r.status, 200, r)
					self.assertEqual(r.body,
					    b"hello from nginx\n")
				# Idle past the look before reuse (0.5 s): the
				# session tickets read meanwhile are no stray
				# bytes, the connection is reused.
				time.sleep(0.8)
				r = c.request("GET", "/web/index.html")
				self.assertEqual(r.status, 200, r)
			log = ng.access_log()
			web = [e for e in log if e[5] == "/index.html"]
			self.assertEqual(len(web), 201)
			self.assertLessEqual(len({e[0] for e in web}), 3, web)
			self.assertIn(web[-1][0], {e[0] for e in web[:-1]})
			self.assertTrue(all(e[2] == "TLSv1.3" and
			    e[3] == "http/1.1" for e in web), web[:3])
			checks = [e for e in log if e[5] == "/health"]
			self.assertGreaterEqual(len(checks), 1)
			self.assertTrue(all(e[2] == "TLSv1.3" for e in checks))
			rep = d.deployments()["web"]["replicas"][0]
			self.assertEqual((rep["protocol"], rep["state"]),
			    ("http", "ready"))
			self.assertEqual(rep["requests"], 201)
			self.assertGreaterEqual(rep["health_passed"], 1)
			self.assertNotIn("stray", d.log_text())

			# Each request on a new connection (the idle one is
			# closed after 0.2 s): all but the first resume.
			for _ in range(5):
				r = d.request("GET", "/churn/churn.html")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"churn\n")
				time.sleep(0.5)
			churn = [e for e in ng.access_log()
			    if e[5] == "/churn.html"]
			self.assertEqual(len({e[0] for e in churn}), 5, churn)
			self.assertEqual([e[1] for e in churn[1:]], ["r"] * 4,
			    churn)
			# A burst: the pool opens several connections at once,
			# each resuming (each offers its own copy of the
			# session: OpenSSL marks a TLS 1.3 one spent when the
			# first handshake with it ends).
			seen = len(ng.access_log())
			go = threading.Barrier(8)

			def one():
				go.wait(5)
				r = d.request("GET", "/churn/churn.html")
				self.assertEqual(r.status, 200, r)
			ts = [threading.Thread(target=one) for _ in range(8)]
			for t in ts:
				t.start()
			for t in ts:
				t.join(10)
			old = {e[0] for e in churn}
			burst = [e for e in ng.access_log()[seen:]
			    if e[0] not in old and e[5] == "/churn.html"]
			self.assertGreaterEqual(len({e[0] for e in burst}), 2,
			    burst)
			self.assertEqual({e[1] for e in burst}, {"r"}, burst)
			m = scrape(d.admin_port)
			self.assertGreaterEqual(metric(m,
			    "ingressd_tls_handshakes_resumed_total"), 4 +
			    len({e[0] for e in burst}))

	@timeout(60)
	def test_unverified_replica_never_ready(self):
		"""A replica whose certificate does not chain to ca, or does not
		carry server_name: never ready, no request reaches it, 503 after
		queue_timeout, and the replica's address and OpenSSL's reason
		in the log."""
		for ca, name, reason in (
		    ("ca2", "a.test", "unable to get local issuer certificate"),
		    ("ca", "b.test", "hostname mismatch")):
			with nginx_tls() as ng, Daemon(conf=conf_for({"web":
			    tls_dep(ng.address, ca=ca, server_name=name,
			    queue_timeout=1)})) as d:
				t0 = time.monotonic()
				r = d.request("GET", "/web/index.html")
				took = time.monotonic() - t0
				self.assertEqual(r.status, 503, r)
				self.assertGreaterEqual(took, 0.9)
				want = "replica %s (%s): not ready: cannot " \
				    "connect: TLS: certificate verify failed: " \
				    "%s" % (ng.address, ng.address, reason)
				wait_until(lambda: want in d.log_text(), 5,
				    what="the reason logged")
				rep = d.deployments()["web"]["replicas"][0]
				self.assertNotEqual(rep["state"], "ready")
				self.assertEqual(rep["requests"], 0)
				self.assertEqual(ng.access_log(), [])

	@timeout(60)
	def test_mutual_tls_origin(self):
		"""nginx with ssl_verify_client on: with our client certificate
		it answers and sees its subject; without one it refuses (its
		400 "No required SSL certificate was sent")."""
		with nginx_tls(client_ca=certs()["ca"][0]) as ng, \
		    Daemon(conf=conf_for({
		    "with": tls_dep(ng.address, client="client"),
		    "without": tls_dep(ng.address)})) as d:
			r = d.request("GET", "/with/index.html")
			self.assertEqual(r.status, 200, r)
			self.assertIn("CN=client.test", r.header("x-client-dn"))
			r = d.request("GET", "/without/index.html")
			self.assertEqual(r.status, 400, r)
			self.assertIn(b"No required SSL certificate was sent",
			    r.body)
			dns = {e[4] for e in ng.access_log()}
			self.assertTrue(any("CN=client.test" in x for x in dns),
			    dns)


def h2_conf(address, **extra):
	c = conf_for({"g": tls_dep(address, protocol="h2", **extra)},
	    routes=[{"prefix": "/t.S/", "deployment": "g"}])
	return c


@unittest.skipIf(grpc is None, "python3-grpcio missing (/usr/bin/python3)")
class Http2OverTls(unittest.TestCase):

	@timeout(30)
	def test_grpc_unary_over_tls(self):
		"""A grpcio server with TLS credentials behind "protocol": "h2":
		a unary call and a server stream through ingressd's HTTP/2
		front, the replica shown as h2 and ready."""
		with Backend(tls=certs()["a"]) as b, \
		    Daemon(conf=h2_conf(b.address)) as d:
			ch = grpc.insecure_channel("127.0.0.1:%d" % d.port)
			self.addCleanup(ch.close)
			r, call = ch.unary_unary("/t.S/Unary").with_call(
			    b"over tls", metadata=(("x-md", "v1"),), timeout=10)
			self.assertEqual(r, b"over tls")
			self.assertEqual(dict(call.trailing_metadata()).get(
			    "x-md"), "v1")
			got = list(ch.unary_stream("/t.S/ServerStream")(b"s",
			    timeout=10))
			self.assertEqual(got, [b"s"] * 3)
			rep = d.deployments()["g"]["replicas"][0]
			self.assertEqual((rep["protocol"], rep["state"]),
			    ("h2", "ready"))
			self.assertEqual(rep["connections_open"], 1)
			# The front is plain: the handshake is the replica's.
			m = scrape(d.admin_port)
			self.assertEqual(metric(m, "ingressd_tls_handshakes_total",
			    version="TLSv1.3"), 1)

	@timeout(30)
	def test_server_without_alpn_h2_refused(self):
		"""A TLS server that completes the handshake but selects no ALPN
		protocol: the connection is refused (logged), the replica never
		ready, requests 503 after queue_timeout."""
		c = certs()
		ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
		ctx.load_cert_chain(*c["a"])
		lsock = socket.socket()
		lsock.bind(("127.0.0.1", 0))
		lsock.listen(16)
		lsock.settimeout(0.2)
		stop = threading.Event()
		shakes = []

		def serve():
			while not stop.is_set():
				try:
					s, _ = lsock.accept()
				except OSError:
					continue
				try:
					s.settimeout(2)
					t = ctx.wrap_socket(s, server_side=True)
					shakes.append(t.selected_alpn_protocol())
					t.recv(1)	# until ingressd closes
				except OSError:
					pass
				finally:
					s.close()

		th = threading.Thread(target=serve, daemon=True)
		th.start()
		self.addCleanup(lambda: (stop.set(), th.join(5),
		    lsock.close()))
		addr = "127.0.0.1:%d" % lsock.getsockname()[1]
		with Daemon(conf=h2_conf(addr, queue_timeout=1)) as d:
			r = d.request("GET", "/t.S/Unary")
			self.assertEqual(r.status, 503, r)
			want = "replica %s (%s): not ready: TLS: the server " \
			    "selected no ALPN protocol (h2 needed)" % (addr, addr)
			wait_until(lambda: want in d.log_text(), 5,
			    what="the refusal logged")
			self.assertNotEqual(d.deployments()["g"]["replicas"][0][
			    "state"], "ready")
		self.assertGreaterEqual(len(shakes), 1)
		self.assertEqual(set(shakes), {None})


@unittest.skipIf(not os.access(NGHTTPD, os.X_OK), "nghttp2-server missing")
class Http1ClientToH2OverTls(unittest.TestCase):

	@timeout(30)
	def test_nghttpd_over_tls(self):
		"""nghttpd over TLS (its own ALPN h2) behind "h2": an HTTP/1.1
		client's requests arrive as https (:scheme, in nghttpd's -v
		log), bodies intact, all on one upstream connection."""
		root = harness.log_path("nghttpd")[:-4] + ".root"
		os.makedirs(root, exist_ok=True)
		body = os.urandom(300000)
		with open(os.path.join(root, "f.bin"), "wb") as f:
			f.write(body)
		port = free_port()
		path = harness.log_path("nghttpd")
		log = open(path, "wb")
		proc = subprocess.Popen([NGHTTPD, "-v", "-d", root, "-a",
		    "127.0.0.1", str(port), certs()["a"][1], certs()["a"][0]],
		    stdout=log, stderr=log, stdin=subprocess.DEVNULL)
		harness._register(proc)
		self.addCleanup(harness.stop_proc, proc)
		with Daemon(conf=conf_for({"web": tls_dep("127.0.0.1:%d" %
		    port, protocol="h2")})) as d:
			wait_until(lambda: d.request("GET", "/web/f.bin").status
			    == 200, timeout=5)
			with d.conn() as conn:
				for _ in range(10):
					r = conn.request("GET", "/web/f.bin")
					self.assertEqual(r.status, 200)
					self.assertEqual(r.body, body)
			self.assertEqual(tcp_conns_to(port), 1)
		with open(path, "rb") as f:
			text = f.read()
		self.assertTrue(b":scheme: https\n" in text and
		    b":scheme: http\n" not in text, "see " + path)


class Conf(unittest.TestCase):

	def test_tls_conf_errors(self):
		ca = certs()["ca"][0]
		for dep, want in (
		    ({"endpoints": ["127.0.0.1:1"], "protocol": "h2"},
		    '"protocol": "h2" is HTTP/2 over TLS and needs "tls"'),
		    ({"endpoints": ["127.0.0.1:1"], "protocol": "h2c",
		    "tls": {"ca": ca}}, 'with "tls" write "protocol": "h2"'),
		    ({"dns": "localhost:443", "protocol": "http",
		    "tls": {"ca": ca}}, "replicas found by DNS are not "
		    "reached over TLS yet"),
		    ({"endpoints": ["unix:/tmp/x.sock"], "protocol": "http",
		    "tls": {"ca": ca}}, "is a unix socket"),
		    ({"endpoints": ["127.0.0.1:1"], "protocol": "http",
		    "tls": {"ca": "/nonexistent/ca.pem"}},
		    "/nonexistent/ca.pem")):
			d = Daemon(conf=conf_for({"x": dep}), expect_exit=None)
			with self.assertRaises(AssertionError):
				d.start()
			d.stop(check=False)
			self.assertIn("deployments.x", d.log_text())
			self.assertIn(want, d.log_text())


if __name__ == "__main__":
	unittest.main()
