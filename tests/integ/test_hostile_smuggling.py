"""Request smuggling and hostile bytes through the real daemon: nothing
ambiguous is forwarded, answers stay in order, nothing crashes."""

import random
import socket
import time
import unittest

from harness import Conn, Daemon, build_request, request, spawn, timeout


def forwarded(d, name):
	"""REQUEST frames ingressd sent to deployment name's replicas."""
	return sum(r["requests"] for r in d.deployments()[name]["replicas"])


P = b"POST /echo/s HTTP/1.1\r\nHost: x\r\n"

# Each is refused on its head: 400 (501 for the unknown method), closed.
VECTORS = [
	P + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"
	    b"0\r\n\r\nGET /echo/smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
	P + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
	    b"5\r\nhello\r\n0\r\n\r\n",
	P + b"Content-Length: 3\r\nContent-Length: 40\r\n\r\nabc"
	    b"GET /echo/smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
	P + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
	P + b"Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
	P + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
	P + b"Content-Length:\x0b5\r\n\r\nhello",
	b"POST /echo/s HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
	    b"0\r\n\r\n",
	b"GET /echo/s HTTP/1.1\nHost: x\n\n",
	b"GET /echo/s HTTP/1.1\r\nHost: x\r\nX: a\rGET /echo/smuggled\r\n\r\n",
	# Absolute-form is accepted (RFC 9112 3.2.2), but not with userinfo
	# or another scheme.
	b"GET http://u@x/echo/s HTTP/1.1\r\nHost: x\r\n\r\n",
	b"GET ftp://x/echo/s HTTP/1.1\r\nHost: x\r\n\r\n",
]


class HostileSmuggling(unittest.TestCase):

	def test_vectors_refused_nothing_forwarded(self):
		with Daemon() as d:
			before = forwarded(d, "echo")
			for i, v in enumerate(VECTORS):
				with d.conn(timeout=5) as c:
					c.send(v)
					r = c.read_response()
					self.assertEqual(r.status, 400,
					    "vector %d: %r" % (i, r))
					self.assertTrue(c.wait_closed(2.0),
					    "vector %d left open" % i)
					self.assertEqual(bytes(c.buf), b"",
					    "vector %d: more after the 400" % i)
			self.assertEqual(forwarded(d, "echo"), before)
			r = d.request("GET", "/echo/after")
			self.assertEqual(r.status, 200)
			self.assertEqual(forwarded(d, "echo"), before + 1)

	def test_error_waits_for_the_answer_in_flight(self):
		# A slow request, then a smuggling attempt in the same write:
		# the first is answered whole, then the 400, then the close;
		# the bad bytes are not even read before the first answer.
		with Daemon() as d:
			before = forwarded(d, "echo")
			with d.conn(timeout=10) as c:
				c.send(b"GET /sleep/x?ms=400 HTTP/1.1\r\nHost: x\r\n"
				    b"\r\n" + VECTORS[0])
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"slept 400 ms\n")
				r = c.read_response()
				self.assertEqual(r.status, 400, r)
				self.assertTrue(c.wait_closed(2.0))
			self.assertEqual(forwarded(d, "echo"), before)

	@timeout(60)
	def test_pipelined_mix_exactly_forwarded(self):
		# 60 pipelined requests, lengths, chunked bodies and HEAD mixed:
		# 60 answers in order, each body as sent, 60 forwarded.
		rnd = random.Random(5)
		with Daemon() as d:
			before = forwarded(d, "echo")
			reqs, want = [], []
			for i in range(60):
				body = bytes(rnd.randrange(97, 123) for _ in
				    range(rnd.randrange(0, 3000)))
				kind = i % 3
				if kind == 0:
					reqs.append(build_request("POST",
					    "/echo/%d" % i, body=body))
				elif kind == 1:
					cut = len(body) // 2
					reqs.append(build_request("POST",
					    "/echo/%d" % i, chunks=[body[:cut],
					    body[cut:]]))
				else:
					reqs.append(build_request("HEAD",
					    "/echo/%d" % i))
					body = None
				want.append(body)
			with d.conn(timeout=10) as c:
				t = c.send_in_thread(b"".join(reqs))
				for i, body in enumerate(want):
					r = c.read_response("HEAD" if body is None
					    else "GET")
					self.assertEqual(r.status, 200, (i, r))
					if body is not None:
						j = r.json()
						self.assertEqual(j["path"],
						    "/echo/%d" % i)
						self.assertEqual(j["body"],
						    body.decode())
				t.join(10)
				self.assertEqual(c.pending(0.3), b"")
			self.assertEqual(forwarded(d, "echo"), before + 60)

	# A client that half-closes (EOF) with a request in flight is taken
	# as gone, as nginx does by default (proxy_ignore_client_abort off):
	# the replica gets a CANCEL and stops working for nobody.  For model
	# serving that is the safer choice (docs/http.md, "Client EOF").
	def test_half_close_after_complete_request_cancels(self):
		with Daemon({"deployments": {"sleep": spawn("sleep", 1)}}) as d:
			with d.conn(timeout=5) as c:
				c.send(b"GET /sleep/x?ms=3000 HTTP/1.1\r\nHost: x\r\n"
				    b"\r\n")
				time.sleep(0.2)
				c.sock.shutdown(socket.SHUT_WR)
				t0 = time.monotonic()
				while True:
					st = request(d.port, "GET",
					    "/sleep/stats").json()
					if st["cancels"] == 1:
						break
					self.assertLess(time.monotonic() - t0, 2,
					    st)
					time.sleep(0.05)

	def test_eof_mid_body_cancels(self):
		with Daemon({"deployments": {"sleep": spawn("sleep", 1)}}) as d:
			c = d.conn(timeout=5)
			c.send(b"POST /sleep/up?sink=1000000 HTTP/1.1\r\nHost: x\r\n"
			    b"Content-Length: 100\r\n\r\n" + b"b" * 10)
			time.sleep(0.2)
			c.close()
			t0 = time.monotonic()
			while True:
				st = request(d.port, "GET", "/sleep/stats").json()
				if st["cancels"] == 1:
					break
				self.assertLess(time.monotonic() - t0, 3, st)
				time.sleep(0.05)
			self.assertEqual(st["requests"], 1)
			self.assertEqual(d.request("GET", "/echo/ok").status, 200)

	@timeout(60)
	def test_garbage_blast(self):
		# 300 connections of random bytes (some after a valid
		# request): answered with an error or closed, never forwarded,
		# never a crash; others are served throughout.
		rnd = random.Random(1)
		with Daemon() as d:
			before = forwarded(d, "echo")
			valid = 0
			for i in range(300):
				junk = bytes(rnd.randrange(256) for _ in
				    range(rnd.randrange(1, 2000)))
				if i % 3 == 0:
					junk = b"GET /echo/ok HTTP/1.1\r\nHost: x" \
					    b"\r\n\r\n" + junk
					valid += 1
				c = Conn(d.port, timeout=5)
				try:
					c.send(junk)
					if i % 3 == 0:
						r = c.read_response()
						self.assertEqual(r.status, 200)
					if i % 2 == 0:
						c.sock.shutdown(socket.SHUT_WR)
					self.assertTrue(c.wait_closed(11.0),
					    "connection %d left open" % i)
					rest = bytes(c.buf)
					self.assertTrue(rest == b"" or
					    rest.startswith(b"HTTP/1.1 4") or
					    rest.startswith(b"HTTP/1.1 5"),
					    (i, rest[:80]))
				except (ConnectionResetError, BrokenPipeError):
					pass
				finally:
					c.close()
				if i % 50 == 0:
					self.assertEqual(request(d.port, "GET",
					    "/hello").status, 200)
			self.assertEqual(forwarded(d, "echo"), before + valid)


if __name__ == "__main__":
	unittest.main()
