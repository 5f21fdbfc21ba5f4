"""Reload on SIGHUP: a good conf switches under load with no failed request,
a bad one is refused and the running conf keeps serving."""

import signal
import time
import unittest

from harness import (Daemon, LoadLoop, base_conf, binary, metric, reload,
    scrape, spawn, timeout, wait_log, wait_pid_dead, wait_until)


def resolutions(d):
	return {k: v["resolutions"] for k, v in d.deployments().items()}


class Reload(unittest.TestCase):

	@timeout(30)
	def test_reload_under_load_zero_failures(self):
		# Two workers, so each switch happens on more than one thread.
		with Daemon({"workers": 2}) as d:
			for path in ("/hello", "/echo/x") + ("/sleep?ms=1",) * 6:
				self.assertEqual(d.request("GET", path).status, 200)
			# Both workers hold a warm hello handle (new
			# connections until the kernel gave each worker one).
			wait_until(lambda: d.request("GET", "/hello").status ==
			    200 and d.deployments()["hello"]["handles"][
			    "ready"] == 2, 5.0, interval=0, what="two hello "
			    "handles")
			before = resolutions(d)
			# Workers that hold a handle for sleep (the kernel
			# spreads connections between the two).
			sleep_handles = d.deployments()["sleep"]["handles"][
			    "ready"]
			self.assertGreaterEqual(sleep_handles, 1)
			old_sleep = d.replica_pids("sleep")
			old_echo = d.replica_pids("echo")
			self.assertEqual(len(old_sleep), 2, old_sleep)
			load = LoadLoop(d.port, ["/hello", "/echo/a",
			    "/hello/b"], threads=4).start()
			try:
				time.sleep(0.4)
				# 1: add a deployment and its route, scale echo
				# up; hello and sleep are untouched.
				c = base_conf()
				c["deployments"]["echo"]["spawn"]["replicas"] = 3
				c["deployments"]["extra"] = spawn("hello", 1)
				c["routes"].append({"prefix": "/extra",
				    "deployment": "extra"})
				reload(d, conf=c)
				wait_log(d, "reload 1: every worker switched")
				time.sleep(0.4)
				# 2: remove sleep and its route.
				del c["deployments"]["sleep"]
				c["routes"] = [r for r in c["routes"]
				    if r["deployment"] != "sleep"]
				reload(d, conf=c)
				wait_log(d, "reload 2: every worker switched")
				time.sleep(0.4)
				# 3: a new echo command: new processes on new
				# sockets while the old ones drain.
				c["deployments"]["echo"]["spawn"]["command"] = [
				    binary("replica-echo"), "--drain-ms", "1000"]
				reload(d, conf=c)
				wait_log(d, "reload 3: every worker switched")
				time.sleep(0.6)
			finally:
				failures = load.stop()
			self.assertGreater(load.count, 200)
			self.assertEqual(failures, [], "%d of %d requests failed" %
			    (len(failures), load.count))

			# hello never changed: its handles stayed warm.
			after = resolutions(d)
			self.assertEqual(after["hello"], before["hello"])
			# The added route works; the removed one is gone.
			r = d.request("GET", "/extra")
			self.assertEqual(r.status, 200, r)
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    404)
			self.assertNotIn("sleep", d.deployments())
			# sleep's replicas were drained and stopped.
			for pid in old_sleep.values():
				self.assertTrue(wait_pid_dead(pid, 5.0),
				    "retired replica %d still alive" % pid)
			# echo runs the new command on new sockets; the old
			# processes are gone.
			new_echo = d.replica_pids("echo")
			self.assertEqual(sorted(new_echo), ["echo-0.g2",
			    "echo-1.g2", "echo-2.g2"])
			for pid in old_echo.values():
				self.assertTrue(wait_pid_dead(pid, 5.0))
			seen = set()
			for _ in range(12):
				seen.add(d.request("GET", "/echo/x").json()[
				    "replica"])
			self.assertTrue(seen <= set(new_echo), seen)
			m = scrape(d.admin_port)
			self.assertEqual(metric(m,
			    "ingressd_config_reloads_total", result="success"),
			    3)
			self.assertEqual(metric(m,
			    "ingressd_handle_evictions_total"), sleep_handles)

	def test_reload_settings_refresh_handle_in_place(self):
		with Daemon() as d:
			self.assertEqual(d.request("GET", "/hello").status, 200)
			pids = d.replica_pids("hello")
			before = d.deployments()["hello"]
			reload(d, {"deployments": {"hello": {"queue": 7,
			    "max_ongoing_requests": 10}}})
			wait_log(d, "reload 1: every worker switched")
			after = d.deployments()["hello"]
			# Same processes, same connections, one more lookup.
			self.assertEqual(d.replica_pids("hello"), pids)
			self.assertEqual(after["version"], before["version"] + 1)
			self.assertEqual(after["resolutions"],
			    before["resolutions"] + 1)
			self.assertEqual(after["state"], "ready")
			self.assertEqual(d.request("GET", "/hello").status, 200)

	def test_bad_conf_keeps_serving(self):
		with Daemon() as d:
			self.assertEqual(d.request("GET", "/echo/x").status, 200)
			pids = d.replica_pids()
			load = LoadLoop(d.port, ["/echo/y", "/hello"],
			    threads=2).start()
			try:
				# JSON syntax error: file, line and column.
				with open(d.conf_path, "w") as f:
					f.write('{\n  "routes": [,\n')
				d.send_signal(signal.SIGHUP)
				wait_log(d, "reload failed, keeping the running "
				    "configuration: %s:2:14:" % d.conf_path)
				# A meaning error: the key path.
				c = base_conf()
				c["routes"].append({"prefix": "/x",
				    "deployment": "nope"})
				reload(d, conf=c)
				wait_log(d, "routes[3].deployment: no deployment "
				    "named \"nope\"")
				# A replica command that does not exist.
				c = base_conf()
				c["deployments"]["echo"]["spawn"]["command"] = [
				    "/nonexistent/replica"]
				reload(d, conf=c)
				wait_log(d, "deployments.echo.spawn.command: "
				    "/nonexistent/replica: No such file")
				time.sleep(0.3)
			finally:
				failures = load.stop()
			self.assertEqual(failures, [])
			self.assertGreater(load.count, 20)
			self.assertEqual(d.replica_pids(), pids)
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    200)
			m = scrape(d.admin_port)
			self.assertEqual(metric(m,
			    "ingressd_config_reloads_total", result="failure"),
			    3)
			self.assertEqual(metric(m,
			    "ingressd_config_last_reload_successful"), 0)

	def test_replicas_spawned_by_reload_inherit_no_client(self):
		# A replica forked while a client is connected must not hold
		# the client's socket: closing it here must reach the client.
		with Daemon() as d:
			with d.conn(timeout=5) as c:
				self.assertEqual(c.request("GET", "/hello").status,
				    200)
				c2 = base_conf()
				c2["deployments"]["extra"] = spawn("hello", 2)
				reload(d, conf=c2)
				wait_log(d, "reload 1: every worker switched")
				pids = d.replica_pids("extra")
				self.assertEqual(len(pids), 2, pids)
				r = c.request("GET", "/hello",
				    {"Connection": "close"})
				self.assertEqual(r.status, 200)
				self.assertTrue(c.wait_closed(2.0),
				    "client connection kept open by a replica")

	def test_listen_change_needs_restart(self):
		with Daemon() as d:
			reload(d, {"listen": ["127.0.0.1:1"]})
			wait_log(d, "reload: listen changed")
			wait_log(d, "reload 1: every worker switched")
			# Still on the old port.
			self.assertEqual(d.request("GET", "/hello").status, 200)

	def test_workers_warning_compares_with_what_runs(self):
		# A: 1 worker runs.  B asks for 2: warned, still 1.  C asks for 2
		# again: still 1 running, so warned again (the last conf loaded
		# said 2).  D asks for 1: that is what runs, no warning.
		with Daemon() as d:
			for n, (workers, warned) in enumerate(
			    ((2, True), (2, True), (1, False)), 1):
				at = len(d.log_text())
				reload(d, {"workers": workers})
				text = wait_log(d, "reload %d: every worker "
				    "switched" % n, after=at)[at:]
				if warned:
					self.assertIn("reload: workers changed: "
					    "still 1; restart ingressd to apply",
					    text)
				else:
					self.assertNotIn("workers changed", text)

	def test_removed_deployment_drains_in_flight_request(self):
		with Daemon() as d:
			self.assertEqual(d.request("GET", "/sleep?ms=1").status,
			    200)
			pids = d.replica_pids("sleep")
			c = d.conn(timeout=10)
			c.send(b"GET /sleep?ms=800 HTTP/1.1\r\nHost: x\r\n\r\n")
			wait_until(lambda: sum(r["in_flight"] for r in
			    d.deployments()["sleep"]["replicas"]) == 1, 2.0,
			    what="request in flight")
			conf = base_conf()
			del conf["deployments"]["sleep"]
			conf["routes"] = conf["routes"][:2]
			reload(d, conf=conf)
			r = c.read_response()
			c.close()
			self.assertEqual(r.status, 200, r)
			self.assertEqual(r.body, b"slept 800 ms\n")
			for pid in pids.values():
				self.assertTrue(wait_pid_dead(pid, 5.0))


if __name__ == "__main__":
	unittest.main()


class ReloadWrk(unittest.TestCase):

	@timeout(30)
	def test_reload_under_wrk_zero_failures(self):
		import shutil
		import subprocess
		wrk = shutil.which("wrk")
		if wrk is None:
			self.skipTest("wrk is not installed")
		with Daemon({"workers": 2}) as d:
			self.assertEqual(d.request("GET", "/hello").status, 200)
			p = subprocess.Popen([wrk, "-t2", "-c16", "-d3s",
			    "http://127.0.0.1:%d/hello" % d.port],
			    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
			try:
				c = base_conf()
				for i in range(4):
					time.sleep(0.5)
					# Alternate: add a deployment, remove it.
					if i % 2 == 0:
						c["deployments"]["extra"] = spawn(
						    "echo", 1)
						c["routes"].append({"prefix":
						    "/extra", "deployment": "extra"})
					else:
						del c["deployments"]["extra"]
						c["routes"].pop()
					reload(d, conf=c)
					wait_log(d, "reload %d: every worker "
					    "switched" % (i + 1))
				out = p.communicate(timeout=15)[0].decode()
			finally:
				if p.poll() is None:
					p.kill()
					p.wait()
			self.assertEqual(p.returncode, 0, out)
			m = __import__("re").search(r"(\d+) requests in", out)
			self.assertIsNotNone(m, out)
			self.assertGreater(int(m.group(1)), 1000, out)
			self.assertNotIn("Non-2xx", out)
			self.assertNotIn("Socket errors", out)
