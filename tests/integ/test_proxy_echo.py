"""Bodies, queries and headers through to replica-echo and back."""

import hashlib
import os
import time
import unittest

from harness import Daemon


def chunks_of(data, n):
	return [data[i:i + n] for i in range(0, len(data), n)]


class Echo(unittest.TestCase):

	def test_small_body_content_length(self):
		with Daemon() as d:
			r = d.request("POST", "/echo/small", {"Content-Type":
			    "text/plain"}, b"hello, world")
			self.assertEqual(r.status, 200, r)
			self.assertIn("application/json",
			    r.header("content-type", ""))
			j = r.json()
			self.assertEqual(j["method"], "POST")
			self.assertEqual(j["path"], "/echo/small")
			self.assertEqual(j["body_length"], 12)
			self.assertEqual(j["body"], "hello, world")
			self.assertEqual(j["headers"].get("content-type"),
			    "text/plain")
			self.assertEqual(j["deployment"], "echo")
			self.assertIn(j["replica"], ("echo-0", "echo-1"))

	def test_large_body_10mb_content_length(self):
		body = os.urandom(10 * 1024 * 1024)
		want = hashlib.sha256(body).hexdigest()
		with Daemon() as d:
			with d.conn(timeout=30) as c:
				r = c.request("POST", "/echo/big", body=body)
				self.assertEqual(r.status, 200, r)
				j = r.json()
				self.assertEqual(j["body_length"], len(body))
				# Not UTF-8 and over 64 KiB: no body field.
				self.assertNotIn("body", j)
				# Raw mirror, on the same connection; the
				# body is sent while the mirror is read.
				c.send(b"POST /echo/big?raw=1 HTTP/1.1\r\n"
				    b"Host: x\r\nContent-Length: %d\r\n\r\n"
				    % len(body))
				t = c.send_in_thread(body)
				r = c.read_response()
				t.join(30)
				self.assertIsNone(t.error)
				self.assertEqual(r.status, 200, r)
				self.assertEqual(len(r.body), len(body))
				self.assertEqual(
				    hashlib.sha256(r.body).hexdigest(), want)

	def test_chunked_request_body(self):
		parts = [b"first-", b"x" * 5000, b"-middle-", b"y" * 70,
		    b"-last"]
		whole = b"".join(parts)
		with Daemon() as d:
			with d.conn() as c:
				r = c.request("POST", "/echo/chunked",
				    chunks=parts)
				self.assertEqual(r.status, 200, r)
				j = r.json()
				self.assertEqual(j["body_length"], len(whole))
				self.assertEqual(j["body"], whole.decode())
				h = j["headers"]
				self.assertNotIn("transfer-encoding", h)
				# The connection is still usable.
				r = c.request("GET", "/echo/after")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["path"],
				    "/echo/after")

	def test_chunked_request_body_sent_slowly(self):
		# Chunks in separate writes, so the daemon sees partial
		# chunk framing across reads.
		parts = [b"a" * 10, b"b" * 3000, b"c"]
		whole = b"".join(parts)
		with Daemon() as d:
			with d.conn() as c:
				c.send(b"POST /echo/slow HTTP/1.1\r\nHost: x\r\n"
				    b"Transfer-Encoding: chunked\r\n\r\n")
				for p in parts:
					frame = b"%x\r\n" % len(p) + p + b"\r\n"
					c.send(frame[:3])
					time.sleep(0.02)
					c.send(frame[3:])
					time.sleep(0.02)
				c.send(b"0\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				j = r.json()
				self.assertEqual(j["body_length"], len(whole))
				self.assertEqual(j["body"], whole.decode())

	def test_raw_mirror_1mb_streamed(self):
		body = os.urandom(1024 * 1024)
		with Daemon() as d:
			with d.conn(timeout=20) as c:
				c.send(b"POST /echo/raw?raw=1 HTTP/1.1\r\n"
				    b"Host: x\r\nContent-Length: %d\r\n\r\n"
				    % len(body))
				t = c.send_in_thread(body)
				r = c.read_response()
				t.join(20)
				self.assertIsNone(t.error)
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.header("content-type"),
				    "application/octet-stream")
				self.assertTrue(r.chunked, r.headers)
				self.assertIsNone(r.header("content-length"))
				self.assertEqual(len(r.body), len(body))
				self.assertEqual(r.body, body)
				# Chunked framing ended cleanly: reusable.
				r = c.request("GET", "/echo/again")
				self.assertEqual(r.status, 200, r)

	def test_get_with_query(self):
		with Daemon() as d:
			r = d.request("GET", "/echo/q/x?a=1&b=two%20words")
			self.assertEqual(r.status, 200, r)
			j = r.json()
			self.assertEqual(j["method"], "GET")
			self.assertEqual(j["path"], "/echo/q/x")
			self.assertEqual(j["query"], "a=1&b=two%20words")
			self.assertEqual(j["body_length"], 0)

	def test_status_from_query(self):
		with Daemon() as d:
			r = d.request("GET", "/echo?status=418")
			self.assertEqual(r.status, 418, r)
			self.assertEqual(r.json()["query"], "status=418")

	def test_headers_passed(self):
		hdrs = [
			("X-Custom", "abc 123"),
			("X-Forwarded-For", "10.1.2.3"),
			("Connection", "keep-alive"),
			("Keep-Alive", "timeout=5"),
			("TE", "trailers"),
			("Trailer", "X-Whatever"),
			("Proxy-Authorization", "Basic Zm9vOmJhcg=="),
			("Proxy-Connection", "keep-alive"),
		]
		with Daemon() as d:
			r = d.request("GET", "/echo/h", hdrs)
			self.assertEqual(r.status, 200, r)
			h = r.json()["headers"]
			self.assertEqual(h.get("x-custom"), "abc 123")
			self.assertEqual(h.get("host"), "localhost")
			for hop in ("connection", "keep-alive", "te", "trailer",
			    "proxy-authorization", "proxy-connection",
			    "transfer-encoding"):
				self.assertNotIn(hop, h, h)
			xff = [s.strip() for s in
			    h.get("x-forwarded-for", "").split(",")]
			self.assertEqual(xff, ["10.1.2.3", "127.0.0.1"], h)
			self.assertEqual(h.get("x-forwarded-proto"), "http")

	def test_absolute_form(self):
		# RFC 9112 3.2.2: the authority routes and is the replica's
		# host; the replica sees the origin-form.
		over = {"routes": [
			{"prefix": "/", "deployment": "hello",
			    "host": "hello.test"},
			{"prefix": "/", "deployment": "echo"},
		]}
		with Daemon(over) as d:
			with d.conn() as c:
				c.send(b"GET http://hello.test/x HTTP/1.1\r\n"
				    b"Host: other.test\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"Hello world!")
				c.send(b"GET HTTP://echo.test:8000/echo/abs?q=1 "
				    b"HTTP/1.1\r\nHost: hello.test\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				j = r.json()
				self.assertEqual(j["path"], "/echo/abs")
				self.assertEqual(j["query"], "q=1")
				self.assertEqual(j["headers"].get("host"),
				    "echo.test:8000")
				c.send(b"GET http://echo.test?z HTTP/1.0\r\n\r\n")
				j = c.read_response().json()
				self.assertEqual(j["path"], "/")
				self.assertEqual(j["query"], "z")
				self.assertEqual(j["headers"].get("host"),
				    "echo.test")
			with d.conn() as c:
				c.send(b"GET http://u@echo.test/ HTTP/1.1\r\n"
				    b"Host: echo.test\r\n\r\n")
				self.assertEqual(c.read_response().status, 400)

	def test_forwarded_for_added(self):
		with Daemon() as d:
			r = d.request("GET", "/echo/xff")
			self.assertEqual(r.status, 200, r)
			h = r.json()["headers"]
			self.assertEqual(h.get("x-forwarded-for"), "127.0.0.1")
			self.assertEqual(h.get("x-forwarded-proto"), "http")

	def test_forwarded_for_repeated_joined(self):
		# RFC 9110 5.3: repeated fields are one list; none is lost.
		hdrs = [("X-Forwarded-For", "10.1.2.3"),
		    ("X-Forwarded-For", "10.4.5.6, 10.7.8.9")]
		with Daemon() as d:
			r = d.request("GET", "/echo/xff", hdrs)
			self.assertEqual(r.status, 200, r)
			h = r.json()["headers"]
			self.assertEqual(h.get("x-forwarded-for"),
			    "10.1.2.3, 10.4.5.6, 10.7.8.9, 127.0.0.1", h)

	def test_upgrade_header_not_passed(self):
		# Upgrade without "Connection: upgrade" is no upgrade request,
		# but the header is still hop-by-hop.
		with Daemon() as d:
			r = d.request("GET", "/echo/u", [("Upgrade", "foo/1"),
			    ("X-Keep", "1")])
			self.assertEqual(r.status, 200, r)
			h = r.json()["headers"]
			self.assertNotIn("upgrade", h, h)
			self.assertEqual(h.get("x-keep"), "1")

	def test_request_id_taken(self):
		with Daemon() as d:
			r = d.request("GET", "/echo/rid", {"X-Request-Id":
			    "test-rid-42"})
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.header("x-request-id"), "test-rid-42")
			self.assertEqual(r.json()["request_id"], "test-rid-42")

	def test_request_id_generated(self):
		with Daemon() as d:
			with d.conn() as c:
				ids = set()
				for _ in range(3):
					r = c.request("GET", "/echo/rid")
					self.assertEqual(r.status, 200, r)
					rid = r.header("x-request-id")
					self.assertTrue(rid, r.headers)
					self.assertEqual(r.json()["request_id"],
					    rid)
					ids.add(rid)
				self.assertEqual(len(ids), 3, ids)


if __name__ == "__main__":
	unittest.main()
