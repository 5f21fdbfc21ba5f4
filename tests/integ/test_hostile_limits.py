"""Limits at the front door: connections (in total and per client
address), header names and sections the wire cannot carry, bodies refused
before anything is forwarded, and the documented defaults."""

import time
import unittest

from harness import Conn, Daemon, HTTPError, free_port, request, spawn, \
    timeout, wait_until


def forwarded(d, name):
	"""REQUEST frames ingressd sent to deployment name's replicas."""
	return sum(r["requests"] for r in d.deployments()[name]["replicas"])


def refused(port, host="127.0.0.1"):
	"""True when a new connection is closed without being served: EOF
	or reset within 2 s, and nothing but (at most) a 503 said."""
	c = Conn(port, timeout=2.0, host=host)
	try:
		c.send(b"GET /echo/x HTTP/1.1\r\nHost: x\r\n\r\n")
	except (ConnectionResetError, BrokenPipeError):
		c.close()
		return True
	try:
		if not c.wait_closed(2.0):
			return False
		data = bytes(c.buf)
	finally:
		c.close()
	return data == b"" or data.startswith(b"HTTP/1.1 503 ")


def hold(port, n):
	"""n client connections the daemon has counted: each has been served
	a request.  A connection the test closed just before may still be
	counted when the first ones arrive (its EOF and their accepts can
	come in one loop pass, accepts first); one refused for that is
	replaced, so the daemon ends up holding exactly these n."""
	held = []
	for _ in range(4 * n):
		if len(held) == n:
			return held
		c = Conn(port, timeout=5)
		try:
			r = c.request("GET", "/echo/hold")
		except (OSError, HTTPError):
			r = None
		if r is not None and r.status == 200:
			held.append(c)
		else:
			c.close()
			time.sleep(0.05)
	raise AssertionError("could not hold %d connections" % n)


class HostileLimits(unittest.TestCase):

	@timeout(30)
	def test_max_connections(self):
		# limits.max_connections counts every client connection (the
		# admin listener's too): beyond it a new one is closed at once,
		# and room made by closing others is usable again.
		with Daemon({"limits": {"max_connections": 20}}) as d:
			held = hold(d.port, 20)
			try:
				self.assertTrue(refused(d.port))
				self.assertTrue(refused(d.port))
				for c in held[:5]:
					c.close()
				del held[:5]
				def served():
					return request(d.port, "GET", "/echo/x",
					    timeout=2).status == 200
				wait_until(served, 3.0,
				    what="a new connection served again")
				# The ones still held work too.
				r = held[0].request("GET", "/echo/held")
				self.assertEqual(r.status, 200)
			finally:
				for c in held:
					c.close()

	# limits.max_connections_per_client: open connections per client
	# address (IPv4 address, IPv6 /64) across workers; beyond it the
	# connection is refused at once like one over max_connections.
	@timeout(30)
	def test_max_connections_per_client_address(self):
		port = free_port()
		d = Daemon({"listen": ["127.0.0.1:%d" % port,
		    "[::1]:%d" % port],
		    "limits": {"max_connections_per_client": 5}})
		d.port = port		# the health check's port
		with d:
			held = hold(port, 5)
			try:
				self.assertTrue(refused(port))
				# Another address is not held back.
				with Conn(port, timeout=5, host="::1") as c:
					r = c.request("GET", "/echo/v6",
					    {"Connection": "close"}, host="x")
				self.assertEqual((r.version, r.status),
				    ("HTTP/1.1", 200), r)
			finally:
				for c in held:
					c.close()

	def test_header_name_too_long_431_at_once(self):
		# Found by fuzz_front: a field name longer than the wire's 255
		# bytes was accepted, could never be encoded, and the request
		# waited for the queue deadline (503 after 5 s).
		with Daemon() as d:
			before = forwarded(d, "echo")
			with d.conn(timeout=5) as c:
				t0 = time.monotonic()
				c.send(b"GET /echo/n HTTP/1.1\r\nHost: x\r\n" +
				    b"N" * 300 + b": v\r\n\r\n")
				r = c.read_response()
				self.assertEqual(r.status, 431, r)
				self.assertLess(time.monotonic() - t0, 1.0)
				self.assertTrue(c.wait_closed(2.0))
			self.assertEqual(forwarded(d, "echo"), before)

	# A head that fits the conf's limits but not one REQUEST frame
	# (WIRE_MAX_PAYLOAD, 1 MiB) is answered 431 at once, not queued.
	@timeout(30)
	def test_head_too_big_for_one_frame_431(self):
		with Daemon({"limits": {"max_header_bytes": 4 * 1024 * 1024,
		    "max_headers": 200}}) as d:
			with d.conn(timeout=10) as c:
				t0 = time.monotonic()
				r = c.request("GET", "/echo/big",
				    [("X-H%d" % i, "v" * 60000) for i in
				    range(20)])
				self.assertEqual(r.status, 431, r)
				self.assertLess(time.monotonic() - t0, 1.0)

	def test_413_content_length_nothing_forwarded(self):
		with Daemon({"limits": {"max_body": 1024}}) as d:
			before = forwarded(d, "echo")
			with d.conn(timeout=5) as c:
				# No 100 Continue for a body that will be
				# refused, and the answer comes on the head.
				c.send(b"POST /echo/big HTTP/1.1\r\nHost: x\r\n"
				    b"Content-Length: 1025\r\n"
				    b"Expect: 100-continue\r\n\r\n")
				r = c.read_response(skip_1xx=False)
				self.assertEqual(r.status, 413, r)
				self.assertTrue(c.wait_closed(2.0))
			self.assertEqual(forwarded(d, "echo"), before)

	def test_413_chunked_replica_cancelled(self):
		# A chunked body is refused as soon as its running total
		# passes max_body; the replica, which saw the head and the
		# chunks so far, gets a CANCEL, never a complete request.
		with Daemon({"limits": {"max_body": 65536}, "deployments":
		    {"sleep": spawn("sleep", 1)}}) as d:
			with d.conn(timeout=5) as c:
				c.send(b"POST /sleep/up?sink=100000000 HTTP/1.1\r\n"
				    b"Host: x\r\nTransfer-Encoding: chunked\r\n\r\n")
				try:
					for _ in range(3):
						c.send(b"8000\r\n" + b"c" * 32768 +
						    b"\r\n")
				except OSError:
					pass
				r = c.read_response()
				self.assertEqual(r.status, 413, r)
				self.assertTrue(c.wait_closed(2.0))
			def stats():
				st = request(d.port, "GET", "/sleep/stats").json()
				return st if st["cancels"] == 1 else None
			st = wait_until(stats, 3.0,
			    what="the replica sees one cancel")
			self.assertEqual(st["requests"], 1)

	@timeout(60)
	def test_default_limits(self):
		# With no "limits" in the conf: 16 MiB bodies (docs/conf.md).
		with Daemon({"limits": None}) as d:
			with d.conn(timeout=10) as c:
				c.send(b"POST /echo/over HTTP/1.1\r\nHost: x\r\n"
				    b"Content-Length: 16777217\r\n\r\n")
				self.assertEqual(c.read_response().status, 413)
			with d.conn(timeout=30) as c:
				body = b"b" * 16777216
				t = c.send_in_thread(
				    b"POST /echo/max HTTP/1.1\r\nHost: x\r\n"
				    b"Content-Length: 16777216\r\n\r\n" + body)
				r = c.read_response()
				t.join(30)
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["body_length"], 16777216)
			# The header and request-line limits: 8 KiB and 32 KiB.
			r = request(d.port, "GET", "/echo/" + "a" * 8200)
			self.assertEqual(r.status, 414)
			r = request(d.port, "GET", "/echo/h",
			    [("X-%d" % i, "v" * 4000) for i in range(9)])
			self.assertEqual(r.status, 431)


if __name__ == "__main__":
	unittest.main()
