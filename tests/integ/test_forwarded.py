"""X-Forwarded-For and trusted_proxies: the client behind a trusted proxy
(nginx realip, real_ip_recursive on) in the access log; what the replica
receives."""

import json
import os
import unittest

from harness import Daemon, reload, wait_log, wait_until


def json_lines(path, n):
	def get():
		try:
			with open(path) as f:
				lines = f.read().splitlines()
		except FileNotFoundError:
			return None
		return len(lines) >= n and [json.loads(l) for l in lines]
	return wait_until(get, 3.0, what="%d lines in %s" % (n, path))


class TrustedProxies(unittest.TestCase):

	def run_with(self, trusted):
		with Daemon() as d:
			path = os.path.join(d.tmpdir, "access.json")
			reload(d, {"access_log": path,
			    "access_log_format": "json",
			    "trusted_proxies": trusted})
			wait_log(d, "reload 1: every worker switched")
			got = []
			for xff in ("203.0.113.7, 10.0.0.2",
			    "203.0.113.7, 198.51.100.1", None):
				hdrs = {"X-Forwarded-For": xff} if xff else {}
				r = d.request("GET", "/echo/xff", hdrs)
				self.assertEqual(r.status, 200, r)
				got.append(r.json()["headers"].get(
				    "x-forwarded-for"))
			recs = json_lines(path, 3)
			return got, [rec["remote_addr"] for rec in recs]

	def test_trusted_peer(self):
		got, remote = self.run_with(["10.0.0.0/8", "127.0.0.1",
		    "::1/128"])
		# The chain the replica sees still ends with the hop we saw.
		self.assertEqual(got, ["203.0.113.7, 10.0.0.2, 127.0.0.1",
		    "203.0.113.7, 198.51.100.1, 127.0.0.1", "127.0.0.1"])
		# Rightmost untrusted entry; 10.0.0.2 is a trusted proxy too.
		self.assertEqual(remote, ["203.0.113.7", "198.51.100.1",
		    "127.0.0.1"])

	def test_untrusted_peer(self):
		got, remote = self.run_with(["10.0.0.0/8", "::1"])
		self.assertEqual(got, ["203.0.113.7, 10.0.0.2, 127.0.0.1",
		    "203.0.113.7, 198.51.100.1, 127.0.0.1", "127.0.0.1"])
		self.assertEqual(remote, ["127.0.0.1"] * 3)


if __name__ == "__main__":
	unittest.main()
