"""Failures speak: a replica that cannot be reached is logged at warn
(rate-limited, with address and errno text), the 502/503/504 bodies
ingressd makes say why, and /metrics counts rejections by reason and
requests by exact status code."""

import time
import unittest

from harness import (BadReplica, Daemon, free_port, metric, metric_sum,
    scrape, wait_log)


def rejections(m, deployment, reason):
	return metric_sum(m, "ingressd_rejections_total",
	    deployment=deployment, reason=reason)


class Failures(unittest.TestCase):

	def test_refused_replica_warns_once_and_503_says_why(self):
		port = free_port()	# nobody listens: connect() is refused
		over = {"routes": [{"prefix": "/dead", "deployment": "dead"}],
		    "deployments": {"dead": {
		        "endpoints": ["127.0.0.1:%d" % port],
		        "queue_timeout": 1.5}}}
		with Daemon(over) as d:
			t0 = time.monotonic()
			r = d.request("GET", "/dead")
			self.assertEqual(r.status, 503)
			self.assertEqual(r.body, b"503 Service Unavailable: no "
			    b"replica of deployment 'dead' is ready\n")
			# The backoff retried many times in 1.5 s; one line.
			line = ("warn: replica 127.0.0.1:%d (127.0.0.1:%d): "
			    "cannot connect: Connection refused" % (port, port))
			log = wait_log(d, line)
			self.assertEqual(log.count("cannot connect"), 1, log)
			self.assertGreater(time.monotonic() - t0, 1.0)
			m = scrape(d.admin_port)
			self.assertEqual(rejections(m, "dead", "no_replica"), 1)
			self.assertEqual(metric(m, "ingressd_requests_total",
			    route="/dead", deployment="dead", code="503",
			    status_class="5xx"), 1)

	def test_suppressed_count_reported(self):
		port = free_port()
		over = {"routes": [{"prefix": "/dead", "deployment": "dead"}],
		    "deployments": {"dead": {
		        "endpoints": ["127.0.0.1:%d" % port],
		        "queue_timeout": 11}}}
		with Daemon(over) as d:
			with d.conn(timeout=15) as c:
				c.send(b"GET /dead HTTP/1.1\r\nHost: a\r\n\r\n")
				# The next warn, 10 s on, counts the quiet ones.
				wait_log(d, "more failures in the last 1", 13)
				self.assertEqual(c.read_response().status, 503)
			self.assertEqual(d.log_text().count("cannot connect"), 2)

	def test_queue_full_and_queue_timeout(self):
		over = {"deployments": {"sleep": {"spawn": {"replicas": 1},
		    "max_ongoing_requests": 1, "queue": 1,
		    "queue_timeout": 0.5, "prewarm": True}}}
		with Daemon(over) as d:
			busy = d.conn()
			busy.send(b"GET /sleep?ms=3000 HTTP/1.1\r\nHost: a\r\n\r\n")
			time.sleep(0.3)		# it holds the only slot
			waiter = d.conn()
			waiter.send(b"GET /sleep HTTP/1.1\r\nHost: a\r\n\r\n")
			time.sleep(0.1)		# it holds the only queue place
			r = d.request("GET", "/sleep")
			self.assertEqual(r.status, 503)
			self.assertEqual(r.body, b"503 Service Unavailable: the "
			    b"wait queue of deployment 'sleep' is full\n")
			r = waiter.read_response()
			self.assertEqual(r.status, 503)
			self.assertEqual(r.body, b"503 Service Unavailable: every "
			    b"replica of deployment 'sleep' stayed busy past the "
			    b"queue timeout\n")
			self.assertEqual(busy.read_response().status, 200)
			busy.close()
			waiter.close()
			m = scrape(d.admin_port)
			self.assertEqual(rejections(m, "sleep", "queue_full"), 1)
			self.assertEqual(rejections(m, "sleep", "queue_timeout"), 1)
			self.assertEqual(metric_sum(m, "ingressd_requests_total",
			    deployment="sleep", code="503"), 2)
			self.assertEqual(metric_sum(m, "ingressd_requests_total",
			    deployment="sleep", code="200"), 1)

	def test_deadline_504_and_replica_failed_502(self):
		with BadReplica("bad-status") as bad:
			over = {"routes": [{"prefix": "/bad", "deployment": "bad"},
			    {"prefix": "/sleep", "deployment": "sleep"}],
			    "deployments": {"bad": {"endpoints": [bad.listen]}}}
			with Daemon(over) as d:
				r = d.request("GET", "/sleep?ms=2000",
				    headers={"X-Request-Timeout-Seconds": "0.2"})
				self.assertEqual(r.status, 504)
				self.assertIn(b"504 Gateway Timeout: ", r.body)
				r = d.request("GET", "/bad")
				self.assertEqual(r.status, 502)
				self.assertTrue(r.body.startswith(
				    b"502 Bad Gateway: "), r.body)
				m = scrape(d.admin_port)
				self.assertEqual(rejections(m, "sleep", "deadline"),
				    1)
				self.assertEqual(rejections(m, "bad",
				    "replica_failed"), 1)
				self.assertEqual(metric_sum(m,
				    "ingressd_requests_total", deployment="bad",
				    code="502", status_class="5xx"), 1)


if __name__ == "__main__":
	unittest.main()
