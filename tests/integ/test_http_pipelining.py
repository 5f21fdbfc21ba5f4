"""Pipelined requests are answered in order."""

import unittest

from harness import Daemon, build_request


class Pipelining(unittest.TestCase):

	def test_20_requests_one_send_in_order(self):
		reqs = b"".join(build_request("GET", "/echo/p/%d" % i)
		    for i in range(20))
		with Daemon() as d:
			with d.conn() as c:
				c.send(reqs)
				for i in range(20):
					r = c.read_response()
					self.assertEqual(r.status, 200,
					    "response %d: %r" % (i, r))
					self.assertEqual(r.json()["path"],
					    "/echo/p/%d" % i)
				self.assertEqual(c.pending(0.2), b"")

	def test_pipelined_bodies_in_order(self):
		reqs = b"".join(build_request("POST", "/echo/b/%d" % i,
		    body=b"x" * (i * 1000)) for i in range(10))
		with Daemon() as d:
			with d.conn() as c:
				c.send(reqs)
				for i in range(10):
					r = c.read_response()
					self.assertEqual(r.status, 200, r)
					j = r.json()
					self.assertEqual(j["path"], "/echo/b/%d"
					    % i)
					self.assertEqual(j["body_length"],
					    i * 1000)

	def test_pipelined_slow_first_answer_still_first(self):
		# The first request takes 300 ms, the others are instant:
		# the answers still come back in request order.
		reqs = build_request("GET", "/sleep?ms=300")
		reqs += build_request("GET", "/hello")
		reqs += build_request("GET", "/echo/third")
		reqs += build_request("HEAD", "/hello")
		reqs += build_request("GET", "/sleep?chunks=2&ms=10")
		with Daemon() as d:
			with d.conn() as c:
				c.send(reqs)
				r = c.read_response()
				self.assertEqual(r.body, b"slept 300 ms\n")
				r = c.read_response()
				self.assertEqual(r.body, b"Hello world!")
				r = c.read_response()
				self.assertEqual(r.json()["path"], "/echo/third")
				r = c.read_response("HEAD")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.header("content-length"),
				    "12")
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				self.assertEqual(len(r.body.splitlines()), 2,
				    r.body)


if __name__ == "__main__":
	unittest.main()
