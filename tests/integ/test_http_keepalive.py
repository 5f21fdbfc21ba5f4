"""Persistent connections: keep-alive, HTTP/1.0 and Connection: close."""

import time
import unittest

from harness import Daemon


class KeepAlive(unittest.TestCase):

	def test_100_requests_one_connection(self):
		with Daemon() as d:
			with d.conn() as c:
				port = c.sock.getsockname()[1]
				for i in range(100):
					if i % 3 == 0:
						body = b"b%d" % i
						r = c.request("POST", "/echo/ka/%d"
						    % i, body=body)
					else:
						body = b""
						r = c.request("GET", "/echo/ka/%d"
						    % i)
					self.assertEqual(r.status, 200,
					    "request %d: %r" % (i, r))
					j = r.json()
					self.assertEqual(j["path"], "/echo/ka/%d"
					    % i)
					self.assertEqual(j["body_length"],
					    len(body))
					self.assertNotEqual((r.header(
					    "connection") or "").lower(),
					    "close", "request %d" % i)
				# Same socket throughout, and still open.
				self.assertEqual(c.sock.getsockname()[1], port)
				self.assertFalse(c.wait_closed(0.3))
				r = c.request("GET", "/hello")
				self.assertEqual(r.body, b"Hello world!")

	def test_http10_without_keepalive_closes(self):
		with Daemon() as d:
			with d.conn() as c:
				c.send(b"GET /echo/old HTTP/1.0\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["path"], "/echo/old")
				self.assertTrue(c.wait_closed(2.0),
				    "connection not closed after an HTTP/1.0 "
				    "response; pending %r" % bytes(c.buf))

	def test_http10_streamed_response_close_delimited(self):
		# No chunked encoding for an HTTP/1.0 client: the body ends
		# when the connection closes.
		with Daemon() as d:
			with d.conn() as c:
				c.send(b"GET /sleep?chunks=3&ms=20 HTTP/1.0\r\n"
				    b"\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertFalse(r.chunked, r.headers)
				self.assertNotIn("chunked", (r.header(
				    "transfer-encoding") or "").lower())
				lines = r.body.decode().splitlines()
				self.assertEqual(len(lines), 3, r.body)
				for ln in lines:
					self.assertRegex(ln, r"^chunk \d+$")
				self.assertTrue(c.eof or c.wait_closed(2.0))

	def test_connection_close_honoured(self):
		with Daemon() as d:
			with d.conn() as c:
				r = c.request("GET", "/echo/bye",
				    {"Connection": "close"})
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["path"], "/echo/bye")
				self.assertTrue(c.wait_closed(2.0),
				    "connection not closed after "
				    "Connection: close; pending %r" %
				    bytes(c.buf))

	def test_connection_close_after_keepalive_requests(self):
		with Daemon() as d:
			with d.conn() as c:
				for i in range(3):
					r = c.request("GET", "/hello")
					self.assertEqual(r.status, 200, r)
				r = c.request("GET", "/hello",
				    {"Connection": "close"})
				self.assertEqual(r.body, b"Hello world!")
				self.assertTrue(c.wait_closed(2.0))

	def test_idle_connection_closed_after_keepalive_timeout(self):
		with Daemon({"timeouts": {"keepalive": 1}}) as d:
			with d.conn() as c:
				r = c.request("GET", "/hello")
				self.assertEqual(r.status, 200, r)
				t0 = time.monotonic()
				self.assertTrue(c.wait_closed(4.0),
				    "idle connection still open after 4 s")
				dt = time.monotonic() - t0
				self.assertGreaterEqual(dt, 0.8)
				self.assertEqual(bytes(c.buf), b"")


if __name__ == "__main__":
	unittest.main()
