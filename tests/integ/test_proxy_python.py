"""Python replicas (python/ingressd_replica) behind the real daemon.

The deployments spawn the examples in python/examples/ and the test replica
tests/python/replica_app.py, which counts what its handlers went through
(GET /app/stats) so cancellation and concurrency can be seen from outside.
"""

import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
import unittest

import harness
from harness import Daemon, wait_until

ROOT = harness.ROOT


def py_spawn(script, replicas=1, args=(), **extra):
	d = {"spawn": {"command": [sys.executable, os.path.join(ROOT, script)]
	    + list(args), "replicas": replicas}}
	d.update(extra)
	return d


DEPLOYMENTS = {
	"echo": lambda: py_spawn("python/examples/echo.py", 2,
	    max_ongoing_requests=256),
	"app": lambda: py_spawn("tests/python/replica_app.py", 1,
	    max_ongoing_requests=256),
	"tokens": lambda: py_spawn("python/examples/tokens.py", 1),
	"model": lambda: py_spawn("python/examples/model.py", 1,
	    ("--load-ms", "300")),
}


class PyDaemon(Daemon):
	"""A daemon whose deployments are Python replicas.  The harness
	checks only processes named *replica* when it stops; this checks
	that every replica pid it saw, Python ones too, is gone."""

	def __init__(self, *names, **kw):
		conf = harness.base_conf()
		conf["routes"] = [{"prefix": "/" + n, "deployment": n}
		    for n in names]
		conf["deployments"] = {n: DEPLOYMENTS[n]() for n in names}
		Daemon.__init__(self, conf=conf, **kw)

	def stop(self, sig=signal.SIGTERM, timeout=5.0, check=True):
		if self.stopped:
			return self.exit_status
		rc = Daemon.stop(self, sig, timeout, check)
		alive = [p for p in sorted(self.seen_pids)
		    if not harness.wait_pid_dead(p, 2.0) and
		    "python" in harness.pid_cmdline(p)]
		for p in alive:
			try:
				os.kill(p, signal.SIGKILL)
			except OSError:
				pass
		if alive and check:
			raise AssertionError("python replicas still alive after "
			    "ingressd exited: %r" % alive)
		return rc


def app_stats(d):
	r = d.request("GET", "/app/stats", timeout=5.0)
	if r.status != 200:
		raise harness.HTTPError("stats: %r" % r)
	return r.json()


class PythonReplica(unittest.TestCase):

	def test_echo(self):
		with PyDaemon("echo") as d:
			r = d.request("POST", "/echo/small?x=1", {"Content-Type":
			    "text/plain", "X-A": "1"}, b"hello, world")
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.header("content-type"),
			    "application/json")
			j = r.json()
			self.assertEqual(j["method"], "POST")
			self.assertEqual(j["path"], "/echo/small")
			self.assertEqual(j["query"], "x=1")
			self.assertEqual(j["body_length"], 12)
			self.assertEqual(j["body"], "hello, world")
			self.assertEqual(j["headers"]["content-type"],
			    "text/plain")
			self.assertEqual(j["headers"]["x-a"], "1")
			self.assertEqual(j["headers"]["x-forwarded-for"],
			    "127.0.0.1")
			self.assertEqual(j["deployment"], "echo")
			self.assertIn(j["replica"], ("echo-0", "echo-1"))
			self.assertEqual(j["request_id"],
			    r.header("x-request-id"))
			# Keep-alive, a chunked body, a status of our choosing.
			with d.conn() as c:
				for i in range(5):
					r = c.request("PUT", "/echo/%d?status=201"
					    % i, chunks=[b"a" * 10, b"b" * 3000])
					self.assertEqual(r.status, 201, r)
					self.assertEqual(r.json()["body_length"],
					    3010)
			self.assertEqual(set(d.replica_pids("echo")),
			    {"echo-0", "echo-1"})

	@harness.timeout(90)
	def test_echo_raw_mirror_8mb(self):
		body = os.urandom(8 * 1024 * 1024)
		with PyDaemon("echo") as d, d.conn(timeout=30) as c:
			c.send(b"POST /echo/big?raw=1 HTTP/1.1\r\nHost: x\r\n"
			    b"Content-Length: %d\r\n\r\n" % len(body))
			t = c.send_in_thread(body)
			r = c.read_response()
			t.join(30)
			self.assertIsNone(t.error)
			self.assertEqual(r.status, 200, r)
			self.assertTrue(r.chunked)
			self.assertEqual(len(r.body), len(body))
			self.assertEqual(hashlib.sha256(r.body).digest(),
			    hashlib.sha256(body).digest())
			r = c.request("GET", "/echo/after")
			self.assertEqual(r.json()["path"], "/echo/after")

	def test_streaming_tokens(self):
		with PyDaemon("tokens") as d, d.conn() as c:
			t0 = time.monotonic()
			r = c.request("GET", "/tokens?prompt=hi+there&"
			    "max_tokens=6&ms=100")
			self.assertEqual(r.status, 200, r)
			self.assertTrue(r.chunked)
			self.assertEqual(r.header("content-type"),
			    "text/event-stream")
			events = [e for e in r.body.decode().split("\n\n") if e]
			self.assertEqual(events[-1], "data: [DONE]")
			toks = [json.loads(e[len("data: "):])["token"]
			    for e in events[:-1]]
			self.assertEqual(toks[:4], ["You", "said", "hi", "there"])
			self.assertEqual(len(toks), 6)
			# Tokens arrive as they are made, ~100 ms apart.
			self.assertGreaterEqual(len(r.chunk_times), 6)
			first, last = r.chunk_times[0][0], r.chunk_times[-1][0]
			# The first request also resolves and warms the handle
			# (connect, HELLO, PING): bounded, but not tight.
			self.assertLess(first - t0, 2.0)
			self.assertGreater(last - first, 0.35)
			r = c.request("GET", "/tokens?max_tokens=0")
			self.assertEqual(r.status, 400, r)

	def test_stream_chunks_arrive_as_sent(self):
		with PyDaemon("app") as d, d.conn() as c:
			r = c.request("GET", "/app/stream?n=5&ms=100")
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.body, b"".join(b"chunk %d\n" % i
			    for i in range(1, 6)))
			self.assertEqual(len(r.chunk_times), 5)
			self.assertGreater(r.chunk_times[-1][0] -
			    r.chunk_times[0][0], 0.3)

	def test_cancel_on_client_disconnect(self):
		with PyDaemon("app") as d:
			# A handler asleep when the client goes away.
			c = d.conn()
			c.send(harness.build_request("GET",
			    "/app/slow?ms=30000"))
			wait_until(lambda: app_stats(d)["active"] == 1, 10,
			    what="the handler to start")
			c.close()
			s = wait_until(lambda: (lambda s: s if s["cancelled"] == 1
			    and s["active"] == 0 else None)(app_stats(d)), 10,
			    what="CancelledError in the handler")
			self.assertEqual(s["completed"], 0)
			# A response streaming when the client goes away.
			c = d.conn()
			c.send(harness.build_request("GET",
			    "/app/stream?n=100000&ms=10"))
			c.read_head(harness.Response())
			c.close()
			wait_until(lambda: app_stats(d)["stream_closed"] == 1, 10,
			    what="the generator to be closed")
			r = d.request("GET", "/app/slow?ms=0")
			self.assertEqual(r.body, b"slept 0 ms\n")

	def test_handler_raises_500_and_replica_stays_up(self):
		with PyDaemon("app") as d:
			r = d.request("GET", "/app/slow?ms=0")
			self.assertEqual(r.status, 200, r)
			pid = d.replica_pids("app")["app-0"]
			r = d.request("GET", "/app/raise")
			self.assertEqual(r.status, 500, r)
			self.assertEqual(r.body, b"internal server error\n")
			# Failing after the head: the client's response is cut.
			with d.conn() as c:
				c.send(harness.build_request("GET",
				    "/app/raise-mid"))
				with self.assertRaises(harness.HTTPError):
					c.read_response()
				self.assertTrue(c.wait_closed(5))
			for _ in range(3):
				r = d.request("GET", "/app/slow?ms=0")
				self.assertEqual(r.status, 200, r)
			self.assertEqual(d.replica_pids("app")["app-0"], pid)
			rep = d.deployments()["app"]["replicas"][0]
			self.assertEqual(rep["restarts"], 0)
			# /raise failed in the handler; /raise-mid returned its
			# generator, which failed in the SDK's hands.
			s = app_stats(d)
			self.assertEqual((s["pid"], s["failed"]), (pid, 1))

	def test_100_concurrent_requests_on_one_replica(self):
		n = 100
		with PyDaemon("app") as d:
			self.assertEqual(app_stats(d)["active"], 0)
			conns = [d.conn(timeout=20) for _ in range(n)]
			results = [None] * n
			gate = threading.Barrier(n)

			def one(i):
				try:
					gate.wait(10)
					results[i] = conns[i].request("GET",
					    "/app/slow?ms=2000")
				except Exception as e:	# noqa: B902 -- reported
					results[i] = e
			threads = [threading.Thread(target=one, args=(i,))
			    for i in range(n)]
			t0 = time.monotonic()
			for t in threads:
				t.start()
			for t in threads:
				t.join(30)
			dt = time.monotonic() - t0
			for c in conns:
				c.close()
			bad = [r for r in results if not isinstance(r,
			    harness.Response) or r.status != 200 or
			    r.body != b"slept 2000 ms\n"]
			self.assertEqual(bad, [])
			# One after another would take 200 s.
			self.assertLess(dt, 10.0)
			s = app_stats(d)
			self.assertEqual(s["max_active"], n)
			self.assertEqual((s["completed"], s["active"]), (n, 0))
			self.assertEqual(len(d.replica_pids("app")), 1)

	def test_model_loaded_and_warm_before_serving(self):
		with PyDaemon("model") as d:
			# The first request waits while the model loads.
			r = d.request("POST", "/model", {"Content-Type":
			    "application/json"}, b'{"text": "a great day"}')
			self.assertEqual(r.status, 200, r)
			j = r.json()
			self.assertEqual(j["label"], "positive")
			self.assertTrue(j["model"]["warm"])
			info = d.request("GET", "/model/info").json()
			self.assertGreaterEqual(info["load_ms"], 300)
			self.assertEqual(info["warmup_runs"], 4)
			r = d.request("GET", "/model?text=slow+and+broken")
			self.assertEqual(r.json()["label"], "negative")
			r = d.request("POST", "/model", body=b"not json")
			self.assertEqual(r.status, 400, r)

	def test_replicas_stop_with_the_daemon(self):
		d = PyDaemon("echo", "tokens")
		with d:
			self.assertEqual(d.request("GET", "/echo").status, 200)
			self.assertEqual(d.request("GET",
			    "/tokens?max_tokens=1&ms=0").status, 200)
			pids = d.replica_pids()
			self.assertEqual(len(pids), 3)
		for rid, pid in pids.items():
			self.assertFalse(harness.pid_alive(pid), rid)
		self.assertEqual(harness.sockets_under(d.runtime_dir), [])
		log = d.log_text()
		for rid in pids:
			self.assertIn("replica %s: listening on unix:" % rid, log)


if __name__ == "__main__":
	unittest.main()
