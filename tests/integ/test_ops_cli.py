"""The command line: -t, -V, -h, and a clear message and a non-zero exit
for every start-up failure."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

from harness import ROOT, base_conf, binary, free_port, sockets_under


def run(args, timeout=10):
	p = subprocess.run([binary("ingressd")] + args, cwd=ROOT,
	    stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
	return p.returncode, p.stdout.decode(errors="replace"), \
	    p.stderr.decode(errors="replace")


class Cli(unittest.TestCase):

	def setUp(self):
		self.dir = tempfile.mkdtemp(prefix="ingressd-cli-")
		self.addCleanup(shutil.rmtree, self.dir, True)

	def write(self, conf):
		path = os.path.join(self.dir, "c.json")
		with open(path, "w") as f:
			json.dump(conf, f)
		return path

	def conf(self, **over):
		c = base_conf()
		c["listen"] = ["127.0.0.1:%d" % free_port()]
		c["admin"] = None
		c["runtime_dir"] = os.path.join(self.dir, "run")
		c.update(over)
		return c

	def test_check_good(self):
		path = self.write(self.conf(access_log="/var/log/x/access.log",
		    access_log_format="json", error_log="stderr"))
		rc, _, err = run(["-t", "-c", path])
		self.assertEqual(rc, 0, err)
		self.assertIn("configuration %s is ok" % path, err)
		# -t creates nothing: no log file, no runtime dir.
		self.assertFalse(os.path.exists(os.path.join(self.dir, "run")))

	def test_check_bad_log_key(self):
		rc, _, err = run(["-t", "-c", self.write(self.conf(
		    access_log="logs/access.log"))])
		self.assertEqual(rc, 1)
		self.assertIn("access_log: must be \"off\", \"stderr\" or an "
		    "absolute path", err)

	def test_check_missing_command(self):
		c = self.conf()
		c["deployments"]["echo"]["spawn"]["command"] = [
		    "no-such-replica-binary"]
		rc, _, err = run(["-t", "-c", self.write(c)])
		self.assertEqual(rc, 1)
		self.assertIn("deployments.echo.spawn.command: "
		    "no-such-replica-binary: not found in $PATH", err)

	def test_version_and_help(self):
		rc, out, _ = run(["-V"])
		self.assertEqual(rc, 0)
		self.assertRegex(out, r"^ingressd \d+\.\d+\.\d+ ")
		rc, out, _ = run(["-h"])
		self.assertEqual(rc, 0)
		for opt in ("-c file", "-t", "-V", "HUP reload"):
			self.assertIn(opt, out)
		rc, _, err = run(["-x"])
		self.assertEqual(rc, 1)
		self.assertIn("usage:", err)

	def test_conf_unreadable(self):
		rc, _, err = run(["-c", os.path.join(self.dir, "none.json")])
		self.assertEqual(rc, 1)
		self.assertIn("none.json: No such file or directory", err)

	def test_port_in_use(self):
		s = socket.socket()
		s.bind(("127.0.0.1", 0))
		s.listen(1)
		port = s.getsockname()[1]
		try:
			c = self.conf(listen=["127.0.0.1:%d" % port])
			rc, _, err = run(["-c", self.write(c)])
		finally:
			s.close()
		self.assertEqual(rc, 1)
		self.assertIn("cannot start: cannot listen: listen[0]: "
		    "127.0.0.1:%d: bind: Address already in use" % port, err)
		# Nothing was spawned, nothing left behind.
		self.assertEqual(sockets_under(self.dir), [])
		self.assertNotIn("replica", err.replace("replica-", ""))

	def test_replica_command_not_found(self):
		c = self.conf()
		c["deployments"]["hello"]["spawn"]["command"] = [
		    os.path.join(self.dir, "missing-replica")]
		rc, _, err = run(["-c", self.write(c)])
		self.assertEqual(rc, 1)
		self.assertIn("cannot start: %s: deployments.hello.spawn.command: "
		    "%s: No such file or directory" % (os.path.join(self.dir,
		    "c.json"), os.path.join(self.dir, "missing-replica")), err)

	def test_error_log_unwritable(self):
		c = self.conf(error_log="/nonexistent/dir/error.log")
		rc, _, err = run(["-c", self.write(c)])
		self.assertEqual(rc, 1)
		self.assertIn("cannot start: /nonexistent/dir/error.log: No such "
		    "file or directory", err)


if __name__ == "__main__":
	unittest.main()
