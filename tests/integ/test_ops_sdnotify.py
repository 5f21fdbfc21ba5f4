"""sd_notify: READY, STATUS, RELOADING, STOPPING and WATCHDOG datagrams on
a NOTIFY_SOCKET the test listens on (no systemd needed)."""

import os
import shutil
import signal
import socket
import tempfile
import time
import unittest

from harness import (ActivatedDaemon, EnvDaemon, free_port, reload,
    wait_log, wait_until)


class NotifySocket:
	"""A unix datagram socket collecting sd_notify messages."""

	def __init__(self, path):
		self.path = path
		self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
		self.sock.bind(path)
		self.sock.settimeout(0.05)
		self.messages = []

	def drain(self):
		while True:
			try:
				self.messages.append(self.sock.recv(4096).decode())
			except socket.timeout:
				return self.messages

	def wait(self, text, timeout=3.0, start=0):
		"""Index of the first message at or past start holding the
		line text."""
		def seen():
			for i, m in enumerate(self.drain()[start:], start):
				if text in m.split("\n"):
					return i + 1
			return 0
		return wait_until(seen, timeout, interval=0.01,
		    what="%r from sd_notify" % text) - 1

	def close(self):
		self.sock.close()


class SdNotify(unittest.TestCase):

	def test_lifecycle(self):
		tmp = tempfile.mkdtemp(prefix="ingressd-notify-")
		self.addCleanup(shutil.rmtree, tmp, True)
		path = os.path.join(tmp, "notify.sock")
		ns = NotifySocket(path)
		self.addCleanup(ns.close)
		env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"}
		with EnvDaemon(env=env) as d:
			ready = ns.wait("READY=1")
			status = [m for m in ns.drain()
			    if m.startswith("STATUS=")]
			self.assertTrue(status, ns.messages)
			self.assertIn("serving:", status[0])
			# The watchdog is fed at half the interval.
			first = ns.wait("WATCHDOG=1", start=ready)
			ns.wait("WATCHDOG=1", start=first + 1)
			# Replicas do not inherit the socket.
			for pid in d.replica_pids().values():
				with open("/proc/%d/environ" % pid,
				    "rb") as f:
					env_of = f.read()
				self.assertNotIn(b"NOTIFY_SOCKET", env_of)
				self.assertNotIn(b"WATCHDOG_USEC", env_of)

			n = len(ns.drain())
			reload(d, {"routes": [{"prefix": "/hello",
			    "deployment": "hello"}]})
			i = ns.wait("RELOADING=1", start=n)
			self.assertTrue(any(l.startswith(
			    "MONOTONIC_USEC=") for l in
			    ns.messages[i].split("\n")), ns.messages[i])
			ns.wait("READY=1", start=i + 1)

			# A refused reload also ends with READY=1.
			n = len(ns.drain())
			with open(d.conf_path, "w") as f:
				f.write("{")
			d.send_signal(signal.SIGHUP)
			i = ns.wait("RELOADING=1", start=n)
			ns.wait("READY=1", start=i + 1)
			wait_log(d, "reload failed")

			n = len(ns.drain())
			self.assertEqual(d.stop(), 0)	# SIGTERM
			ns.wait("STOPPING=1", start=n)

	def test_watchdog_of_another_pid(self):
		# WATCHDOG_PID names another process: the watchdog is not
		# ours, so no WATCHDOG=1 is ever sent.
		tmp = tempfile.mkdtemp(prefix="ingressd-notify-")
		self.addCleanup(shutil.rmtree, tmp, True)
		ns = NotifySocket(os.path.join(tmp, "notify.sock"))
		self.addCleanup(ns.close)
		env = {"NOTIFY_SOCKET": ns.path, "WATCHDOG_USEC": "100000",
		    "WATCHDOG_PID": "1"}
		with EnvDaemon(env=env) as d:
			ns.wait("READY=1")
			self.assertEqual(d.request("GET", "/hello").status, 200)
			time.sleep(0.3)	# three watchdog intervals
			self.assertFalse([m for m in ns.drain()
			    if "WATCHDOG=1" in m], ns.messages)


class SocketActivation(unittest.TestCase):

	def test_passed_socket_used(self):
		# The port is bound by the test without SO_REUSEPORT: ingressd
		# could not bind it itself, so serving proves it used fd 3.
		with ActivatedDaemon() as d:
			self.assertEqual(d.request("GET", "/hello").status, 200)
			self.assertIn("listening on 127.0.0.1:%d (socket from "
			    "systemd)" % d.port, d.log_text())
			# Replicas inherit neither the variables nor the socket.
			passed = os.readlink("/proc/%d/fd/3" % d.proc.pid)
			self.assertTrue(passed.startswith("socket:"), passed)
			daemon_exe = os.readlink("/proc/%d/exe" % d.proc.pid)
			for pid in d.replica_pids().values():
				# Until its exec a forked replica shows the daemon's
				# start-up environ (LISTEN_FDS included) and its fds:
				# look only once it runs the replica binary.
				wait_until(lambda: os.readlink("/proc/%d/exe" % pid)
				    != daemon_exe, what="replica %d exec'd" % pid)
				with open("/proc/%d/environ" % pid, "rb") as f:
					self.assertNotIn(b"LISTEN_FDS", f.read())
				fds = "/proc/%d/fd" % pid
				links = [os.readlink(os.path.join(fds, n))
				    for n in os.listdir(fds)]
				self.assertNotIn(passed, links)

	def test_unmatched_socket_closed(self):
		other = free_port()
		with ActivatedDaemon(passed_port=other) as d:
			self.assertEqual(d.request("GET", "/hello").status, 200)
			self.assertIn("descriptor 3 matches no listen address",
			    d.log_text())
			with self.assertRaises(ConnectionRefusedError):
				socket.create_connection(("127.0.0.1", other),
				    timeout=1).close()


if __name__ == "__main__":
	unittest.main()
