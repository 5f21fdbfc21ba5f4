"""The command line: -t, -V, -h, and a clear message and a non-zero exit
for every start-up failure."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

from harness import (ROOT, Daemon, base_conf, binary, free_port,
    rewrite_conf, sockets_under, wait_log)


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
		path = self.write(self.conf(access_log=os.path.join(self.dir,
		    "access.log"), access_log_format="json", error_log="stderr"))
		rc, _, err = run(["-t", "-c", path])
		self.assertEqual(rc, 0, err)
		self.assertIn("configuration %s is ok" % path, err)
		# -t creates nothing: no log file, no runtime dir.
		self.assertFalse(os.path.exists(os.path.join(self.dir, "run")))
		self.assertFalse(os.path.exists(os.path.join(self.dir,
		    "access.log")))

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


class SignalReload(unittest.TestCase):
	"""ingressd -s reload: what systemctl reload runs; its exit status is
	the daemon's verdict."""

	def test_applied(self):
		with Daemon() as d:
			rewrite_conf(d, {"routes": [{"prefix": "/hi",
			    "deployment": "hello"}]})
			rc, out, err = run(["-s", "reload", "-c", d.conf_path])
			self.assertEqual(rc, 0, err)
			self.assertIn("ingressd: reload 1: %s loaded" % d.conf_path,
			    out)
			# Applied by the time it returned.
			wait_log(d, "reload 1: every worker switched")
			self.assertEqual(d.request("GET", "/hi").status, 200)

	def test_refused_by_the_daemon(self):
		# The file loads, so the client signals; the daemon refuses (a
		# spawn command that does not exist) and says why.
		with Daemon() as d:
			missing = os.path.join(d.tmpdir, "missing-replica")
			rewrite_conf(d, {"deployments": {"hello": {"spawn": {
			    "command": [missing]}}}})
			rc, out, err = run(["-s", "reload", "-c", d.conf_path])
			self.assertEqual(rc, 1, out)
			self.assertIn("ingressd: reload refused, keeping the running "
			    "configuration: ", err)
			self.assertIn("%s: No such file or directory" % missing, err)
			self.assertEqual(d.request("GET", "/hello").status, 200)
			# A file that does not load is refused without a signal.
			with open(d.conf_path, "w") as f:
				f.write("{,")
			rc, _, err = run(["-s", "reload", "-c", d.conf_path])
			self.assertEqual(rc, 1)
			self.assertIn("reload refused: %s:1:" % d.conf_path, err)

	def test_no_running_daemon(self):
		c = base_conf()
		path = os.path.join(tempfile.mkdtemp(prefix="ingressd-cli-"),
		    "c.json")
		self.addCleanup(shutil.rmtree, os.path.dirname(path), True)
		c["runtime_dir"] = os.path.dirname(path)
		with open(path, "w") as f:
			json.dump(c, f)
		rc, _, err = run(["-s", "reload", "-c", path])
		self.assertEqual(rc, 1)
		self.assertIn("no running ingressd in %s: %s/ingressd.pid: No "
		    "such file or directory" % (c["runtime_dir"],
		    c["runtime_dir"]), err)
		rc, _, err = run(["-s", "stop", "-c", path])
		self.assertEqual(rc, 1)
		self.assertIn("only \"reload\" is known", err)

	def test_unit_reloads_through_the_cli(self):
		with open(os.path.join(ROOT, "systemd", "ingressd.service")) as f:
			lines = [l.strip() for l in f]
		reloads = [l for l in lines if l.startswith("ExecReload=")]
		self.assertEqual(reloads, ["ExecReload=/usr/local/sbin/ingressd "
		    "-s reload -c /etc/ingressd/ingressd.json"])


if __name__ == "__main__":
	unittest.main()
