"""ingressd -t -c CONF: check a conf and exit 0/1, catching what the start
would refuse (log directories, addresses, duplicate listeners)."""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest

from harness import ROOT, base_conf, binary, free_port


def check(path, timeout=5):
	p = subprocess.run([binary("ingressd"), "-t", "-c", path], cwd=ROOT,
	    stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
	return p.returncode, p.stderr.decode(errors="replace")


class ConfCheck(unittest.TestCase):

	def setUp(self):
		self.dir = tempfile.mkdtemp(prefix="ingressd-conf-")
		self.addCleanup(shutil.rmtree, self.dir, True)

	def write(self, text):
		path = os.path.join(self.dir, "c.json")
		with open(path, "w") as f:
			f.write(text)
		return path

	def conf(self, **over):
		c = base_conf()
		c["listen"] = ["127.0.0.1:%d" % free_port()]
		c["admin"] = "127.0.0.1:%d" % free_port()
		c["runtime_dir"] = self.dir
		c.update(over)
		return c

	def test_default_conf_ok(self):
		rc, err = check(os.path.join(ROOT, "conf", "ingressd.json"))
		self.assertEqual(rc, 0, err)

	def test_valid_conf_ok(self):
		rc, err = check(self.write(json.dumps(self.conf(), indent=2)))
		self.assertEqual(rc, 0, err)

	def test_syntax_error_names_line_and_column(self):
		path = self.write('{\n  "listen": ["127.0.0.1:1"],\n'
		    '  "workers": 1,,\n  "log_level": "info"\n}\n')
		rc, err = check(path)
		self.assertEqual(rc, 1, err)
		self.assertRegex(err, re.escape(path) + r":3:\d+", err)

	def test_wrong_value_names_key_path(self):
		c = self.conf()
		c["deployments"]["echo"]["spawn"]["replicas"] = "two"
		path = self.write(json.dumps(c, indent=2))
		rc, err = check(path)
		self.assertEqual(rc, 1, err)
		self.assertIn(path, err)
		self.assertIn("deployments.echo.spawn.replicas", err)

	def test_bad_cidr_names_file_line_and_key(self):
		c = self.conf(trusted_proxies=["10.0.0.0/8", "10.1.2.3/8"])
		path = self.write(json.dumps(c, indent=2))
		line = [i + 1 for i, l in enumerate(open(path))
		    if '"10.1.2.3/8"' in l][0]
		rc, err = check(path)
		self.assertEqual(rc, 1, err)
		self.assertIn("%s:%d: trusted_proxies[1]: bad CIDR" % (path, line),
		    err)
		for bad in ("300.0.0.1", "::1/129", "10.0.0.0/", "fe80::/x", 7):
			c = self.conf(trusted_proxies=[bad])
			rc, err = check(self.write(json.dumps(c, indent=2)))
			self.assertEqual(rc, 1, (bad, err))
			self.assertIn("trusted_proxies[0]", err)
		c = self.conf(trusted_proxies=["192.168.0.0/16", "fd00::/8",
		    "::1", "127.0.0.1"])
		rc, err = check(self.write(json.dumps(c, indent=2)))
		self.assertEqual(rc, 0, err)

	def test_negative_value_names_key_path(self):
		c = self.conf()
		c["limits"]["max_body"] = -5
		rc, err = check(self.write(json.dumps(c)))
		self.assertEqual(rc, 1, err)
		self.assertIn("limits.max_body", err)

	def test_unknown_key_names_key_path(self):
		c = self.conf()
		c["timeouts"]["queue_tiemout"] = 3
		rc, err = check(self.write(json.dumps(c)))
		self.assertEqual(rc, 1, err)
		self.assertIn("timeouts.queue_tiemout", err)

	def test_missing_file(self):
		rc, err = check(os.path.join(self.dir, "absent.json"))
		self.assertEqual(rc, 1, err)
		self.assertIn("absent.json", err)

	def test_check_starts_nothing(self):
		# -t spawns no replica: nothing appears in runtime_dir.
		c = self.conf()
		rc, err = check(self.write(json.dumps(c)))
		self.assertEqual(rc, 0, err)
		self.assertEqual([n for n in os.listdir(self.dir)
		    if n != "c.json"], [])


class StartWouldRefuse(unittest.TestCase):
	"""Each of these passed -t and then failed the start."""

	def setUp(self):
		self.dir = tempfile.mkdtemp(prefix="ingressd-conf-")
		self.addCleanup(shutil.rmtree, self.dir, True)
		self.path = os.path.join(self.dir, "c.json")

	def check(self, **over):
		c = base_conf()
		c["listen"] = ["127.0.0.1:%d" % free_port()]
		c["admin"] = "127.0.0.1:%d" % free_port()
		c["runtime_dir"] = self.dir
		c.update(over)
		with open(self.path, "w") as f:
			json.dump(c, f, indent=2)
		return check(self.path)

	def test_invalid_address_at_load(self):
		rc, err = self.check(listen=["300.1.1.1:8000"])
		self.assertEqual(rc, 1, err)
		self.assertIn("%s: listen[0]: bad address \"300.1.1.1:8000\": "
		    "bad IPv4 address" % self.path, err)

	def test_log_directory_missing(self):
		rc, err = self.check(error_log="/nonexistent-ingressd/e.log")
		self.assertEqual(rc, 1, err)
		self.assertIn("%s: error_log: /nonexistent-ingressd/e.log: "
		    "directory /nonexistent-ingressd: No such file or directory"
		    % self.path, err)
		rc, err = self.check(access_log="/etc/passwd/access.log")
		self.assertEqual(rc, 1, err)
		self.assertIn("access_log: /etc/passwd/access.log: directory "
		    "/etc/passwd: Not a directory", err)
		# A directory that exists: fine, and nothing is created.
		rc, err = self.check(access_log=os.path.join(self.dir, "a.log"))
		self.assertEqual(rc, 0, err)
		self.assertFalse(os.path.exists(os.path.join(self.dir, "a.log")))

	def test_address_not_on_this_host(self):
		# 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never a local address.
		# bind(2) fails locally; no packet is sent.
		rc, err = self.check(listen=["192.0.2.1:8000"])
		self.assertEqual(rc, 1, err)
		self.assertIn("listen[0]: cannot listen: 192.0.2.1:8000: bind: "
		    "Cannot assign requested address", err)

	def test_admin_equal_to_listen(self):
		addr = "127.0.0.1:%d" % free_port()
		rc, err = self.check(listen=[addr], admin=addr)
		self.assertEqual(rc, 1, err)
		self.assertIn("%s: admin: \"%s\" is also listen[0]: the admin "
		    "listener needs an address of its own" % (self.path, addr),
		    err)

	def test_duplicate_listen(self):
		addr = "127.0.0.1:%d" % free_port()
		rc, err = self.check(listen=[addr, "[::1]:%d" % free_port(), addr])
		self.assertEqual(rc, 1, err)
		self.assertIn("%s: listen[2]: \"%s\" is listed twice (also "
		    "listen[0])" % (self.path, addr), err)

	def test_duplicate_listen_after_resolving(self):
		port = free_port()
		fam, _, _, _, sa = socket.getaddrinfo("localhost", port,
		    type=socket.SOCK_STREAM)[0]
		lit = sa[0] if fam == socket.AF_INET else "[%s]" % sa[0]
		rc, err = self.check(listen=["%s:%d" % (lit, port)],
		    admin="localhost:%d" % port)
		self.assertEqual(rc, 1, err)
		self.assertIn("admin: localhost:%d is the same address as "
		    "listen[0] (%s:%d)" % (port, lit, port), err)

	def test_port_in_use_is_a_note(self):
		# Most often the running ingressd itself (-t before a reload or a
		# restart): not an error, but said.
		s = socket.socket()
		s.bind(("127.0.0.1", 0))
		s.listen(1)
		port = s.getsockname()[1]
		try:
			rc, err = self.check(listen=["127.0.0.1:%d" % port])
		finally:
			s.close()
		self.assertEqual(rc, 0, err)
		self.assertIn("ingressd: note: listen[0] 127.0.0.1:%d is in use "
		    "now (a running ingressd?); the start fails unless it is "
		    "free" % port, err)
		self.assertIn("is ok", err)


if __name__ == "__main__":
	unittest.main()
