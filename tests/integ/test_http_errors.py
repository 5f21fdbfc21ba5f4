"""Error statuses the daemon produces itself."""

import time
import unittest

from harness import Daemon, free_port


class Errors(unittest.TestCase):

	def test_404_unknown_path(self):
		with Daemon() as d:
			with d.conn() as c:
				for path in ("/nothing", "/echoes", "/echo2",
				    "/hellox/y", "/"):
					r = c.request("GET", path)
					self.assertEqual(r.status, 404,
					    "%s: %r" % (path, r))
				# The prefix matches on segment boundaries.
				for path in ("/echo", "/echo/", "/echo/x",
				    "/echo?x"):
					r = c.request("GET", path)
					self.assertEqual(r.status, 200,
					    "%s: %r" % (path, r))
					self.assertEqual(r.json()["deployment"],
					    "echo")

	def test_400_malformed_then_closed(self):
		with Daemon() as d:
			with d.conn(timeout=5) as c:
				c.send(b"GET / HTTP/1.1\r\nHost x\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 400, r)
				self.assertTrue(c.wait_closed(2.0),
				    "still open after 400; pending %r" %
				    bytes(c.buf))
			# The daemon still serves others.
			r = d.request("GET", "/hello")
			self.assertEqual(r.status, 200, r)

	def test_400_missing_host_http11(self):
		with Daemon() as d:
			with d.conn(timeout=5) as c:
				c.send(b"GET /echo HTTP/1.1\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 400, r)
				self.assertTrue(c.wait_closed(2.0))

	def test_400_after_good_request_keeps_order(self):
		# A good request, then a malformed one pipelined behind it:
		# the first is answered, then 400, then the close.
		with Daemon() as d:
			with d.conn(timeout=5) as c:
				c.send(b"GET /echo/ok HTTP/1.1\r\nHost: x\r\n\r\n"
				    b"GET /echo/bad HTTP/1.1\r\nHost x\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["path"], "/echo/ok")
				r = c.read_response()
				self.assertEqual(r.status, 400, r)
				self.assertTrue(c.wait_closed(2.0))

	def test_header_timeout(self):
		# A head that never completes: 408 (or a bare close) after
		# timeouts.header, not never.
		with Daemon({"timeouts": {"header": 1}}) as d:
			with d.conn(timeout=5) as c:
				c.send(b"GET /echo/slow HTTP/1.1\r\nHost: x\r\n")
				t0 = time.monotonic()
				self.assertTrue(c.wait_closed(4.0),
				    "still open 4 s into an unfinished head")
				dt = time.monotonic() - t0
				self.assertGreaterEqual(dt, 0.8)
				if c.buf:
					self.assertTrue(bytes(c.buf).startswith(
					    b"HTTP/1.1 408 "), bytes(c.buf))

	def test_413_content_length_over_max_body(self):
		with Daemon({"limits": {"max_body": 1024}}) as d:
			with d.conn(timeout=5) as c:
				# Exactly the limit is fine.
				r = c.request("POST", "/echo/max",
				    body=b"a" * 1024)
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["body_length"], 1024)
			with d.conn(timeout=5) as c:
				# One over: refused on the head alone.
				c.send(b"POST /echo/big HTTP/1.1\r\nHost: x\r\n"
				    b"Content-Length: 1025\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 413, r)

	def test_413_chunked_over_max_body(self):
		with Daemon({"limits": {"max_body": 1024}}) as d:
			with d.conn(timeout=5) as c:
				c.send(b"POST /echo/big HTTP/1.1\r\nHost: x\r\n"
				    b"Transfer-Encoding: chunked\r\n\r\n")
				try:
					for _ in range(4):
						c.send(b"200\r\n" + b"c" * 512 +
						    b"\r\n")
						time.sleep(0.05)
				except OSError:
					pass	# it may close on us
				r = c.read_response()
				self.assertEqual(r.status, 413, r)

	def test_431_too_many_headers(self):
		with Daemon({"limits": {"max_headers": 20}}) as d:
			with d.conn(timeout=5) as c:
				hdrs = [("X-H%d" % i, "v") for i in range(50)]
				r = c.request("GET", "/echo/many", hdrs)
				self.assertEqual(r.status, 431, r)
			# Within the limit is fine.
			hdrs = [("X-H%d" % i, "v") for i in range(10)]
			r = d.request("GET", "/echo/few", hdrs)
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.json()["headers"].get("x-h9"), "v")

	def test_431_header_bytes(self):
		with Daemon({"limits": {"max_header_bytes": 4096}}) as d:
			with d.conn(timeout=5) as c:
				r = c.request("GET", "/echo/fat",
				    {"X-Fat": "f" * 8000})
				self.assertEqual(r.status, 431, r)

	def test_414_long_request_line(self):
		with Daemon({"limits": {"max_request_line": 1024}}) as d:
			with d.conn(timeout=5) as c:
				r = c.request("GET", "/echo/" + "l" * 2000)
				self.assertEqual(r.status, 414, r)
			r = d.request("GET", "/echo/" + "s" * 500)
			self.assertEqual(r.status, 200, r)

	def test_503_endpoint_closed_port(self):
		dead = free_port()	# nothing listens there
		over = {
			"timeouts": {"queue": 1, "connect": 1},
			"routes": [{"prefix": "/dead", "deployment": "dead"},
			    {"prefix": "/hello", "deployment": "hello"}],
			"deployments": {
				"echo": None, "sleep": None,
				"dead": {"endpoints": ["127.0.0.1:%d" % dead],
				    "queue_timeout": 1},
			},
		}
		with Daemon(over) as d:
			t0 = time.monotonic()
			r = d.request("GET", "/dead/x", timeout=10)
			dt = time.monotonic() - t0
			self.assertEqual(r.status, 503, r)
			self.assertLess(dt, 4.0)
			# Other deployments are unaffected.
			r = d.request("GET", "/hello")
			self.assertEqual(r.status, 200, r)

	def test_504_request_timeout(self):
		over = {"deployments": {"sleep": {"request_timeout": 1}}}
		with Daemon(over) as d:
			with d.conn(timeout=10) as c:
				t0 = time.monotonic()
				r = c.request("GET", "/sleep?ms=5000")
				dt = time.monotonic() - t0
				self.assertEqual(r.status, 504, r)
				self.assertGreaterEqual(dt, 0.9)
				self.assertLess(dt, 3.5)
			# Short requests to the same deployment still work.
			r = d.request("GET", "/sleep?ms=10")
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.body, b"slept 10 ms\n")


if __name__ == "__main__":
	unittest.main()
