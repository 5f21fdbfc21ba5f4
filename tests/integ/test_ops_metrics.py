"""GET /-/metrics on the admin listener: Prometheus text, checked against
the requests made."""

import unittest

from harness import (Daemon, metric, metric_sum, request, scrape, spawn,
    wait_until)


ECHO = {"route": "/echo", "deployment": "echo"}
SLEEP = {"route": "/sleep", "deployment": "sleep"}


def hist(m, name, labels):
	"""Buckets (le -> cumulative count), sum and count of a histogram."""
	buckets = {}
	for (n, ls), v in m.items():
		d = dict(ls)
		if n == name + "_bucket" and all(d.get(k) == x for k, x in
		    labels.items()):
			buckets[d["le"]] = v
	return (buckets, metric(m, name + "_sum", **labels),
	    metric(m, name + "_count", **labels))


class Metrics(unittest.TestCase):

	def test_requests_counted(self):
		# sleep is warm on both workers before anything is measured:
		# the latency buckets below are about the requests, not about
		# replicas still starting (slow under ASan).
		over = {"workers": 2,
		    "deployments": {"sleep": {"prewarm": True}}}
		with Daemon(over) as d:
			wait_until(lambda: all(r["pongs"] >= 2 for r in
			    d.deployments()["sleep"]["replicas"]), 5.0,
			    what="sleep warm on both workers")
			body = b"x" * 1000
			for _ in range(5):
				r = d.request("POST", "/echo/a", body=body)
				self.assertEqual(r.status, 200, r)
			for _ in range(3):
				self.assertEqual(d.request("GET", "/nope").status,
				    404)
			for _ in range(2):
				r = d.request("GET", "/sleep?ms=120")
				self.assertEqual(r.status, 200, r)
			self.assertEqual(d.request("GET",
			    "/sleep?ms=bad").status, 400)
			m = scrape(d.admin_port)

			self.assertEqual(metric_sum(m, "ingressd_requests_total",
			    status_class="2xx", **ECHO), 5)
			self.assertEqual(metric_sum(m, "ingressd_requests_total",
			    status_class="2xx", **SLEEP), 2)
			self.assertEqual(metric_sum(m, "ingressd_requests_total",
			    status_class="4xx", **SLEEP), 1)
			self.assertEqual(metric_sum(m, "ingressd_requests_total",
			    status_class="4xx", route="", deployment=""), 3)
			self.assertEqual(metric(m,
			    "ingressd_request_body_bytes_total", **ECHO), 5000)
			self.assertGreater(metric(m,
			    "ingressd_response_bytes_total", **ECHO), 5000)

			# Latency: 3 sleep requests, 2 of them >= 120 ms.
			for name in ("ingressd_request_duration_seconds",
			    "ingressd_upstream_duration_seconds"):
				b, total, count = hist(m, name, SLEEP)
				self.assertEqual(count, 3, name)
				self.assertEqual(b["+Inf"], 3, name)
				self.assertLessEqual(b["0.1"], 1, name)
				self.assertEqual(b["0.25"], 3, name)
				self.assertGreaterEqual(total, 0.24, name)
				self.assertLess(total, 1.0, name)
				les = sorted((float(k), v) for k, v in b.items())
				counts = [v for _, v in les]
				self.assertEqual(counts, sorted(counts), name)
			# 404s never reached a replica.
			_, _, count = hist(m, "ingressd_upstream_duration_seconds",
			    {"route": "", "deployment": ""})
			self.assertEqual(count, 0)

			# Replica figures.
			for rid in ("echo-0", "echo-1"):
				self.assertEqual(metric(m, "ingressd_replica_up",
				    deployment="echo", replica=rid), 1)
				self.assertEqual(metric(m,
				    "ingressd_replica_restarts_total",
				    deployment="echo", replica=rid), 0)
			self.assertEqual(sum(metric(m,
			    "ingressd_replica_requests_total",
			    deployment="echo", replica=rid)
			    for rid in ("echo-0", "echo-1")), 5)
			self.assertGreaterEqual(sum(metric(m,
			    "ingressd_replica_pings_total", deployment="echo",
			    replica=rid) for rid in ("echo-0", "echo-1")), 2)
			self.assertEqual(metric(m, "ingressd_replica_up",
			    deployment="hello", replica="hello-0"), 0)
			self.assertEqual(metric(m, "ingressd_replica_in_flight",
			    deployment="sleep", replica="sleep-0"), 0)
			self.assertGreaterEqual(metric(m,
			    "ingressd_deployment_resolutions_total",
			    deployment="echo"), 1)
			self.assertGreaterEqual(metric(m,
			    "ingressd_deployment_handles", deployment="echo",
			    state="ready"), 1)
			self.assertEqual(metric(m, "ingressd_deployment_handles",
			    deployment="hello", state="ready"), 0)
			self.assertEqual(metric(m,
			    "ingressd_deployment_queue_depth", deployment="echo"),
			    0)
			self.assertEqual(metric(m, "ingressd_workers"), 2)
			self.assertGreaterEqual(metric(m,
			    "ingressd_connections_accepted_total"), 11)
			self.assertEqual(metric(m, "ingressd_build_info",
			    version="0.1.0"), 1)

	def test_queue_depth_and_in_flight(self):
		# One replica taking one request at a time: the second
		# request waits in the queue.
		conf = {"deployments": {"sleep": spawn("sleep", 1,
		    max_ongoing_requests=1)}}
		with Daemon(conf) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    200)
			conns = [d.conn(), d.conn()]
			try:
				for c in conns:
					c.send(b"GET /sleep?ms=1500 HTTP/1.1\r\n"
					    b"Host: x\r\n\r\n")
				def busy():
					m = scrape(d.admin_port)
					return metric(m,
					    "ingressd_deployment_queue_depth",
					    deployment="sleep") == 1 and metric(m,
					    "ingressd_replica_in_flight",
					    deployment="sleep",
					    replica="sleep-0") == 1
				wait_until(busy, 1.4, what="1 queued, 1 running")
				for c in conns:
					self.assertEqual(c.read_response().status,
					    200)
			finally:
				for c in conns:
					c.close()
			m = scrape(d.admin_port)
			wait_until(lambda: metric(scrape(d.admin_port),
			    "ingressd_deployment_queue_depth",
			    deployment="sleep") == 0, 2.0, what="queue empty")

	def test_admin_listener_only(self):
		with Daemon() as d:
			self.assertEqual(d.request("GET", "/-/metrics").status,
			    404)
			r = d.admin_get("/-/metrics")
			self.assertEqual(r.status, 200)
			self.assertTrue(r.header("content-type").startswith(
			    "text/plain; version=0.0.4"), r.headers)

	def test_route_labels_are_capped(self):
		# More routes than a worker keeps series for: the rest are
		# counted under "_other", and nothing is lost.
		n = 300
		routes = [{"prefix": "/r%d" % i, "deployment": "hello"}
		    for i in range(n)]
		with Daemon({"routes": routes}) as d:
			with d.conn() as c:
				for i in range(n):
					r = c.request("GET", "/r%d" % i)
					self.assertEqual(r.status, 200, r)
			m = scrape(d.admin_port)
			series = [dict(ls) for (name, ls) in m
			    if name == "ingressd_requests_total"]
			self.assertLessEqual(len(series), 256)
			total = sum(v for (name, _), v in m.items()
			    if name == "ingressd_requests_total")
			# Every request counted, plus nothing else routed.
			routed = sum(v for (name, ls), v in m.items()
			    if name == "ingressd_requests_total" and
			    dict(ls)["deployment"] != "")
			self.assertEqual(routed, n)
			self.assertGreater(metric_sum(m, "ingressd_requests_total",
			    route="_other", deployment="_other",
			    status_class="2xx"), 0)
			self.assertGreaterEqual(total, n)


if __name__ == "__main__":
	unittest.main()
