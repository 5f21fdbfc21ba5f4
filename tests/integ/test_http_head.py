"""HEAD gets the head only, and the connection stays usable."""

import unittest

from harness import Daemon


class Head(unittest.TestCase):

	def test_head_hello(self):
		with Daemon() as d:
			with d.conn() as c:
				r = c.request("HEAD", "/hello")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.header("content-length"),
				    "12")
				self.assertEqual(r.body, b"")
				# No body bytes may follow the head.
				self.assertEqual(c.pending(0.3), b"")
				r = c.request("GET", "/hello")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"Hello world!")
				r = c.request("HEAD", "/hello")
				self.assertEqual(r.status, 200, r)
				r = c.request("GET", "/echo/after-head")
				self.assertEqual(r.json()["method"], "GET")

	def test_head_seen_by_replica(self):
		with Daemon() as d:
			with d.conn() as c:
				r = c.request("HEAD", "/echo/h")
				self.assertEqual(r.status, 200, r)
				self.assertEqual(c.pending(0.3), b"")
				r = c.request("GET", "/echo/g")
				self.assertEqual(r.json()["path"], "/echo/g")


if __name__ == "__main__":
	unittest.main()
