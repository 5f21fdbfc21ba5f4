"""GET /-/ready (readiness, unlike /-/healthz), the reserved /-/ namespace
on public listeners (admin_on_public), and the admin bearer token
(admin_token_file)."""

import json
import os
import socket
import subprocess
import unittest

from harness import deployment as dep
from harness import (ROOT, Daemon, Replica, base_conf, binary, free_port,
    reload, request, scrape, wait_log, wait_until)


def ready(port, headers=None):
	return request(port, "GET", "/-/ready", headers=headers, timeout=5.0)


class Ready(unittest.TestCase):

	def test_503_until_a_replica_answers(self):
		addr = "127.0.0.1:%d" % free_port()
		over = {"routes": [{"prefix": "/late", "deployment": "late"},
		    {"prefix": "/echo", "deployment": "echo"}],
		    "deployments": {"late": {"endpoints": [addr]}}}
		with Daemon(over) as d:
			for port in (d.port, d.admin_port):
				r = ready(port)
				self.assertEqual(r.status, 503, r)
				self.assertEqual(r.body, b"not ready: no replica of "
				    b"deployment 'late' is ready\n")
			# Liveness is another question.
			self.assertEqual(d.request("GET", "/-/healthz").status,
			    200)
			with Replica("echo", listen=addr):
				# The probe itself warms the lazy deployment.
				r = wait_until(lambda: ready(d.port).status == 200
				    and ready(d.port), 5.0, what="ready")
				self.assertEqual(r.body, b"ready\n")
				self.assertEqual(ready(d.admin_port).status, 200)

	def test_one_probe_warms_every_deployment(self):
		"""A probe warms every routed deployment that is not ready,
		not only the first it names: a load balancer probing every
		few seconds sees ready one interval after the replicas are,
		however many deployments there are."""
		with Daemon() as d:		# echo, hello, sleep: all lazy
			r = ready(d.port)
			self.assertEqual(r.status, 503, r)
			wait_until(lambda: all(any(x["state"] == "ready" for x in
			    dep(d, n)["replicas"]) for n in ("echo", "hello",
			    "sleep")), 5.0, what="every deployment warmed")
			r = ready(d.port)
			self.assertEqual((r.status, r.body), (200, b"ready\n"))

	def test_prewarm_replica_that_never_answers(self):
		# Accepts (the kernel's backlog) but never speaks the protocol.
		lsock = socket.socket()
		lsock.bind(("127.0.0.1", 0))
		lsock.listen(8)
		self.addCleanup(lsock.close)
		addr = "127.0.0.1:%d" % lsock.getsockname()[1]
		over = {"workers": 2,
		    "routes": [{"prefix": "/mute", "deployment": "mute"}],
		    "deployments": {"mute": {"endpoints": [addr],
		        "prewarm": True}}}
		with Daemon(over) as d:
			r = ready(d.port)
			self.assertEqual(r.status, 503, r)
			self.assertEqual(r.body, b"not ready: deployment 'mute' "
			    b"is warming (0 of 2 workers ready)\n")
			# The spawned ones are prewarmed and ready: 200 once the
			# silent one is routed no more.
			c = base_conf()
			c["workers"] = 2
			c["deployments"]["echo"]["prewarm"] = True
			reload(d, conf=c)
			wait_log(d, "reload 1: every worker switched")
			wait_until(lambda: ready(d.port).status == 200, 5.0,
			    what="ready after the reload")

	def test_runtime_names_do_not_block(self):
		over = {"routes": [{"prefix": "/models/",
		    "deployment_from": "path"}], "deployments": {}}
		with Daemon(conf=over) as d:
			r = ready(d.port)
			self.assertEqual((r.status, r.body), (200, b"ready\n"))


class PublicNamespace(unittest.TestCase):

	def test_public_serves_only_probes(self):
		with Daemon() as d:
			for path in ("/-/healthz", "/-/ready"):
				wait_until(lambda: d.request("GET", path).status ==
				    200, 5.0, what=path)
			for path in ("/-/deployments", "/-/routes",
			    "/-/deployments/echo", "/-/metrics", "/-/nope"):
				r = d.request("GET", path)
				self.assertEqual(r.status, 404, (path, r))
				self.assertNotIn(b"echo-0", r.body)
			self.assertEqual(d.admin_get("/-/routes").status, 200)
			self.assertEqual(d.admin_get("/-/deployments").status,
			    200)

	def test_admin_on_public(self):
		with Daemon({"admin_on_public": True}) as d:
			r = d.request("GET", "/-/routes")
			self.assertEqual(r.status, 200, r)
			self.assertEqual(d.request("GET", "/-/deployments").status,
			    200)
			# Still read-only there.
			r = d.request("PUT", "/-/deployments/m/replicas/r",
			    body=b'{"address": "127.0.0.1:1"}')
			self.assertEqual(r.status, 403, r)


class Token(unittest.TestCase):

	def token_daemon(self, token, over=None):
		d = Daemon(dict(over or {}, admin_token_file="/dev/null"))
		path = os.path.join(d.tmpdir, "token")
		with open(path, "w") as f:
			f.write(token + "\n")
		d.conf["admin_token_file"] = path
		with open(d.conf_path, "w") as f:
			json.dump(d.conf, f)
		d.admin_headers = {"Authorization": "Bearer " + token}
		return d, path

	def test_registration_needs_the_token(self):
		d, path = self.token_daemon("s3cret-Token_1")
		with d:
			body = json.dumps({"address": "127.0.0.1:%d" %
			    free_port()}).encode()
			target = "/-/deployments/m/replicas/r1"
			a = d.admin_port
			r = request(a, "PUT", target, body=body)
			self.assertEqual(r.status, 401, r)
			self.assertEqual(r.header("www-authenticate"), "Bearer")
			for bad in ("Bearer s3cret-Token_2", "Bearer s3cret",
			    "Bearer s3cret-Token_1x", "Basic czNjcmV0",
			    "s3cret-Token_1"):
				r = request(a, "PUT", target, body=body,
				    headers={"Authorization": bad})
				self.assertEqual(r.status, 401, (bad, r))
			r = request(a, "PUT", target, body=body,
			    headers=d.admin_headers)
			self.assertEqual(r.status, 200, r)
			r = request(a, "DELETE", target)
			self.assertEqual(r.status, 401, r)
			# Read-only admin pages are protected too; probes and
			# the scraper are not.
			self.assertEqual(d.admin_get("/-/deployments").status, 401)
			self.assertEqual(d.admin_get("/-/routes").status, 401)
			self.assertEqual(d.admin_get("/-/healthz").status, 200)
			wait_until(lambda: d.admin_get("/-/ready").status == 200,
			    5.0, what="ready without a token")
			scrape(a)
			# A reload rereads the file: the old token stops working.
			with open(path, "w") as f:
				f.write("rotated\n")
			reload(d, {"admin_token_file": path})
			wait_log(d, "reload 1: every worker switched")
			r = request(a, "DELETE", target, headers=d.admin_headers)
			self.assertEqual(r.status, 401, r)
			d.admin_headers = {"Authorization": "Bearer rotated"}
			r = request(a, "DELETE", target, headers=d.admin_headers)
			self.assertEqual(r.status, 200, r)

	def test_unset_needs_nothing(self):
		with Daemon() as d:
			r = request(d.admin_port, "PUT",
			    "/-/deployments/m/replicas/r1",
			    body=b'{"address": "127.0.0.1:1"}')
			self.assertEqual(r.status, 200, r)

	def test_empty_or_missing_file_is_a_conf_error(self):
		d, path = self.token_daemon("x")
		try:
			for content in (None, " \n"):
				if content is None:
					os.unlink(path)
				else:
					with open(path, "w") as f:
						f.write(content)
				p = subprocess.run([binary("ingressd"), "-t", "-c",
				    d.conf_path], cwd=ROOT, capture_output=True,
				    timeout=5, stdin=subprocess.DEVNULL)
				err = p.stderr.decode()
				self.assertEqual(p.returncode, 1, err)
				self.assertIn("admin_token_file: %s: " % path, err)
				self.assertIn("No such file" if content is None
				    else "empty", err)
		finally:
			d._cleanup_dir()


if __name__ == "__main__":
	unittest.main()
