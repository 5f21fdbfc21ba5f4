"""In-process modules ("inproc" deployments): the names the checks use,
the ABI word refused on mismatch, a reload that swaps a module while the
old one finishes its requests (and is closed only then), and the stall
watchdog naming a module that blocks its worker."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from harness import (Daemon, ROOT, binary, reload, request, wait_log,
    wait_until)


def inproc_conf(module, **extra):
	dep = {"inproc": {"module": module}}
	dep.update(extra)
	return {
		"workers": 1,
		"log_level": "debug",
		"timeouts": {"drain": 2},
		"routes": [{"prefix": "/x", "deployment": "x"}],
		"deployments": {"x": dep},
	}


def mapped(pid, text):
	"""Whether a mapping of the process names text (a loaded module)."""
	with open("/proc/%d/maps" % pid) as f:
		return text in f.read()


class Slow(threading.Thread):
	"""One request in the background."""

	def __init__(self, port, target):
		super().__init__(daemon=True)
		self.port, self.target = port, target
		self.resp, self.error = None, None
		self.start()

	def run(self):
		try:
			self.resp = request(self.port, "GET", self.target,
			    timeout=20)
		except Exception as e:  # noqa: BLE001 -- reported by the test
			self.error = e


class Names(unittest.TestCase):

	def test_hello_in_process_and_hosted(self):
		"""The same build/mod-hello.so serves Hello world! loaded into
		ingressd (relative path, as in the issue) and served by
		ingressd-host over the wire."""
		conf = {
			"workers": 2,
			"routes": [{"prefix": "/in", "deployment": "in"},
			    {"prefix": "/out", "deployment": "out"}],
			"deployments": {
				"in": {"inproc": {"module": os.path.relpath(
				    binary("mod-hello.so"), ROOT)}},
				"out": {"spawn": {"command": [
				    binary("ingressd-host"),
				    binary("mod-hello.so")]}},
			},
		}
		with Daemon(conf=conf) as d:
			for target in ("/in", "/out", "/in/a?b=1"):
				r = d.request("GET", target)
				self.assertEqual(r.status, 200, r)
				self.assertEqual(r.body, b"Hello world!")
			deps = d.deployments()
			self.assertEqual(deps["in"]["source"], "inproc")
			self.assertEqual(deps["in"]["replicas"][0]["protocol"],
			    "inproc")
			# In process: no child; hosted: one.
			self.assertNotIn("pid", deps["in"]["replicas"][0])
			self.assertTrue(mapped(d.proc.pid, "mod-hello.so"))

	def test_module_args_reach_init(self):
		"""args go to the module's init: a module that refuses them
		(mod-sleep takes none... so use echo's id) -- here: the
		instance starts with args and serves."""
		conf = inproc_conf(binary("mod-echo.so"))
		conf["deployments"]["x"]["inproc"]["args"] = ["--a", "b"]
		with Daemon(conf=conf) as d:
			r = d.request("POST", "/x/p?q=1", body=b"abc")
			self.assertEqual(r.status, 200, r)
			j = r.json()
			self.assertEqual(j["body"], "abc")
			self.assertEqual(j["replica"], "x-0")
			self.assertEqual(j["deployment"], "x")


class Abi(unittest.TestCase):

	BAD = binary("tests/mod-badabi.so")

	def test_check_refuses_wrong_abi(self):
		tmp = tempfile.mkdtemp(prefix="ingressd-inproc-")
		try:
			path = os.path.join(tmp, "c.json")
			c = inproc_conf(self.BAD)
			c["listen"] = ["127.0.0.1:1"]
			with open(path, "w") as f:
				json.dump(c, f)
			p = subprocess.run([binary("ingressd"), "-t", "-c", path],
			    cwd=ROOT, capture_output=True, text=True, timeout=20)
		finally:
			shutil.rmtree(tmp)
		self.assertEqual(p.returncode, 1, p.stderr)
		self.assertIn("deployments.x.inproc.module: %s: module ABI "
		    "version 999, ingressd speaks 1" % self.BAD, p.stderr)

	def test_start_refuses_wrong_abi(self):
		d = Daemon(conf=inproc_conf(self.BAD), expect_exit=None)
		with self.assertRaises(AssertionError):
			d.start()
		d.proc.wait(10)
		self.assertNotEqual(d.proc.returncode, 0)
		self.assertIn("module ABI version 999, ingressd speaks 1",
		    d.log_text())
		d.stop(check=False)

	def test_reload_refuses_wrong_abi_and_keeps_serving(self):
		with Daemon(conf=inproc_conf(binary("mod-hello.so"))) as d:
			reload(d, conf=inproc_conf(self.BAD))
			wait_log(d, "module ABI version 999, ingressd speaks 1")
			r = d.request("GET", "/x")
			self.assertEqual(r.body, b"Hello world!")

	def test_host_refuses_wrong_abi(self):
		p = subprocess.run([binary("ingressd-host"), "--listen",
		    "unix:/nonexistent/x.sock", self.BAD], capture_output=True,
		    text=True, timeout=20)
		self.assertEqual(p.returncode, 1)
		self.assertIn("module ABI version 999, this host speaks 1",
		    p.stderr)


class Reload(unittest.TestCase):

	def test_swap_module_old_requests_finish_on_old(self):
		"""A reload naming another module: the request in flight ends
		on the old module, new ones go to the new one, and the old
		module is closed once its request is done, not before."""
		with Daemon(conf=inproc_conf(binary("mod-sleep.so"))) as d:
			slow = Slow(d.port, "/x?ms=1500")
			wait_until(lambda: d.deployments()["x"]["replicas"][0]
			    ["in_flight"] == 1, 5, what="request in flight")
			reload(d, conf=inproc_conf(binary("mod-hello.so")))
			wait_until(lambda: d.request("GET", "/x").body ==
			    b"Hello world!", 5, what="new module serving")
			self.assertTrue(mapped(d.proc.pid, "mod-sleep.so"))
			self.assertTrue(slow.is_alive())
			slow.join(10)
			self.assertIsNone(slow.error)
			self.assertEqual(slow.resp.status, 200)
			self.assertEqual(slow.resp.body, b"slept 1500 ms\n")
			wait_until(lambda: not mapped(d.proc.pid, "mod-sleep.so"),
			    5, what="old module closed")

	def test_swap_same_path_rebuilt(self):
		"""The module file replaced under the same path (a rebuild):
		the reload loads the new file (a private copy, since the
		loader knows the path), the old one finishes."""
		tmp = tempfile.mkdtemp(prefix="ingressd-inproc-")
		mod = os.path.join(tmp, "mod.so")
		try:
			shutil.copy(binary("mod-sleep.so"), mod)
			with Daemon(conf=inproc_conf(mod)) as d:
				slow = Slow(d.port, "/x?ms=1500")
				wait_until(lambda: d.deployments()["x"]["replicas"]
				    [0]["in_flight"] == 1, 5, what="in flight")
				shutil.copy(binary("mod-hello.so"), mod + ".new")
				os.rename(mod + ".new", mod)
				reload(d, conf=inproc_conf(mod))
				wait_until(lambda: d.request("GET", "/x").body ==
				    b"Hello world!", 5, what="new file serving")
				slow.join(10)
				self.assertIsNone(slow.error)
				self.assertEqual(slow.resp.body,
				    b"slept 1500 ms\n")
		finally:
			shutil.rmtree(tmp)


class Stall(unittest.TestCase):

	def test_blocking_handler_logged_with_module(self):
		conf = inproc_conf(binary("tests/mod-block.so"))
		conf["timeouts"]["worker_stall"] = 0.3
		with Daemon(conf=conf) as d:
			t0 = time.monotonic()
			r = d.request("GET", "/x?ms=1200", timeout=10)
			self.assertEqual(r.body, b"blocked 1200 ms\n")
			self.assertGreater(time.monotonic() - t0, 1.1)
			wait_log(d, "worker 0 stalled for")
			log = d.log_text()
			self.assertIn("inside inproc module %s (replica x-0)" %
			    binary("tests/mod-block.so"), log)
			wait_log(d, "worker 0: running again after")
			# A quick handler is no stall.
			n = log.count("stalled for")
			for _ in range(5):
				d.request("GET", "/x?ms=0")
			time.sleep(0.6)
			self.assertEqual(d.log_text().count("stalled for"), n)


if __name__ == "__main__":
	unittest.main()
