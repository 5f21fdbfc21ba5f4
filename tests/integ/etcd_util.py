"""An etcd member (or three) on loopback for the fleet tests: Debian's
etcd-server on free ports with a temp data dir, stopped by pid; and the
few JSON gateway calls the tests make (put, delete, compact, leases)."""

import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.request

from harness import _register, free_port, log_path, stop_proc, wait_until

ETCD = "/usr/bin/etcd"


def b64(s):
	return base64.b64encode(s.encode()).decode()


def etcd_certs():
	"""test_tls's certificates, plus etcd's own: its gateway dials the
	server with it, so it must be good for clientAuth as well."""
	from test_tls import _ec_req, _sign, certs
	c = certs()
	if "etcd" not in c:
		_ec_req(c["dir"], "etcd", "etcd.test", "DNS:etcd.test,"
		    "IP:127.0.0.1", ext="serverAuth,clientAuth")
		_sign(c["dir"], "etcd", "ca")
		c["etcd"] = tuple(os.path.join(c["dir"], "etcd." + x) for x in
		    ("pem", "key"))
	return c


class Etcd:
	"""with Etcd() as e: e.put("/ingressd/...", {...})
	members > 1: a cluster on loopback; e.endpoints lists them all."""

	def __init__(self, members=1, progress=1.0, tls=False):
		if not os.access(ETCD, os.X_OK):
			raise unittest.SkipTest("etcd missing: apt-get install "
			    "etcd-server etcd-client")
		self.n = members
		self.progress = progress
		self.tmp = tempfile.mkdtemp(prefix="ingressd-etcd-")
		self.client = [free_port() for _ in range(members)]
		self.peer = [free_port() for _ in range(members)]
		self.procs = [None] * members
		self.logs = [None] * members
		# tls: https with test_tls's certificates ("a" serves, "client"
		# is the client's, both from "ca"), client certificates required.
		self.tls = None
		self.scheme = "https" if tls else "http"
		if tls:
			self.tls = etcd_certs()
		self.token = None	# set by enable_auth: the tests' root

	@property
	def endpoints(self):
		return ["%s://127.0.0.1:%d" % (self.scheme, p) for p in
		    self.client]

	def start_member(self, i):
		name = "m%d" % i
		cluster = ",".join("m%d=http://127.0.0.1:%d" % (j, self.peer[j])
		    for j in range(self.n))
		self.logs[i] = open(log_path("etcd-" + name), "ab")
		args = [ETCD, "--name", name, "--data-dir",
		    os.path.join(self.tmp, name),
		    "--listen-client-urls", self.endpoints[i],
		    "--advertise-client-urls", self.endpoints[i],
		    "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
		    "--initial-advertise-peer-urls", "http://127.0.0.1:%d" %
		    self.peer[i],
		    "--initial-cluster", cluster,
		    "--initial-cluster-state", "new",
		    "--experimental-watch-progress-notify-interval",
		    "%gs" % self.progress]
		if self.tls:
			args += ["--cert-file", self.tls["etcd"][0], "--key-file",
			    self.tls["etcd"][1], "--trusted-ca-file",
			    self.tls["ca"][0], "--client-cert-auth"]
		self.procs[i] = subprocess.Popen(args, stdin=subprocess.DEVNULL,
		    stdout=self.logs[i], stderr=self.logs[i])
		_register(self.procs[i])

	def start(self):
		for i in range(self.n):
			self.start_member(i)
		self.wait_up()
		return self

	def wait_up(self, i=None, timeout=15.0):
		def up():
			try:
				self.call("/v3/kv/range", {"key": b64("x")},
				    member=i, timeout=1.0)
				return True
			except OSError:
				return False
		wait_until(up, timeout, what="etcd answering")

	def stop_member(self, i, sig=signal.SIGTERM):
		p = self.procs[i]
		if p is not None and p.poll() is None:
			p.send_signal(sig)
			try:
				p.wait(timeout=10)
			except subprocess.TimeoutExpired:
				p.kill()
				p.wait(timeout=5)
		self.procs[i] = None

	def stop(self):
		for i in range(self.n):
			self.stop_member(i)
			if self.logs[i] is not None:
				self.logs[i].close()
		shutil.rmtree(self.tmp, ignore_errors=True)

	def __enter__(self):
		try:
			return self.start()
		except BaseException:
			self.stop()
			raise

	def __exit__(self, *exc):
		self.stop()
		return False

	# -- the gateway

	def call(self, path, body, member=None, timeout=5.0):
		members = [member] if member is not None else \
		    [i for i in range(self.n) if self.procs[i] is not None]
		last = None
		for i in members:
			h = {"Content-Type": "application/json"}
			if self.token:
				h["Authorization"] = self.token
			req = urllib.request.Request(self.endpoints[i] + path,
			    data=json.dumps(body).encode(), headers=h)
			try:
				with urllib.request.urlopen(req, timeout=timeout,
				    context=self.ssl_context()) as r:
					return json.loads(r.read())
			except OSError as e:
				last = e
		raise last or OSError("no etcd member running")

	def ssl_context(self):
		if not self.tls:
			return None
		ctx = ssl.create_default_context(cafile=self.tls["ca"][0])
		ctx.load_cert_chain(*self.tls["client"])
		return ctx

	def enable_auth(self, user, password, prefix):
		"""root (password "rootpw") and user with readwrite on prefix;
		auth on; this object's own calls go as root from then on."""
		for path, body in (
		    ("/v3/auth/user/add", {"name": "root", "password": "rootpw"}),
		    ("/v3/auth/role/add", {"name": "root"}),
		    ("/v3/auth/user/grant", {"user": "root", "role": "root"}),
		    ("/v3/auth/user/add", {"name": user, "password": password}),
		    ("/v3/auth/role/add", {"name": "fleet"}),
		    ("/v3/auth/role/grant", {"name": "fleet", "perm": {
			"permType": "READWRITE", "key": b64(prefix + "/"),
			"range_end": b64(prefix + "0")}}),
		    ("/v3/auth/user/grant", {"user": user, "role": "fleet"}),
		    ("/v3/auth/enable", {})):
			self.call(path, body)
		self.token = self.call("/v3/auth/authenticate", {"name": "root",
		    "password": "rootpw"})["token"]

	def put(self, key, value, lease=None):
		if not isinstance(value, str):
			value = json.dumps(value)
		body = {"key": b64(key), "value": b64(value)}
		if lease:
			body["lease"] = lease
		return int(self.call("/v3/kv/put", body)["header"]["revision"])

	def delete(self, key):
		return self.call("/v3/kv/deleterange", {"key": b64(key)})

	def get(self, key):
		kvs = self.call("/v3/kv/range", {"key": b64(key)}).get("kvs", [])
		return json.loads(base64.b64decode(kvs[0]["value"])) if kvs \
		    else None

	def revision(self):
		return int(self.call("/v3/kv/range", {"key": b64("x")})
		    ["header"]["revision"])

	def compact(self, rev=None):
		rev = rev or self.revision()
		self.call("/v3/kv/compaction", {"revision": str(rev),
		    "physical": True})
		return rev

	def leader(self):
		"""The index of the leader member."""
		for i in range(self.n):
			if self.procs[i] is None:
				continue
			st = self.call("/v3/maintenance/status", {}, member=i)
			if st.get("leader") == st["header"].get("member_id"):
				return i
		return None


class Relay:
	"""A TCP relay in front of an etcd member, which a test can cut
	("down": connections closed, new ones refused) or freeze (bytes
	swallowed, connections left open: a silently dead watch)."""

	def __init__(self, target_port):
		import socket
		import threading
		self.target = target_port
		self.lsock = socket.socket()
		self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		self.lsock.bind(("127.0.0.1", 0))
		self.lsock.listen(64)
		self.port = self.lsock.getsockname()[1]
		self.mode = "up"
		self.socks = []
		self.lock = threading.Lock()
		self.closed = False
		self.t = threading.Thread(target=self._accept, daemon=True)
		self.t.start()

	@property
	def endpoint(self):
		return "http://127.0.0.1:%d" % self.port

	def _accept(self):
		import socket
		import threading
		while not self.closed:
			try:
				c, _ = self.lsock.accept()
			except OSError:
				return
			if self.mode == "down":
				c.close()
				continue
			try:
				u = socket.create_connection(("127.0.0.1",
				    self.target), 2)
			except OSError:
				c.close()
				continue
			with self.lock:
				self.socks += [c, u]
			for a, b in ((c, u), (u, c)):
				threading.Thread(target=self._pump, args=(a, b),
				    daemon=True).start()

	def _pump(self, a, b):
		import socket
		for _ in range(10000000):
			try:
				data = a.recv(65536)
			except OSError:
				break
			if not data:
				break
			if self.mode == "frozen":
				continue
			try:
				b.sendall(data)
			except OSError:
				break
		for s in (a, b):
			try:
				s.shutdown(socket.SHUT_RDWR)
			except OSError:
				pass

	def set(self, mode):
		self.mode = mode
		if mode == "down":
			with self.lock:
				socks, self.socks = self.socks, []
			import socket
			for s in socks:
				try:
					s.shutdown(socket.SHUT_RDWR)
					s.close()
				except OSError:
					pass

	def close(self):
		self.closed = True
		self.set("down")
		self.lsock.close()
