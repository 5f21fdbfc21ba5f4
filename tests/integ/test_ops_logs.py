"""Access log (combined and JSON lines), error log to a file, and both
reopened on SIGUSR1 (logrotate); journald's priorities, told apart from a
file by JOURNAL_STREAM's dev:ino; replica stdout and environment."""

import json
import os
import re
import signal
import socket
import subprocess
import unittest

import harness
from harness import (ROOT, Daemon, binary, log_path, reload, request,
    scrape, wait_log, wait_until)
from test_ops_metrics import hist

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ingressd\[\d+\]: ")

# 127.0.0.1 - - [29/Nov/2026:18:05:14 +0000] "GET /x HTTP/1.1" 200 404
# "-" "ua" rid=... deployment=echo replica=echo-0 upstream_time=0.000
# request_time=0.000
COMBINED = re.compile(
    r'^(?P<peer>\S+) - - \[(?P<time>\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d '
    r'[+-]\d{4})\] "(?P<request>[^"]*)" (?P<status>\d{3}) '
    r'(?P<bytes>\d+) "(?P<referer>[^"]*)" "(?P<ua>[^"]*)" '
    r'rid=(?P<rid>\S+) deployment=(?P<deployment>\S+) '
    r'replica=(?P<replica>\S+) upstream_time=(?P<upstream>[-0-9.]+) '
    r'request_time=(?P<total>[0-9.]+)$')


def read_lines(path):
	try:
		with open(path, "rb") as f:
			return f.read().decode("utf-8").splitlines()
	except FileNotFoundError:
		return []


def wait_lines(path, n, timeout=3.0):
	return wait_until(lambda: len(read_lines(path)) >= n and
	    read_lines(path), timeout, what="%d lines in %s" % (n, path))


class AccessLog(unittest.TestCase):

	def test_combined(self):
		with Daemon() as d:
			path = os.path.join(d.tmpdir, "access.log")
			reload(d, {"access_log": path})
			wait_log(d, "reload 1: every worker switched")
			er = d.request("GET", "/echo/a?q=1", headers={
			    "User-Agent": 'agent "quoted" \\ \xe9',
			    "Referer": "http://ref.example/",
			    "X-Request-Id": "rid-1"})
			self.assertEqual(er.status, 200)
			self.assertEqual(d.request("GET", "/nope").status, 404)
			r = d.request("GET", "/sleep?ms=60")
			self.assertEqual(r.status, 200)
			lines = wait_lines(path, 3)
			self.assertEqual(len(lines), 3, lines)
			m = [COMBINED.match(l) for l in lines]
			self.assertTrue(all(m), lines)
			echo, nope, sleep = (x.groupdict() for x in m)
			self.assertEqual(echo["peer"], "127.0.0.1")
			self.assertEqual(echo["request"], "GET /echo/a?q=1 HTTP/1.1")
			self.assertEqual(echo["status"], "200")
			self.assertEqual(echo["referer"], "http://ref.example/")
			# Client bytes are escaped: quote, backslash, non-ASCII.
			self.assertEqual(echo["ua"],
			    'agent \\x22quoted\\x22 \\x5C \\xE9')
			self.assertEqual(echo["rid"], "rid-1")
			self.assertEqual(echo["deployment"], "echo")
			self.assertIn(echo["replica"], ("echo-0", "echo-1"))
			self.assertGreater(int(echo["bytes"]), len(er.body))
			self.assertEqual(nope["status"], "404")
			self.assertEqual(nope["deployment"], "-")
			self.assertEqual(nope["upstream"], "-")
			self.assertEqual(sleep["deployment"], "sleep")
			self.assertGreaterEqual(float(sleep["total"]), 0.055)
			self.assertGreaterEqual(float(sleep["upstream"]), 0.055)
			self.assertLessEqual(float(sleep["upstream"]),
			    float(sleep["total"]))

	def test_json_lines(self):
		with Daemon() as d:
			path = os.path.join(d.tmpdir, "access.json")
			reload(d, {"access_log": path,
			    "access_log_format": "json"})
			wait_log(d, "reload 1: every worker switched")
			body = b"hello body"
			self.assertEqual(d.request("POST", "/echo/j", body=body,
			    headers={"User-Agent": "ua\t\"x\"\xff"}).status, 200)
			# A malformed request: logged without a method.
			with d.conn() as c:
				c.send(b"GET / HTTP/1.1\r\nHost: a\r\n"
				    b"No colon here\r\n\r\n")
				status = c.read_response().status
				self.assertEqual(status // 100, 4)
			lines = wait_lines(path, 2)
			recs = [json.loads(l) for l in lines]
			post, bad = recs
			self.assertEqual(post["method"], "POST")
			self.assertEqual(post["target"], "/echo/j")
			self.assertEqual(post["protocol"], "HTTP/1.1")
			self.assertEqual(post["status"], 200)
			self.assertEqual(post["bytes_in"], len(body))
			self.assertGreater(post["bytes_out"], 0)
			self.assertEqual(post["route"], "/echo")
			self.assertEqual(post["deployment"], "echo")
			self.assertIn(post["replica"], ("echo-0", "echo-1"))
			self.assertEqual(post["user_agent"], "ua\t\"x\"\u00ff")
			self.assertIsNone(post["referer"])
			self.assertRegex(post["request_id"], r"^[0-9a-f]{16,}$")
			self.assertRegex(post["time"],
			    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
			self.assertIsInstance(post["upstream_time"], float)
			self.assertGreaterEqual(post["request_time"],
			    post["upstream_time"])
			self.assertFalse(post["aborted"])
			self.assertEqual(bad["status"], status)
			self.assertIsNone(bad["method"])
			self.assertIsNone(bad["deployment"])
			self.assertIsNone(bad["upstream_time"])

	def test_request_time_is_precise(self):
		# Worker loops must time requests with a precise clock: the
		# coarse monotonic clock moves in 4 ms steps, so a 7 ms request
		# logged 0.004 or 0.008 and the histogram's _sum stayed 0.
		over = {"workers": 1, "access_log_format": "json",
		    "deployments": {"sleep": {"prewarm": True}}}
		with Daemon(over) as d:
			path = os.path.join(d.tmpdir, "access.json")
			reload(d, dict(over, access_log=path))
			wait_log(d, "reload 1: every worker switched")
			n = 7
			for _ in range(n):
				self.assertEqual(d.request("GET",
				    "/sleep?ms=7").status, 200)
			recs = [json.loads(l) for l in wait_lines(path, n)]
			times = sorted(r["request_time"] for r in recs)
			median = times[n // 2]
			self.assertAlmostEqual(median, 0.007, delta=0.002,
			    msg=times)
			# Not a multiple of the coarse clock's 4 ms tick.
			self.assertTrue(any(abs(t * 1000 - round(t * 250) * 4)
			    > 0.05 for t in times), times)
			m = scrape(d.admin_port)
			b, total, count = hist(m,
			    "ingressd_request_duration_seconds",
			    {"route": "/sleep", "deployment": "sleep"})
			self.assertEqual(count, n)
			# (0.005, 0.01]: the 7 ms requests' bucket.
			self.assertGreaterEqual(b["0.01"] - b["0.005"], n // 2 + 1,
			    b)
			self.assertAlmostEqual(total / n, 0.007, delta=0.003)

	def test_off_by_default(self):
		with Daemon() as d:
			self.assertEqual(d.request("GET", "/hello").status, 200)
			self.assertNotIn("GET /hello", d.log_text())


class Reopen(unittest.TestCase):

	def test_sigusr1_reopens_access_and_error_logs(self):
		with Daemon() as d:
			access = os.path.join(d.tmpdir, "access.log")
			error = os.path.join(d.tmpdir, "error.log")
			reload(d, {"access_log": access, "error_log": error})
			wait_until(lambda: "every worker switched" in
			    "".join(read_lines(error)), 3.0,
			    what="the error log file in use")
			self.assertEqual(d.request("GET", "/hello/1").status, 200)
			wait_lines(access, 1)
			# logrotate: rename, then USR1.
			os.rename(access, access + ".1")
			os.rename(error, error + ".1")
			self.assertEqual(d.request("GET", "/hello/2").status, 200)
			wait_lines(access + ".1", 2)
			d.send_signal(signal.SIGUSR1)
			wait_until(lambda: any("log files reopened" in l for l
			    in read_lines(error)), 3.0,
			    what="the new error log")
			self.assertEqual(d.request("GET", "/hello/3").status, 200)
			new = wait_lines(access, 1)
			old = read_lines(access + ".1")
			self.assertEqual(len(new), 1, new)
			self.assertIn("GET /hello/3 ", new[0])
			self.assertEqual(len(old), 2, old)
			self.assertIn("GET /hello/1 ", old[0])
			self.assertIn("GET /hello/2 ", old[1])
			self.assertNotIn("log files reopened",
			    "\n".join(read_lines(error + ".1")))

	def test_unwritable_log_refused_on_reload(self):
		with Daemon() as d:
			reload(d, {"access_log": "/nonexistent/dir/access.log"})
			wait_log(d, "reload failed, keeping the running "
			    "configuration: /nonexistent/dir/access.log: No such "
			    "file or directory")
			self.assertEqual(d.request("GET", "/hello").status, 200)


def journal_env(f, match):
	"""The environment systemd gives a service whose stderr is f
	(JOURNAL_STREAM=dev:ino of f), or a wrong dev:ino as a process
	started from such a service inherits it."""
	st = os.fstat(f.fileno())
	ino = st.st_ino if match else st.st_ino + 1
	return dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, ino))


class JournalDaemon(Daemon):
	"""A Daemon started with JOURNAL_STREAM naming its stderr (the
	harness's log file) when match, a different file otherwise."""

	def __init__(self, overrides=None, match=True, **kw):
		super().__init__(overrides, **kw)
		self.match = match

	def start(self):
		self.log = log_path("ingressd")
		self.logfile = open(self.log, "wb")
		self.proc = subprocess.Popen([binary("ingressd"), "-c",
		    self.conf_path], cwd=ROOT, stdin=subprocess.DEVNULL,
		    stdout=self.logfile, stderr=self.logfile,
		    env=journal_env(self.logfile, self.match))
		harness._register(self.proc)
		wait_until(lambda: self.proc.poll() is None and
		    request(self.port, "GET", "/-/healthz", timeout=1.0).status
		    == 200, self.start_timeout, what="ingressd healthy")
		return self


def environ_after_exec(pid):
	"""A replica's environment once it has exec'd (until then /proc shows
	the parent's start-up environment): it then has INGRESSD_LISTEN."""
	with open("/proc/%d/environ" % pid, "rb") as f:
		env = f.read().split(b"\0")
	return env if any(e.startswith(b"INGRESSD_LISTEN=") for e in env) \
	    else None


def daemon_lines(text):
	return [l for l in text.splitlines() if "ingressd[" in l]


class Journal(unittest.TestCase):

	def test_priorities_under_journald(self):
		with JournalDaemon() as d:
			reload(d, {"workers": "many"})
			wait_log(d, "reload failed")
			lines = daemon_lines(d.log_text())
			info = [l for l in lines if "]: info: " in l]
			warn = [l for l in lines if "]: warn: " in l]
			self.assertTrue(info and warn, lines)
			# journald stamps lines itself: a priority, no time.
			for l in info:
				self.assertRegex(l, r"^<6>ingressd\[\d+\]: info: ")
			for l in warn:
				self.assertRegex(l, r"^<4>ingressd\[\d+\]: warn: ")
			# The variable is ours: replicas (exec'd: they have
			# INGRESSD_LISTEN) do not get it.
			self.assertEqual(d.request("GET", "/hello").status, 200)
			for pid in d.replica_pids().values():
				env = wait_until(lambda: environ_after_exec(pid),
				    3.0, what="replica %d exec'd" % pid)
				self.assertFalse(any(e.startswith(b"JOURNAL_STREAM=")
				    for e in env), pid)

	def test_other_stream_keeps_timestamps(self):
		with JournalDaemon(match=False) as d:
			lines = daemon_lines(d.log_text())
			self.assertTrue(lines)
			for l in lines:
				self.assertRegex(l, STAMP)

	def test_error_log_file_keeps_timestamps(self):
		with JournalDaemon() as d:
			error = os.path.join(d.tmpdir, "error.log")
			reload(d, {"error_log": error})
			wait_until(lambda: "every worker switched" in
			    "".join(read_lines(error)), 3.0,
			    what="the error log file in use")
			lines = read_lines(error)
			for l in lines:
				self.assertRegex(l, STAMP)
			# Back to journald's stream: priorities again.
			reload(d, {"error_log": "stderr"})
			wait_log(d, "reload 2: every worker switched")
			self.assertRegex(daemon_lines(d.log_text())[-1],
			    r"^<6>ingressd\[")

	def test_start_failure_at_err_priority(self):
		s = socket.socket()
		s.bind(("127.0.0.1", 0))
		s.listen(1)
		d = Daemon({"listen": ["127.0.0.1:%d" % s.getsockname()[1]]})
		try:
			with open(log_path("ingressd"), "wb+") as f:
				rc = subprocess.run([binary("ingressd"), "-c",
				    d.conf_path], cwd=ROOT, stdin=subprocess.DEVNULL,
				    stdout=f, stderr=f, env=journal_env(f, True),
				    timeout=10).returncode
				f.seek(0)
				text = f.read().decode(errors="replace")
		finally:
			s.close()
			d._cleanup_dir()
		self.assertEqual(rc, 1)
		self.assertRegex(text, r"(?m)^<3>ingressd\[\d+\]: error: cannot "
		    r"start: cannot listen: listen\[0\]: .*Address already in use")


class ReplicaOutput(unittest.TestCase):

	def test_replica_stdout_goes_with_stderr(self):
		d = Daemon()
		error = os.path.join(d.tmpdir, "error.log")
		sh = {"spawn": {"command": ["/bin/sh", "-c",
		    "echo replica-stdout-mark; echo replica-stderr-mark >&2; "
		    "exec " + binary("replica-hello")], "replicas": 1}}
		harness.rewrite_conf(d, {"error_log": error,
		    "deployments": {"hello": sh}})
		with d:
			text = wait_until(lambda: "replica-stdout-mark" in
			    "\n".join(read_lines(error)) and
			    "\n".join(read_lines(error)), 5.0,
			    what="the replica's stdout in the error log")
			self.assertIn("replica-stderr-mark", text)
			self.assertNotIn("replica-stdout-mark", d.log_text())

if __name__ == "__main__":
	unittest.main()
