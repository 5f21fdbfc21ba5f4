"""Expect: 100-continue."""

import unittest

from harness import Daemon


class Expect(unittest.TestCase):

	def test_100_continue_before_body(self):
		body = b"after continue"
		with Daemon() as d:
			with d.conn(timeout=5) as c:
				c.send(b"POST /echo/expect HTTP/1.1\r\nHost: x\r\n"
				    b"Expect: 100-continue\r\n"
				    b"Content-Length: %d\r\n\r\n" % len(body))
				r = c.read_response(skip_1xx=False)
				self.assertEqual(r.status, 100, r)
				self.assertEqual(r.version, "HTTP/1.1")
				c.send(body)
				r = c.read_response()
				self.assertEqual(r.status, 200, r)
				j = r.json()
				self.assertEqual(j["body_length"], len(body))
				self.assertEqual(j["body"], body.decode())
				r = c.request("GET", "/hello")
				self.assertEqual(r.body, b"Hello world!")

	def test_100_continue_body_sent_anyway(self):
		# A client that does not wait: the body follows the head at
		# once.  A 100 may or may not come first; the answer is 200.
		body = b"z" * 3000
		with Daemon() as d:
			with d.conn(timeout=5) as c:
				r = c.request("PUT", "/echo/eager",
				    {"Expect": "100-continue"}, body)
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.json()["body_length"], 3000)
				r = c.request("GET", "/hello")
				self.assertEqual(r.body, b"Hello world!")


if __name__ == "__main__":
	unittest.main()
