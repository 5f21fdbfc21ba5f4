"""TLS: listeners (SNI, ALPN, resumption, reload, handshake timeout, hostile
handshakes, client certificates) and the wire over mutual TLS to C and
Python replicas.  Certificates are made at test time with the openssl CLI:
a test CA, server certificates for a.test and b.test, a client
certificate, an expired one, a replica certificate and a second CA."""

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import (Daemon, Replica, free_port, metric, reload, scrape,
    wait_log, wait_until)

_certs = None


def _openssl(*args, cwd):
	subprocess.run(("openssl",) + args, cwd=cwd, check=True,
	    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)


def _ec_req(cwd, name, cn, san=None, ext=None):
	args = ["req", "-new", "-newkey", "ec", "-pkeyopt",
	    "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=%s/O=ingressd "
	    "test" % cn, "-keyout", name + ".key", "-out", name + ".csr"]
	_openssl(*args, cwd=cwd)
	with open(os.path.join(cwd, name + ".ext"), "w") as f:
		if san:
			f.write("subjectAltName=%s\n" % san)
		f.write("extendedKeyUsage=%s\n" % (ext or "serverAuth"))


def _sign(cwd, name, ca, days=30):
	_openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem",
	    "-CAkey", ca + ".key", "-CAcreateserial", "-days", str(days),
	    "-extfile", name + ".ext", "-out", name + ".pem", cwd=cwd)


def _expired(cwd, ca):
	"""openssl ca can set dates in the past; x509 -req cannot."""
	_ec_req(cwd, "expired", "a.test", "DNS:a.test")
	for f, text in (("index.txt", ""), ("serial", "1000\n"), ("ca.cnf",
	    "[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nserial=serial\n"
	    "new_certs_dir=.\ndefault_md=sha256\npolicy=p\n"
	    "copy_extensions=copy\n[p]\ncommonName=supplied\n"
	    "organizationName=optional\n")):
		with open(os.path.join(cwd, f), "w") as fp:
			fp.write(text)
	_openssl("ca", "-batch", "-config", "ca.cnf", "-cert", ca + ".pem",
	    "-keyfile", ca + ".key", "-in", "expired.csr", "-out",
	    "expired.pem", "-notext", "-startdate", "20200101000000Z",
	    "-enddate", "20200201000000Z", cwd=cwd)


def certs():
	"""Made once per run: {name: path} for NAME.pem / NAME.key."""
	global _certs
	if _certs is not None:
		return _certs
	d = tempfile.mkdtemp(prefix="ingressd-tls-")
	for ca in ("ca", "ca2"):
		_openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
		    "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj",
		    "/CN=ingressd test %s" % ca, "-keyout", ca + ".key", "-out",
		    ca + ".pem", cwd=d)
	_ec_req(d, "a", "a.test", "DNS:a.test,IP:127.0.0.1")
	_sign(d, "a", "ca")
	_ec_req(d, "b", "b.test", "DNS:b.test")
	_sign(d, "b", "ca")
	_ec_req(d, "client", "client.test", ext="clientAuth")
	_sign(d, "client", "ca")
	_ec_req(d, "replica", "replica.test", "DNS:replica.test")
	_sign(d, "replica", "ca")
	_ec_req(d, "rogue", "replica.test", "DNS:replica.test")
	_sign(d, "rogue", "ca2")
	_expired(d, "ca")
	_certs = {"dir": d}
	for n in ("ca", "ca2", "a", "b", "client", "replica", "rogue",
	    "expired"):
		_certs[n] = (os.path.join(d, n + ".pem"),
		    os.path.join(d, n + ".key"))
	return _certs


def tls_conf(names=("a", "b"), **extra):
	c = certs()
	t = {"certificates": [{"cert": c[n][0], "key": c[n][1]} for n in names]}
	t.update(extra)
	return t


class TLSDaemon(Daemon):
	"""A Daemon with a plain listener (the harness's health checks) and a
	TLS one on self.tls_port."""

	def __init__(self, tls=None, overrides=None, **kw):
		self.tls_port = free_port()
		port = free_port()
		o = {"listen": ["127.0.0.1:%d" % port, {"address":
		    "127.0.0.1:%d" % self.tls_port, "tls": tls or tls_conf()}]}
		o.update(overrides or {})
		super().__init__(o, **kw)
		self.port = port


def client_ctx(cert=None, alpn=None, ca="ca"):
	ctx = ssl.create_default_context(cafile=certs()[ca][0])
	if cert:
		ctx.load_cert_chain(*certs()[cert])
	if alpn:
		ctx.set_alpn_protocols(alpn)
	return ctx


def tls_connect(port, name="a.test", ctx=None, session=None, timeout=5):
	raw = socket.create_connection(("127.0.0.1", port), timeout)
	return (ctx or client_ctx()).wrap_socket(raw, server_hostname=name,
	    session=session)


def https(port, path, name="a.test", ctx=None, headers=None, conn=None,
    session=None):
	c = conn or http.client.HTTPSConnection("127.0.0.1", port, timeout=5,
	    context=ctx or client_ctx())
	if conn is None:
		# http.client's SNI and host check use the name asked for.
		c.sock = tls_connect(port, name, ctx, session=session)
	c.request("GET", path, headers=headers or {"Host": name})
	r = c.getresponse()
	return r.status, r.read(), c


def peer_cn(s):
	for rdn in s.getpeercert()["subject"]:
		for k, v in rdn:
			if k == "commonName":
				return v
	return None


class Listener(unittest.TestCase):

	def test_https_end_to_end(self):
		with TLSDaemon() as d:
			st, body, c = https(d.tls_port, "/echo/x")
			self.assertEqual(st, 200)
			h = json.loads(body)["headers"]
			self.assertEqual(h["x-forwarded-proto"], "https")
			self.assertNotIn("x-client-cert-subject", h)
			c.close()
			# The plain listener of the same daemon says http.
			r = d.request("GET", "/echo/x")
			self.assertEqual(r.json()["headers"]["x-forwarded-proto"],
			    "http")
			# curl, verifying against the test CA.
			out = subprocess.run(["curl", "-sS", "--http1.1",
			    "--cacert", certs()["ca"][0], "--resolve",
			    "a.test:%d:127.0.0.1" % d.tls_port, "-o", "/dev/null",
			    "-w", "%{http_code} %{ssl_verify_result}",
			    "https://a.test:%d/hello" % d.tls_port],
			    capture_output=True, text=True, timeout=10)
			self.assertEqual(out.stdout, "200 0", out.stderr)
			s = scrape(d.admin_port)
			self.assertGreaterEqual(metric(s,
			    "ingressd_tls_handshakes_total", version="TLSv1.3"), 2)

	def test_sni_chooses_certificate(self):
		with TLSDaemon() as d:
			for name, cn in (("a.test", "a.test"), ("b.test", "b.test")):
				s = tls_connect(d.tls_port, name)
				self.assertEqual(peer_cn(s), cn)
				s.close()
			# No match: the first certificate (verification off, as
			# its names do not cover c.test).
			ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
			ctx.check_hostname = False
			ctx.verify_mode = ssl.CERT_NONE
			s = ctx.wrap_socket(socket.create_connection(("127.0.0.1",
			    d.tls_port), 5), server_hostname="c.test")
			der = s.getpeercert(binary_form=True)
			s.close()
			with open(certs()["a"][0]) as f:
				self.assertEqual(der, ssl.PEM_cert_to_DER_cert(f.read()))

	def test_alpn(self):
		with TLSDaemon() as d:
			for offer, want in ((["h2", "http/1.1"], "h2"),
			    (["http/1.1"], "http/1.1"), (["spdy/3"], None)):
				s = tls_connect(d.tls_port, ctx=client_ctx(alpn=offer))
				self.assertEqual(s.selected_alpn_protocol(), want, offer)
				s.close()
			# A listener that offers only http/1.1.
		with TLSDaemon(tls_conf(alpn=["http/1.1"])) as d:
			s = tls_connect(d.tls_port, ctx=client_ctx(alpn=["h2",
			    "http/1.1"]))
			self.assertEqual(s.selected_alpn_protocol(), "http/1.1")
			s.close()

	def test_h2_over_tls(self):
		"""ALPN h2 reaches the HTTP/2 edge through the TLS socket: curl
		speaks HTTP/2, the replica sees X-Forwarded-Proto https, and a
		verified client certificate's subject travels as with HTTP/1.1
		(a client's own copy never does)."""
		ca = certs()["ca"][0]
		with TLSDaemon(tls_conf(client_ca=ca,
		    verify_client="optional")) as d:
			base = ["curl", "-sS", "--http2", "--cacert", ca,
			    "--resolve", "a.test:%d:127.0.0.1" % d.tls_port,
			    "-H", "X-Client-Cert-Subject: forged"]
			out = subprocess.run(base + ["-w", "\n%{http_version}",
			    "https://a.test:%d/echo/x" % d.tls_port],
			    capture_output=True, text=True, timeout=10)
			body, _, ver = out.stdout.rpartition("\n")
			self.assertEqual(ver, "2", out.stderr)
			h = json.loads(body)["headers"]
			self.assertEqual(h["x-forwarded-proto"], "https")
			self.assertNotIn("x-client-cert-subject", h)
			cl = certs()["client"]
			out = subprocess.run(base + ["--cert", cl[0], "--key",
			    cl[1], "https://a.test:%d/echo/x" % d.tls_port],
			    capture_output=True, text=True, timeout=10)
			h = json.loads(out.stdout)["headers"]
			self.assertIn("CN=", h["x-client-cert-subject"])
			self.assertNotIn("forged", h["x-client-cert-subject"])

	def test_session_resumption(self):
		with TLSDaemon() as d:
			ctx = client_ctx()
			st, _, c = https(d.tls_port, "/hello", ctx=ctx)
			self.assertEqual(st, 200)
			sess = c.sock.session	# tickets arrive after the handshake
			self.assertFalse(c.sock.session_reused)
			c.close()
			self.assertTrue(sess.has_ticket)
			s = tls_connect(d.tls_port, ctx=ctx, session=sess)
			self.assertTrue(s.session_reused)
			s.close()
			self.assertGreaterEqual(metric(scrape(d.admin_port),
			    "ingressd_tls_handshakes_resumed_total"), 1)
			# TLS 1.3: a resumed connection gets a fresh ticket, so a
			# client that always resumes with its newest one (wrk,
			# browsers) keeps resuming instead of every other time.
			for _ in range(3):
				st, _, c = https(d.tls_port, "/hello", ctx=ctx,
				    session=sess)
				self.assertTrue(c.sock.session_reused)
				new = c.sock.session
				c.close()
				self.assertNotEqual(new.id, sess.id)
				sess = new

	def test_reload_swaps_certificate_keepalive_stays(self):
		with TLSDaemon(tls_conf(("a",))) as d:
			st, _, c = https(d.tls_port, "/hello")
			self.assertEqual(st, 200)
			self.assertEqual(peer_cn(c.sock), "a.test")
			o = dict(d.conf)
			o["listen"] = [d.conf["listen"][0], {"address":
			    "127.0.0.1:%d" % d.tls_port, "tls": tls_conf(("b",))}]
			reload(d, conf=dict(harness.base_conf(), **o))
			wait_log(d, "reload 1: every worker switched")
			# New connections: the new certificate.
			s = tls_connect(d.tls_port, "b.test")
			self.assertEqual(peer_cn(s), "b.test")
			s.close()
			# The keep-alive connection stayed, on its certificate.
			st, _, c = https(d.tls_port, "/hello", conn=c)
			self.assertEqual(st, 200)
			self.assertEqual(peer_cn(c.sock), "a.test")
			c.close()

	def test_reload_bad_certificate_keeps_old(self):
		with TLSDaemon(tls_conf(("a",))) as d:
			for bad, why in (("expired", "certificate has expired"),
			    ("mismatch", "does not match")):
				t = tls_conf(("b",))
				if bad == "expired":
					t = tls_conf(("expired",))
				else:
					t["certificates"][0]["key"] = certs()["a"][1]
				o = dict(d.conf)
				o["listen"] = [d.conf["listen"][0], {"address":
				    "127.0.0.1:%d" % d.tls_port, "tls": t}]
				n = len(d.log_text())
				reload(d, conf=dict(harness.base_conf(), **o))
				log = wait_log(d, "reload failed", after=n)[n:]
				self.assertIn(why, log)
				f = t["certificates"][0]["cert" if bad == "expired"
				    else "key"]
				self.assertIn(f, log)
				s = tls_connect(d.tls_port, "a.test")
				self.assertEqual(peer_cn(s), "a.test")
				s.close()
			self.assertEqual(metric(scrape(d.admin_port),
			    "ingressd_tls_reloads_refused_total"), 2)

	def test_check_names_mismatched_key(self):
		c = certs()
		t = tls_conf(("a",))
		t["certificates"][0]["key"] = c["b"][1]
		d = TLSDaemon(t)	# not started: -t only
		out = subprocess.run([harness.binary("ingressd"), "-t", "-c",
		    d.conf_path], capture_output=True, text=True, timeout=10)
		self.assertNotEqual(out.returncode, 0)
		self.assertIn("listen[1].tls", out.stderr)
		self.assertIn(c["b"][1], out.stderr)
		self.assertIn("does not match", out.stderr)

	def test_handshake_timeout(self):
		with TLSDaemon(tls_conf(handshake_timeout=0.5)) as d:
			s = socket.create_connection(("127.0.0.1", d.tls_port), 5)
			t0 = time.monotonic()
			s.settimeout(5)
			self.assertEqual(s.recv(100), b"")	# closed on us
			took = time.monotonic() - t0
			s.close()
			self.assertGreater(took, 0.4)
			self.assertLess(took, 3.0)
			self.assertEqual(metric(scrape(d.admin_port),
			    "ingressd_tls_handshake_failures_total",
			    reason="timeout"), 1)

	def test_garbage_and_truncated_hello(self):
		with TLSDaemon() as d:
			# Plain HTTP to the TLS port: refused, closed.
			g = socket.create_connection(("127.0.0.1", d.tls_port), 5)
			g.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			g.settimeout(5)
			while g.recv(4096):
				pass
			g.close()
			# Half a ClientHello, then silence: held open.
			bio_in, bio_out = ssl.MemoryBIO(), ssl.MemoryBIO()
			obj = client_ctx().wrap_bio(bio_in, bio_out,
			    server_hostname="a.test")
			try:
				obj.do_handshake()
			except ssl.SSLWantReadError:
				pass
			hello = bio_out.read()
			t = socket.create_connection(("127.0.0.1", d.tls_port), 5)
			t.sendall(hello[:len(hello) // 2])
			# The worker still serves others at once.
			t0 = time.monotonic()
			for _ in range(5):
				st, _, c = https(d.tls_port, "/hello")
				self.assertEqual(st, 200)
				c.close()
			self.assertLess(time.monotonic() - t0, 2.0)
			t.close()
			s = scrape(d.admin_port)
			self.assertGreaterEqual(metric(s,
			    "ingressd_tls_handshake_failures_total",
			    reason="version") + metric(s,
			    "ingressd_tls_handshake_failures_total",
			    reason="protocol"), 1)

	def test_client_certificates(self):
		path = None
		with TLSDaemon(tls_conf(client_ca=certs()["ca"][0],
		    verify_client="require")) as d:
			path = os.path.join(d.tmpdir, "access.json")
			o = dict(d.conf)
			o.update({"access_log": path, "access_log_format": "json"})
			reload(d, conf=dict(harness.base_conf(), **o))
			wait_log(d, "reload 1: every worker switched")
			# With the client certificate: the verified subject, and
			# a client's own copy of the header is dropped.
			st, body, c = https(d.tls_port, "/echo/m", ctx=client_ctx(
			    "client"), headers={"Host": "a.test",
			    "X-Client-Cert-Subject": "CN=forged"})
			self.assertEqual(st, 200)
			subj = json.loads(body)["headers"]["x-client-cert-subject"]
			self.assertIn("CN=client.test", subj)
			self.assertNotIn("forged", subj)
			c.close()
			# Without: the handshake is refused (TLS 1.3 reports it
			# at the first read).
			with self.assertRaises((ssl.SSLError, OSError,
			    http.client.HTTPException)):
				https(d.tls_port, "/echo/m")
			rec = wait_until(lambda: os.path.exists(path) and [json.loads(
			    l) for l in open(path).read().splitlines()], 3.0)
			self.assertEqual(rec[0]["tls_version"], "TLSv1.3")
			self.assertEqual(rec[0]["tls_sni"], "a.test")
			self.assertIn("CN=client.test", rec[0]["client_cert_subject"])
			self.assertTrue(rec[0]["tls_cipher"])
			wait_until(lambda: metric(scrape(d.admin_port),
			    "ingressd_tls_handshake_failures_total",
			    reason="no_client_cert") == 1, 3.0)
			# The plain listener drops a forged subject too.
			r = d.request("GET", "/echo/p", {"X-Client-Cert-Subject":
			    "CN=forged"})
			self.assertNotIn("x-client-cert-subject",
			    r.json()["headers"])


class AdminDaemon(Daemon):
	"""A Daemon whose admin listener is TLS (self.admin_port), requiring
	a client certificate from the test CA unless tls says otherwise."""

	def __init__(self, tls=None, overrides=None, **kw):
		port = free_port()
		o = {"admin": {"address": "127.0.0.1:%d" % port, "tls": tls or
		    tls_conf(("a",), client_ca=certs()["ca"][0],
		    verify_client="require")}}
		o.update(overrides or {})
		super().__init__(o, **kw)
		self.admin_port = port

	def deployments(self, port=None):
		"""The harness's view (stop() checks it), with the client
		certificate."""
		if port is not None:
			return super().deployments(port)
		ctx = client_ctx("client")
		ctx.check_hostname = False	# a reload may change the name
		st, body, _ = admin_https(self.admin_port, "GET",
		    "/-/deployments", ctx)
		if st != 200:
			raise AssertionError("/-/deployments: %d" % st)
		d = json.loads(body)
		for dep in d.values():
			for r in dep.get("replicas", []):
				if isinstance(r.get("pid"), int) and r["pid"] > 0:
					self.seen_pids.add(r["pid"])
		return d


def admin_https(port, method, path, ctx, body=None):
	c = http.client.HTTPSConnection("127.0.0.1", port, timeout=5,
	    context=ctx)
	c.sock = tls_connect(port, "a.test", ctx)
	c.request(method, path, body=body, headers={"Host": "a.test"})
	r = c.getresponse()
	out = r.status, r.read(), peer_cn(c.sock)
	c.close()
	return out


class Admin(unittest.TestCase):
	"""Mutual TLS on the admin listener: the registration API for other
	hosts, with the verified subject in the access log."""

	def test_admin_requires_client_certificate(self):
		path = os.path.join(tempfile.mkdtemp(prefix="ingressd-tls-"),
		    "access.json")
		with Replica("echo", rid="r1") as rep, AdminDaemon(overrides={
		    "access_log": path, "access_log_format": "json",
		    "routes": [{"prefix": "/models/", "deployment_from":
		    "path"}], "deployments": {}}) as d:
			ctx = client_ctx("client")
			st, body, _ = admin_https(d.admin_port, "GET",
			    "/-/deployments", ctx)
			self.assertEqual(st, 200, body)
			# Without a certificate: the handshake is refused (TLS
			# 1.3 reports it at the first read).
			with self.assertRaises((ssl.SSLError, OSError,
			    http.client.HTTPException)):
				admin_https(d.admin_port, "GET", "/-/deployments",
				    client_ctx())
			# A certificate from another CA: refused too.
			rogue = client_ctx()
			rogue.load_cert_chain(*certs()["rogue"])
			with self.assertRaises((ssl.SSLError, OSError,
			    http.client.HTTPException)):
				admin_https(d.admin_port, "GET", "/-/deployments",
				    rogue)
			# Registration over mutual TLS, then served publicly.
			st, body, _ = admin_https(d.admin_port, "PUT",
			    "/-/deployments/m/replicas/r1", ctx, json.dumps(
			    {"address": rep.listen}).encode())
			self.assertEqual(st, 200, body)
			self.assertEqual(json.loads(body)["replica"], "r1")
			r = d.request("GET", "/models/m/x")
			self.assertEqual(r.status, 200, r.body)
			# The admin requests' log records name the client (both
			# of them: under valgrind the second is written late).
			def admin_records():
				if not os.path.exists(path):
					return None
				rec = [json.loads(l) for l in
				    open(path).read().splitlines() if
				    "/-/deployments" in l]
				return rec if len(rec) >= 2 else None
			rec = wait_until(admin_records, 10.0) or []
			self.assertGreaterEqual(len(rec), 2)
			for x in rec:
				self.assertIn("CN=client.test",
				    x["client_cert_subject"])
				self.assertEqual(x["tls_version"], "TLSv1.3")

	def test_admin_reload_swaps_and_refuses(self):
		with AdminDaemon(tls_conf(("a",))) as d:
			_, _, cn = admin_https(d.admin_port, "GET",
			    "/-/deployments", client_ctx())
			self.assertEqual(cn, "a.test")
			adm = dict(d.conf["admin"])
			# A bad certificate: refused, the running one stays.
			t = tls_conf(("b",))
			t["certificates"][0]["key"] = certs()["a"][1]
			n = len(d.log_text())
			reload(d, {"admin": dict(adm, tls=t)})
			log = wait_log(d, "reload failed", after=n)[n:]
			self.assertIn("admin.tls", log)
			self.assertIn("does not match", log)
			s = tls_connect(d.admin_port, "a.test")
			self.assertEqual(peer_cn(s), "a.test")
			s.close()
			# A good one: new connections get it.
			reload(d, {"admin": dict(adm, tls=tls_conf(("b",)))})
			wait_log(d, "every worker switched")
			s = tls_connect(d.admin_port, "b.test")
			self.assertEqual(peer_cn(s), "b.test")
			s.close()

	def test_admin_check_names_mismatched_key(self):
		t = tls_conf(("a",))
		t["certificates"][0]["key"] = certs()["b"][1]
		d = AdminDaemon(t)	# not started: -t only
		out = subprocess.run([harness.binary("ingressd"), "-t", "-c",
		    d.conf_path], capture_output=True, text=True, timeout=10)
		self.assertNotEqual(out.returncode, 0)
		self.assertIn("admin.tls", out.stderr)
		self.assertIn(certs()["b"][1], out.stderr)
		self.assertIn("does not match", out.stderr)


def start_replica(cmd):
	log = harness.log_path("replica-tls")
	f = open(log, "wb")
	p = subprocess.Popen(cmd, cwd=harness.ROOT, stdin=subprocess.DEVNULL,
	    stdout=f, stderr=f)
	harness._register(p)
	return p, f


class Wire(unittest.TestCase):

	def run_replica(self, cmd_for, ca):
		c = certs()
		port = free_port()
		addr = "127.0.0.1:%d" % port
		p, f = start_replica(cmd_for(addr) + ["--tls-cert",
		    c["replica"][0], "--tls-key", c["replica"][1],
		    "--tls-client-ca", c["ca"][0]])
		try:
			wait_until(lambda: socket.create_connection(("127.0.0.1",
			    port), 0.5).close() or True, 10.0, what="replica")
			dep = {"endpoints": [addr], "tls": {"ca": c[ca][0],
			    "cert": c["client"][0], "key": c["client"][1],
			    "server_name": "replica.test"}}
			with Daemon({"deployments": {"r": dep}, "routes": [
			    {"prefix": "/r", "deployment": "r"}],
			    "timeouts": {"connect": 1, "queue": 1}}) as d:
				r = d.request("GET", "/r/x")
				return r, d.log_text()
		finally:
			harness.stop_proc(p)
			f.close()

	def c_echo(self, addr):
		return [harness.binary("replica-echo"), "--listen", addr, "--id",
		    "c-tls"]

	def py_echo(self, addr):
		return [sys.executable, os.path.join(harness.ROOT,
		    "python/examples/echo.py"), "--listen", addr, "--id", "py-tls"]

	def test_c_replica_mutual_tls(self):
		r, _ = self.run_replica(self.c_echo, "ca")
		self.assertEqual(r.status, 200, r.body)

	def test_python_replica_mutual_tls(self):
		r, _ = self.run_replica(self.py_echo, "ca")
		self.assertEqual(r.status, 200, r.body)

	def test_wrong_ca_refused(self):
		for cmd in (self.c_echo, self.py_echo):
			r, log = self.run_replica(cmd, "ca2")
			self.assertIn(r.status, (502, 503), r.body)
			self.assertIn("TLS: ", log)
			self.assertIn("certificate verify failed", log)


if __name__ == "__main__":
	unittest.main()
