"""HTTP upstreams (issue 16): unmodified HTTP/1.1 servers as replicas
("protocol": "http"), with real backends on loopback: nginx, a FastAPI
app under uvicorn, Python's ThreadingHTTPServer, and a raw-socket hostile
backend for each framing fault."""

import json
import os
import socket
import threading
import time
import unittest

from harness import (Conn, Daemon, HTTPError, RssSampler, base_conf,
    free_port, metric, request, scrape, timeout, wait_until)
from http_backends import (GOOD, Hostile, Nginx, Origin, Scripted, Uvicorn,
    wait_ready)

SANITIZED = os.environ.get("INGRESSD_SANITIZED") == "1"


def http_conf(deployments, routes=None, **top):
	"""The default conf with these HTTP deployments, one route each
	(/NAME, prefix stripped)."""
	c = base_conf()
	c["deployments"] = deployments
	c["routes"] = routes or [{"prefix": "/" + n, "deployment": n,
	    "strip_prefix": True} for n in deployments]
	c.update(top)
	return c


def big_body_conf(address):
	c = http_conf({"py": http_dep(address)})
	c["limits"]["max_body"] = 1 << 30
	return c


def http_dep(*addresses, **extra):
	d = {"endpoints": list(addresses), "protocol": "http"}
	d.update(extra)
	return d


class Backends(unittest.TestCase):

	def test_nginx_static_keepalive_reuse(self):
		"""200 requests to nginx through ingressd use a handful of
		upstream connections (nginx's $connection in X-Conn), and the
		replica shows as http with its pool in /-/deployments and
		/metrics."""
		with Nginx() as ng, Daemon(conf=http_conf({"web": http_dep(
		    ng.address)})) as d:
			conns = set()
			with d.conn() as c:
				for _ in range(200):
					r = c.request("GET", "/web/index.html")
					self.assertEqual(r.status, 200, r)
					self.assertEqual(r.body, b"hello from nginx\n")
					conns.add(r.header("x-conn"))
			self.assertLessEqual(len(conns), 2, conns)
			# Hop-by-hop fields from nginx are not passed on.
			self.assertIsNone(r.header("keep-alive"))
			rep = d.deployments()["web"]["replicas"][0]
			self.assertEqual(rep["protocol"], "http")
			self.assertEqual(rep["state"], "ready")
			self.assertEqual(rep["requests"], 200)
			self.assertGreaterEqual(rep["connections_open"], 1)
			self.assertEqual(rep["connections_idle"],
			    rep["connections_open"])
			m = scrape(d.admin_port)
			self.assertGreaterEqual(metric(m,
			    "ingressd_replica_connections", deployment="web",
			    replica=ng.address, state="open"), 1)
			self.assertEqual(metric(m, "ingressd_replica_up",
			    deployment="web", replica=ng.address), 1)

	def test_threading_origin_reuse_and_headers(self):
		"""Python's ThreadingHTTPServer: connections opened << requests
		(counted by the server), X-Forwarded-For and X-Request-Id sent,
		hop-by-hop request fields dropped."""
		with Origin() as o, Daemon(conf=http_conf({"py": http_dep(
		    o.address)})) as d:
			with d.conn() as c:
				for i in range(100):
					r = c.request("GET", "/py/hello", {
					    "Connection": "keep-alive, X-Drop",
					    "X-Drop": "1", "Keep-Alive": "5"})
					self.assertEqual(r.status, 200, r)
			j = r.json()
			self.assertEqual(j["headers"].get("x-forwarded-for"),
			    "127.0.0.1")
			self.assertEqual(j["headers"].get("x-request-id"),
			    r.header("x-request-id"))
			self.assertNotIn("x-drop", j["headers"])
			self.assertNotIn("keep-alive", j["headers"])
			self.assertLessEqual(len(o.events("conn")), 3,
			    o.events("conn"))

	def test_fastapi_json_and_sse_chunk_by_chunk(self):
		"""uvicorn + FastAPI: the JSON endpoint, and an SSE stream whose
		first event reaches the client within a few ms of being sent,
		each event as it comes."""
		with Uvicorn() as u, Daemon(conf=http_conf({"api": http_dep(
		    u.address)})) as d:
			r = d.request("GET", "/api/json?q=x")
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.json(), {"q": "x", "tokens": ["a", "b",
			    "c"]})
			with d.conn() as c:
				c.send(b"GET /api/sse?n=4&gap=0.3 HTTP/1.1\r\n"
				    b"Host: x\r\n\r\n")
				r = c.read_response("GET")
			self.assertEqual(r.status, 200, r)
			self.assertTrue(r.chunked, r)
			events = [json.loads(l[6:]) for l in
			    r.body.decode().split("\n") if l.startswith("data: ")]
			self.assertEqual([e["i"] for e in events], [0, 1, 2, 3])
			# One chunk per event, each arriving on its own.
			self.assertGreaterEqual(len(r.chunk_times), 4)
			gaps = [b[0] - a[0] for a, b in zip(r.chunk_times,
			    r.chunk_times[1:])]
			self.assertGreater(min(gaps[:3]), 0.2, gaps)
			# The first event: client's receive time vs sent time.
			first = r.chunk_times[0][0]
			lag = (time.time() - (time.monotonic() - first)) - \
			    events[0]["sent"]
			self.assertLess(lag, 0.05, lag)


class Health(unittest.TestCase):

	@timeout(30)
	def test_health_gated_warmup(self):
		"""No request reaches a replica before its health check passed:
		while /health answers 503 the request waits in the queue; the
		first 2xx lets it through."""
		with Origin() as o:
			o.set_health(False)
			dep = http_dep(o.address, health={"path": "/health",
			    "interval": 0.3, "timeout": 0.3})
			with Daemon(conf=http_conf({"py": dep})) as d:
				out = {}

				def client():
					out["r"] = d.request("GET", "/py/hello",
					    timeout=10)
				t = threading.Thread(target=client)
				t.start()
				wait_until(lambda: len(o.events("health")) >= 2,
				    5, what="two failing checks")
				self.assertEqual(o.events("request"), [])
				self.assertEqual(d.deployments()["py"]["replicas"][0]
				    ["state"], "down")
				o.set_health(True)
				t.join(10)
				self.assertEqual(out["r"].status, 200, out)
				first_ok = min(e["t"] for e in o.events("health")
				    if e["ok"])
				self.assertGreater(o.events("request")[0]["t"],
				    first_ok)
				rep = d.deployments()["py"]["replicas"][0]
				self.assertGreaterEqual(rep["health_failed"], 2)
				self.assertGreaterEqual(rep["health_passed"], 1)

	@timeout(30)
	def test_eviction_and_return(self):
		"""A ready replica whose checks fail twice leaves rotation
		(requests go to the other one), and comes back after a pass."""
		with Origin() as a, Origin() as b:
			h = {"path": "/health", "interval": 0.2, "timeout": 0.2}
			dep = http_dep(a.address, b.address, health=h)
			with Daemon(conf=http_conf({"py": dep})) as d:
				r = d.request("GET", "/py/hello")
				self.assertEqual(r.status, 200, r)
				wait_until(lambda: all(x["state"] == "ready" for x in
				    d.deployments()["py"]["replicas"]), 5,
				    what="both ready")
				a.set_health(False)
				wait_until(lambda: {x["address"]: x["state"] for x in
				    d.deployments()["py"]["replicas"]}[a.address] ==
				    "down", 5, what="a out of rotation")
				before = len(a.events("request"))
				for _ in range(20):
					r = d.request("GET", "/py/hello")
					self.assertEqual(r.status, 200, r)
					self.assertEqual(r.json()["port"], b.port)
				self.assertEqual(len(a.events("request")), before)
				a.set_health(True)
				wait_until(lambda: {x["address"]: x["state"] for x in
				    d.deployments()["py"]["replicas"]}[a.address] ==
				    "ready", 5, what="a back")
				ports = {d.request("GET", "/py/hello").json()["port"]
				    for _ in range(40)}
				self.assertIn(a.port, ports)

	def test_5xx_run_takes_replica_out(self):
		"""max_consecutive_5xx: a run of 5xx takes the replica out."""
		bad = (b"HTTP/1.1 500 Internal Server Error\r\n"
		    b"Content-Length: 4\r\n\r\nbad\n")
		with Hostile(bad) as hb:
			dep = http_dep(hb.address, max_consecutive_5xx=3,
			    queue_timeout=0.3)
			with Daemon(conf=http_conf({"h": dep})) as d:
				for _ in range(3):
					self.assertEqual(d.request("GET",
					    "/h/bad").status, 500)
				self.assertIn("3 5xx responses in a row",
				    d.log_text())


class Failures(unittest.TestCase):

	@timeout(40)
	def test_sigkill_under_load_only_in_flight_502(self):
		"""SIGKILL of one of two backends under load: only requests in
		flight on it get 502; everything else succeeds."""
		with Origin() as a, Origin() as b:
			dep = http_dep(a.address, b.address)
			with Daemon(conf=http_conf({"py": dep})) as d:
				statuses = []
				lock = threading.Lock()
				stop = threading.Event()

				def load():
					c = None
					for _ in range(100000):
						if stop.is_set():
							break
						try:
							c = c or Conn(d.port, timeout=10)
							s = c.request("GET",
							    "/py/slow?s=0.02").status
						except (OSError, HTTPError):
							s = -1
							c = None
						with lock:
							statuses.append(s)
					if c:
						c.close()
				threads = [threading.Thread(target=load)
				    for _ in range(8)]
				for t in threads:
					t.start()
				time.sleep(1.0)
				a.kill()
				time.sleep(1.0)
				stop.set()
				for t in threads:
					t.join(15)
			bad = [s for s in statuses if s != 200]
			self.assertGreater(len(statuses), 100)
			self.assertTrue(all(s == 502 for s in bad), bad)
			self.assertLessEqual(len(bad), 8, bad)

	@timeout(20)
	def test_deadline_504_and_backend_sees_close(self):
		"""The deadline gives 504 and closes the upstream connection:
		the backend sees the disconnect."""
		with Origin() as o:
			dep = http_dep(o.address, request_timeout=0.5)
			with Daemon(conf=http_conf({"py": dep})) as d:
				t0 = time.monotonic()
				r = d.request("GET", "/py/slow?s=5")
				self.assertEqual(r.status, 504, r)
				self.assertLess(time.monotonic() - t0, 2.0)
				ev = wait_until(lambda: o.events("client_closed"), 3,
				    what="backend sees the close")
				self.assertEqual(ev[0]["path"], "/slow?s=5")

	@timeout(20)
	def test_client_gone_closes_upstream(self):
		with Origin() as o:
			with Daemon(conf=http_conf({"py": http_dep(
			    o.address)})) as d:
				c = d.conn()
				c.send(b"GET /py/slow?s=5 HTTP/1.1\r\nHost: x\r\n\r\n")
				wait_until(lambda: o.events("request"), 3,
				    what="request at the backend")
				c.close()
				wait_until(lambda: o.events("client_closed"), 3,
				    what="backend sees the close")

	def test_never_written_retried_elsewhere(self):
		"""A replica that refuses connections: requests attached to it
		were never written, so they go to the other replica."""
		with Origin() as o:
			dead = "127.0.0.1:%d" % free_port()	# nobody listens
			dep = http_dep(dead, o.address)
			with Daemon(conf=http_conf({"py": dep})) as d:
				for _ in range(30):
					r = d.request("GET", "/py/hello")
					self.assertEqual(r.status, 200, r)

	def test_registered_http_replica(self):
		"""PUT {"protocol": "http"} makes any HTTP server a replica of a
		name with no conf entry; an unknown protocol is refused with a
		reason."""
		with Origin() as o, Daemon(conf=http_conf({}, routes=[{
		    "prefix": "/models/", "deployment_from": "path"}])) as d:
			put = json.dumps({"address": o.address,
			    "protocol": "http"}).encode()
			r = request(d.admin_port, "PUT",
			    "/-/deployments/m/replicas/r1", body=put)
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.json()["protocol"], "http")
			r = d.request("GET", "/models/m/hello")
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.json()["path"], "/hello")
			rep = d.deployments()["m"]["replicas"][0]
			self.assertEqual((rep["id"], rep["protocol"]), ("r1",
			    "http"))
			r = request(d.admin_port, "PUT",
			    "/-/deployments/m/replicas/r2", body=json.dumps({
			    "address": o.address, "protocol": "spdy"}).encode())
			self.assertEqual(r.status, 400, r)
			self.assertIn('"wire", "http" or "h2c"', r.json()["error"])

	def test_conf_protocol_errors(self):
		for dep, want in (
		    ({"endpoints": ["127.0.0.1:1"], "protocol": "spdy"},
		    'must be "wire", "http", "h2c" or "h2"'),
		    ({"endpoints": ["127.0.0.1:1"], "health": {"path": "/h"}},
		    'need "protocol": "http"'),
		    ({"endpoints": ["127.0.0.1:1"], "protocol": "http",
		    "health": {"path": "h"}}, "must be a path")):
			d = Daemon(conf=http_conf({"x": dep}), expect_exit=None)
			with self.assertRaises(AssertionError):
				d.start()
			d.stop(check=False)
			self.assertIn("deployments.x", d.log_text())
			self.assertIn(want, d.log_text())


class Flow(unittest.TestCase):

	@timeout(60)
	def test_200mb_down_slow_reader_rss_bounded(self):
		"""200 MB from the origin to a client reading at ~50 MB/s: the
		body streams with backpressure, ingressd's RSS stays bounded."""
		n = 200 * 1024 * 1024
		with Origin() as o, Daemon(conf=http_conf({"py": http_dep(
		    o.address)})) as d:
			d.request("GET", "/py/hello")
			rss = RssSampler(d.proc.pid).start()
			s = socket.create_connection(("127.0.0.1", d.port))
			s.sendall(b"GET /py/big?n=%d HTTP/1.1\r\nHost: x\r\n\r\n" % n)
			got, t0 = 0, time.monotonic()
			head = b""
			while b"\r\n\r\n" not in head:
				head += s.recv(4096)
			got = len(head.split(b"\r\n\r\n", 1)[1])
			while got < n:
				d_ = s.recv(1 << 20)
				if not d_:
					break
				got += len(d_)
				ahead = got / 50e6 - (time.monotonic() - t0)
				if ahead > 0:
					time.sleep(ahead)
			s.close()
			peak = rss.stop()
			self.assertEqual(got, n)
			self.assertIn(b"200 OK", head)
			if not SANITIZED:	# ASan: RSS is its shadow and quarantine
				self.assertLess(peak, 40 * 1024, "peak RSS %d kB" % peak)

	@timeout(60)
	def test_200mb_up_slow_backend_rss_bounded(self):
		"""200 MB upload (chunked) to an origin reading at ~50 MB/s."""
		n = 200 * 1024 * 1024
		with Origin() as o, Daemon(conf=big_body_conf(o.address)) as d:
			d.request("GET", "/py/hello")
			rss = RssSampler(d.proc.pid).start()
			s = socket.create_connection(("127.0.0.1", d.port))
			s.sendall(b"POST /py/upload?rate=50000000 HTTP/1.1\r\n"
			    b"Host: x\r\nTransfer-Encoding: chunked\r\n\r\n")
			block = b"y" * (1 << 20)
			for _ in range(n // len(block)):
				s.sendall(b"%x\r\n" % len(block) + block + b"\r\n")
			s.sendall(b"0\r\n\r\n")
			s.settimeout(30)
			resp = b""
			while b"}" not in resp:
				d_ = s.recv(65536)
				if not d_:
					break
				resp += d_
			s.close()
			peak = rss.stop()
			self.assertIn(b"200 OK", resp)
			body = json.loads(resp.split(b"\r\n\r\n", 1)[1]
			    .split(b"\r\n")[-1] if b"chunked" in resp.lower()
			    else resp.split(b"\r\n\r\n", 1)[1])
			self.assertEqual(body["length"], n)
			if not SANITIZED:	# ASan: RSS is its shadow and quarantine
				self.assertLess(peak, 40 * 1024, "peak RSS %d kB" % peak)


# Each fault: the bytes a hostile backend answers GET /bad with.
FAULTS = {
	"cl_and_te": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	    b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"duplicate_cl": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	    b"Content-Length: 5\r\n\r\nhello",
	"bad_chunking": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    b"\r\nzz\r\nhello\r\n0\r\n\r\n",
	"obs_fold": b"HTTP/1.1 200 OK\r\nX-A: 1\r\n continued\r\n"
	    b"Content-Length: 5\r\n\r\nhello",
	"nul_in_field": b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n"
	    b"Content-Length: 5\r\n\r\nhello",
	"bare_cr": b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\n"
	    b"Content-Length: 5\r\n\r\nhello",
	"oversized_head": b"HTTP/1.1 200 OK\r\n" +
	    b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 1000)
	    for i in range(80)) + b"Content-Length: 5\r\n\r\nhello",
	"1xx_101": b"HTTP/1.1 101 Switching Protocols\r\n"
	    b"Upgrade: websocket\r\nConnection: upgrade\r\n\r\n",
	"bytes_after_response": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	    b"\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSMUGG",
}


class HostileResponses(unittest.TestCase):

	def check_fault(self, bad, head_first=False):
		"""502, or (head_first: the fault is in the body, after the head
		went out) the client connection cut."""
		with Hostile(bad) as hb, Daemon(conf=http_conf({"h": http_dep(
		    hb.address, queue_timeout=3)})) as d:
			self.assertEqual(d.request("GET", "/h/good").status, 200)
			if head_first:
				with self.assertRaises(HTTPError):
					d.request("GET", "/h/bad")
			else:
				r = d.request("GET", "/h/bad")
				self.assertEqual(r.status, 502, r)
			wait_until(hb.closed_after_bad, 3,
			    what="connection discarded")
			self.assertIn("bad response from replica", d.log_text())
			self.assertIn(hb.address, d.log_text())
			for _ in range(3):
				r = d.request("GET", "/h/good")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"good\n")

	def test_each_framing_fault_502_and_discarded(self):
		for name, bad in FAULTS.items():
			if name == "bytes_after_response":
				continue
			with self.subTest(fault=name):
				self.check_fault(bad, name == "bad_chunking")

	def test_bytes_after_complete_response_never_leak(self):
		"""The client gets the complete response; the extra bytes are
		never seen by the next client: the connection is discarded."""
		with Hostile(FAULTS["bytes_after_response"]) as hb, \
		    Daemon(conf=http_conf({"h": http_dep(hb.address)})) as d:
			with d.conn() as c:
				r = c.request("GET", "/h/bad")
				self.assertEqual(r.body, b"hello")
				r = c.request("GET", "/h/good")
				self.assertEqual(r.body, b"good\n")
			wait_until(hb.closed_after_bad, 3,
			    what="connection discarded")

	def test_head_response_with_body(self):
		bad = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
		with Hostile(bad) as hb, Daemon(conf=http_conf({"h": http_dep(
		    hb.address)})) as d:
			c = d.conn()
			c.send(b"HEAD /h/bad HTTP/1.1\r\nHost: x\r\n\r\n")
			r = c.read_response("HEAD")
			self.assertEqual(r.status, 200)
			c.close()
			wait_until(hb.closed_after_bad, 3,
			    what="connection discarded")
			self.assertEqual(d.request("GET", "/h/good").body,
			    b"good\n")

	def test_100_and_103_dropped(self):
		ok = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n"
		    b"Link: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\n"
		    b"Content-Length: 2\r\n\r\nok")
		with Hostile(ok) as hb, Daemon(conf=http_conf({"h": http_dep(
		    hb.address)})) as d:
			r = d.request("GET", "/h/bad")
			self.assertEqual((r.status, r.body), (200, b"ok"))


class PoolRaces(unittest.TestCase):
	"""What a keep-alive pool must survive: the server closing an idle
	connection as a request goes out, stray bytes on an idle connection,
	a connect that never completes."""

	@staticmethod
	def close_second(s, rec, path):
		"""Answer a connection's first request; close it on the second
		without a byte (as a server whose idle timeout fired just as
		the request was written)."""
		if len(rec["paths"]) >= 2:
			return False
		s.sendall(GOOD)
		return True

	def race(self, **extra):
		with Scripted(self.close_second) as sb, Daemon(conf=http_conf(
		    {"h": http_dep(sb.address, **extra)})) as d:
			with d.conn() as c:
				self.assertEqual(c.request("GET", "/h/a").status, 200)
				r = c.request("GET", "/h/b")
			return r, sb.connections()

	def test_idempotent_retry_opt_in(self):
		"""retry_idempotent: a GET sent on a reused connection that the
		server closes before any response byte goes again on a new
		connection (200); without the key, 502 as before."""
		r, n = self.race(retry_idempotent=True)
		self.assertEqual((r.status, r.body), (200, b"good\n"), r)
		self.assertEqual(n, 2)
		r, _ = self.race()
		self.assertEqual(r.status, 502, r)

	def test_retry_idempotent_not_for_post(self):
		"""A POST is not idempotent: 502 even with the key."""
		with Scripted(self.close_second) as sb, Daemon(conf=http_conf(
		    {"h": http_dep(sb.address, retry_idempotent=True)})) as d:
			with d.conn() as c:
				self.assertEqual(c.request("GET", "/h/a").status, 200)
				r = c.request("POST", "/h/b", body=b"x")
			self.assertEqual(r.status, 502, r)

	def test_stray_bytes_on_idle_connection_discarded(self):
		"""Bytes that come on an idle pooled connection after a complete
		response (in a later read) discard it: the next request, on the
		same client connection, gets a clean 200 on a new one."""
		def stray(s, rec, path):
			s.sendall(GOOD)
			if path == "/stray":
				def later():
					time.sleep(0.1)
					try:
						s.sendall(b"HTTP/1.1 200 OK\r\n"
						    b"Content-Length: 5\r\n\r\nSMUGG")
					except OSError:
						pass
				threading.Thread(target=later, daemon=True).start()
			return True
		with Scripted(stray) as sb, Daemon(conf=http_conf(
		    {"h": http_dep(sb.address)})) as d:
			with d.conn() as c:
				self.assertEqual(c.request("GET", "/h/stray").body,
				    b"good\n")
				time.sleep(0.4)
				r = c.request("GET", "/h/next")
				self.assertEqual((r.status, r.body), (200, b"good\n"),
				    r)
			self.assertIn("bytes on an idle connection: discarded",
			    d.log_text())
			self.assertEqual(sb.connections(), 2)
			# Only that connection: the replica stays in rotation.
			self.assertNotIn("out of rotation", d.log_text())

	def test_warm_connect_timeout_backs_off(self):
		"""A replica whose connect never completes (a listener whose
		accept queue is full: the kernel drops the SYNs) is not left
		"connecting": timeouts.connect fails it as a check, the replica
		backs off and tries again."""
		ls = socket.socket()
		ls.bind(("127.0.0.1", 0))
		ls.listen(0)
		fill = []
		try:
			for _ in range(2):	# backlog 0 queues one; two to be sure
				f = socket.socket()
				f.setblocking(False)
				f.connect_ex(ls.getsockname())
				fill.append(f)
			time.sleep(0.1)
			addr = "127.0.0.1:%d" % ls.getsockname()[1]
			conf = http_conf({"h": http_dep(addr, queue_timeout=1)})
			conf["timeouts"]["connect"] = 0.3
			with Daemon(conf=conf) as d:
				# First use makes the pool (and its connect).
				r = d.request("GET", "/h/x")
				self.assertEqual(r.status, 503, r)
				rep = lambda: d.deployments()["h"]["replicas"][0]
				wait_until(lambda: rep()["health_failed"] >= 2, 5,
				    what="two connects timed out, counted as checks")
				self.assertIn("cannot connect: timed out",
				    d.log_text())
				self.assertNotEqual(rep()["state"], "ready")
		finally:
			for f in fill:
				f.close()
			ls.close()


if __name__ == "__main__":
	unittest.main()
