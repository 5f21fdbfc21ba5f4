"""ingressd -t -c CONF: check a conf and exit 0/1."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import ROOT, base_conf, binary


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
		c["listen"] = ["127.0.0.1:1"]
		c["admin"] = "127.0.0.1:2"
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


if __name__ == "__main__":
	unittest.main()
