"""Routes that take the deployment's name from the request: a path segment
(/models/NAME/...) or a header; 1,000 registered names through one route."""

import json
import unittest

from harness import Conn, Daemon, Replica, request, tcp_conns_to

MODELS = {"prefix": "/models/", "deployment_from": "path"}


def names_conf(**extra):
	c = {"routes": [MODELS], "deployments": {}}
	c.update(extra)
	return c


def register(admin_port, names, rid, address, conn=None):
	"""PUT each name's replica rid over one keep-alive connection."""
	own = conn is None
	c = conn or Conn(admin_port, timeout=10)
	try:
		body = json.dumps({"address": address}).encode()
		for name in names:
			r = c.request("PUT", "/-/deployments/%s/replicas/%s" %
			    (name, rid), body=body)
			if r.status != 200:
				raise AssertionError("PUT %s: %d %r" % (name,
				    r.status, r.body))
	finally:
		if own:
			c.close()


class NamesRoutes(unittest.TestCase):

	def test_path_segment_names_the_deployment(self):
		with Replica("echo", rid="r1") as rep:
			with Daemon(conf=names_conf()) as d:
				register(d.admin_port, ["foo"], "r1", rep.listen)
				cases = [
				    ("/models/foo/v1/x?q=1", "/v1/x", "q=1"),
				    ("/models/foo", "/", ""),
				    ("/models/foo/", "/", ""),
				    ("/models/foo?z=2", "/", "z=2"),
				]
				for target, path, query in cases:
					r = d.request("GET", target)
					self.assertEqual(r.status, 200, (target, r))
					j = r.json()
					self.assertEqual((j["deployment"], j["path"],
					    j["query"]), ("foo", path, query), target)
				# Unknown names and non-names: 404, saying why.
				r = d.request("GET", "/models/bar/x")
				self.assertEqual(r.status, 404, r)
				self.assertEqual(r.body, b'404 Not Found: no '
				    b'deployment named "bar"\n')
				for target in ("/models/", "/models/b%61r/x",
				    "/models//x"):
					r = d.request("GET", target)
					self.assertEqual(r.status, 404, (target, r))
					self.assertIn(b"names no deployment", r.body)
				# The connection stays usable after a 404.
				with d.conn() as c:
					self.assertEqual(c.request("GET",
					    "/models/nope").status, 404)
					self.assertEqual(c.request("GET",
					    "/models/foo/a").status, 200)
				routes = d.routes()
				self.assertEqual(routes, [{"prefix": "/models/",
				    "deployment_from": "path",
				    "strip_prefix": False}])

	def test_header_names_the_deployment(self):
		conf = names_conf(routes=[{"prefix": "/v1",
		    "deployment_from": "header:X-Model", "strip_prefix": True}])
		with Replica("echo", rid="r1") as rep:
			with Daemon(conf=conf) as d:
				register(d.admin_port, ["m-1"], "r1", rep.listen)
				r = d.request("GET", "/v1/chat?x=1",
				    headers={"x-model": "m-1"})
				self.assertEqual(r.status, 200, r)
				j = r.json()
				self.assertEqual((j["deployment"], j["path"],
				    j["query"]), ("m-1", "/chat", "x=1"))
				# The header travels on to the replica as well.
				self.assertEqual(j["headers"]["x-model"], "m-1")
				r = d.request("GET", "/v1/chat")
				self.assertEqual(r.status, 404, r)
				self.assertEqual(r.body, b"404 Not Found: the request "
				    b"names no deployment (header x-model)\n")
				r = d.request("GET", "/v1/chat",
				    headers={"X-MODEL": "m-2"})
				self.assertEqual(r.status, 404, r)

	def test_thousand_names_one_route(self):
		n = 1000
		names = ["model-%04d" % i for i in range(n)]
		with Replica("echo", rid="shared") as rep:
			port = int(rep.listen.rsplit(":", 1)[1])
			with Daemon(conf=names_conf(workers=2)) as d:
				register(d.admin_port, names, "shared", rep.listen)
				conns = [d.conn() for _ in range(8)]
				try:
					for i, name in enumerate(names):
						r = conns[i % 8].request("GET",
						    "/models/%s/gen?i=%d" % (name, i))
						self.assertEqual(r.status, 200,
						    (name, r))
						j = r.json()
						self.assertEqual((j["deployment"],
						    j["path"], j["query"]),
						    (name, "/gen", "i=%d" % i))
				finally:
					for c in conns:
						c.close()
				deps = d.deployments()
				# A thousand names, one replica: one connection
				# per worker (that served any), not per name.
				self.assertIn(tcp_conns_to(port), (1, 2))
				self.assertEqual(len([k for k in deps if
				    k.startswith("model-")]), n)
				for name in (names[0], names[-1]):
					dep = deps[name]
					self.assertEqual(dep["source"], "register")
					self.assertEqual(dep["replicas"][0]["id"],
					    "shared")
					# Resolved by the worker(s) that served it,
					# once each.
					self.assertEqual(dep["resolutions"],
					    dep["handles"]["ready"], dep)
					self.assertGreaterEqual(dep["resolutions"],
					    1)


if __name__ == "__main__":
	unittest.main()
