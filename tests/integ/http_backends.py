"""Real HTTP backends on loopback for the HTTP upstream tests: the
ThreadingHTTPServer origin (http_origin.py), a FastAPI app under uvicorn,
nginx as a static origin, and a raw-socket hostile backend.  Each is
started on a free port and stopped by its own pid."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from harness import ROOT, _register, free_port, log_path, wait_until

PYTHON = "/usr/bin/python3"		# sees Debian's fastapi and uvicorn
NGINX = "/usr/sbin/nginx"


def _port_open(port):
	try:
		socket.create_connection(("127.0.0.1", port), 0.2).close()
		return True
	except OSError:
		return False


class Origin:
	"""tests/integ/http_origin.py in its own process."""

	def __init__(self, port=None):
		self.port = port or free_port()
		self.dir = tempfile.mkdtemp(prefix="ingressd-origin-")
		self.report = os.path.join(self.dir, "events.jsonl")
		self.health_file = os.path.join(self.dir, "health")
		self.proc = None
		self.logfile = None

	@property
	def address(self):
		return "127.0.0.1:%d" % self.port

	def set_health(self, ok):
		with open(self.health_file, "w") as f:
			f.write("ok" if ok else "fail")

	def start(self):
		self.logfile = open(log_path("http-origin"), "wb")
		self.proc = subprocess.Popen([PYTHON, os.path.join(ROOT, "tests",
		    "integ", "http_origin.py"), "--port", str(self.port),
		    "--report", self.report, "--health-file",
		    self.health_file], cwd=ROOT, stdin=subprocess.DEVNULL,
		    stdout=self.logfile, stderr=self.logfile)
		_register(self.proc)
		wait_until(lambda: self.events("listening") and
		    _port_open(self.port), 10, what="origin listening")
		return self

	def events(self, kind=None):
		out = []
		try:
			with open(self.report) as f:
				for line in f:
					if not line.endswith("\n"):
						break
					ev = json.loads(line)
					if kind is None or ev["event"] == kind:
						out.append(ev)
		except FileNotFoundError:
			pass
		return out

	def kill(self):
		if self.proc and self.proc.poll() is None:
			self.proc.send_signal(signal.SIGKILL)
			self.proc.wait(5)

	def stop(self):
		self.kill()
		if self.logfile:
			self.logfile.close()
		shutil.rmtree(self.dir, ignore_errors=True)

	def __enter__(self):
		return self.start()

	def __exit__(self, *exc):
		self.stop()
		return False


class Uvicorn:
	"""tests/integ/http_fastapi_app.py under uvicorn."""

	def __init__(self):
		self.port = free_port()
		self.proc = None
		self.logfile = None

	@property
	def address(self):
		return "127.0.0.1:%d" % self.port

	def start(self):
		self.logfile = open(log_path("uvicorn"), "wb")
		self.proc = subprocess.Popen([PYTHON, "-m", "uvicorn",
		    "--app-dir", os.path.join(ROOT, "tests", "integ"),
		    "http_fastapi_app:app", "--host", "127.0.0.1", "--port",
		    str(self.port), "--log-level", "warning"], cwd=ROOT,
		    stdin=subprocess.DEVNULL, stdout=self.logfile,
		    stderr=self.logfile)
		_register(self.proc)
		wait_until(lambda: self.proc.poll() is None and
		    _port_open(self.port), 20, what="uvicorn listening")
		return self

	def stop(self):
		if self.proc and self.proc.poll() is None:
			self.proc.terminate()
			try:
				self.proc.wait(5)
			except subprocess.TimeoutExpired:
				self.proc.kill()
				self.proc.wait(5)
		if self.logfile:
			self.logfile.close()

	def __enter__(self):
		return self.start()

	def __exit__(self, *exc):
		self.stop()
		return False


NGINX_CONF = """
worker_processes 1;
daemon off;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log warn;
events { worker_connections 1024; }
http {
	%(access)s
	client_body_temp_path %(dir)s/tmp;
	proxy_temp_path %(dir)s/tmp;
	fastcgi_temp_path %(dir)s/tmp;
	uwsgi_temp_path %(dir)s/tmp;
	scgi_temp_path %(dir)s/tmp;
	keepalive_requests 100000;
	server {
		listen 127.0.0.1:%(port)d%(listen)s;
		%(server)s
		root %(dir)s/www;
		location = /health { return 200 "ok\\n"; }
		location / {
			add_header X-Conn $connection;
			add_header X-Client-DN $ssl_client_s_dn;
		}
	}
}
"""

# With tls: one line per request in access.log, for the TLS tests.
NGINX_TLS_LOG = """log_format tls '$connection $ssl_session_reused '
	    '$ssl_protocol "$ssl_alpn_protocol" "$ssl_client_s_dn" '
	    '$request_uri $status';
	access_log %(dir)s/access.log tls;"""


class Nginx:
	"""Debian's nginx as a static origin, our own instance.  tls: {"cert",
	"key"} to serve HTTPS, with "client_ca" to require client
	certificates (ssl_verify_client on), "http2" for listen ... http2;
	then access_log() gives each request's connection, session reuse
	("r" or "."), protocol, ALPN, client DN, URI and status."""

	def __init__(self, files=None, tls=None):
		self.tls = tls
		self.port = free_port()
		self.dir = tempfile.mkdtemp(prefix="ingressd-nginx-")
		self.files = files or {"index.html": b"hello from nginx\n"}
		self.proc = None
		self.logfile = None

	@property
	def address(self):
		return "127.0.0.1:%d" % self.port

	def start(self):
		# nginx's workers run as nobody: they must reach the files.
		os.chmod(self.dir, 0o755)
		os.makedirs(os.path.join(self.dir, "www"), 0o755)
		os.makedirs(os.path.join(self.dir, "tmp"))
		for name, data in self.files.items():
			with open(os.path.join(self.dir, "www", name), "wb") as f:
				f.write(data)
		conf = os.path.join(self.dir, "nginx.conf")
		with open(conf, "w") as f:
			f.write(NGINX_CONF % self._params())
		self.logfile = open(log_path("nginx"), "wb")
		self.proc = subprocess.Popen([NGINX, "-c", conf, "-e",
		    os.path.join(self.dir, "error.log")], cwd=self.dir,
		    stdin=subprocess.DEVNULL, stdout=self.logfile,
		    stderr=self.logfile)
		_register(self.proc)
		wait_until(lambda: self.proc.poll() is None and
		    _port_open(self.port), 10, what="nginx listening")
		return self

	def _params(self):
		p = {"dir": self.dir, "port": self.port, "access":
		    "access_log off;", "listen": "", "server": ""}
		t = self.tls
		if t is None:
			return p
		p["access"] = NGINX_TLS_LOG % p
		p["listen"] = " ssl http2" if t.get("http2") else " ssl"
		p["server"] = ("ssl_certificate %s; ssl_certificate_key %s; "
		    "ssl_protocols TLSv1.2 TLSv1.3;" % (t["cert"], t["key"]))
		if t.get("client_ca"):
			p["server"] += (" ssl_verify_client on; "
			    "ssl_client_certificate %s;" % t["client_ca"])
		return p

	def access_log(self):
		"""[(connection, reused, protocol, alpn, client_dn, uri,
		status)] so far."""
		out = []
		try:
			with open(os.path.join(self.dir, "access.log")) as f:
				for line in f:
					a = line.split(" ")
					q = line.split('"')
					uri, status = q[4].split()
					out.append((a[0], a[1], a[2], q[1], q[3],
					    uri, int(status)))
		except FileNotFoundError:
			pass
		return out

	def stop(self):
		if self.proc and self.proc.poll() is None:
			self.proc.send_signal(signal.SIGQUIT)
			try:
				self.proc.wait(5)
			except subprocess.TimeoutExpired:
				self.proc.kill()
				self.proc.wait(5)
		if self.logfile:
			self.logfile.close()
		shutil.rmtree(self.dir, ignore_errors=True)

	def __enter__(self):
		return self.start()

	def __exit__(self, *exc):
		self.stop()
		return False


GOOD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 5\r\n\r\ngood\n")


class Hostile:
	"""A raw-socket backend: GET /bad gets the bytes given, any other path
	a well-formed keep-alive response.  Records, per connection, the
	paths asked and whether the proxy closed it (.closed)."""

	def __init__(self, bad):
		self.bad = bad
		self.port = free_port()
		self.lock = threading.Lock()
		self.conns = []			# [{"paths": [...], "closed": bool}]
		self.stopping = threading.Event()
		self.lsock = None
		self.thread = None

	@property
	def address(self):
		return "127.0.0.1:%d" % self.port

	def start(self):
		self.lsock = socket.socket()
		self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		self.lsock.bind(("127.0.0.1", self.port))
		self.lsock.listen(64)
		self.lsock.settimeout(0.1)
		self.thread = threading.Thread(target=self._accept, daemon=True)
		self.thread.start()
		return self

	def _accept(self):
		while not self.stopping.is_set():
			try:
				s, _ = self.lsock.accept()
			except socket.timeout:
				continue
			except OSError:
				return
			rec = {"paths": [], "closed": False}
			with self.lock:
				self.conns.append(rec)
			threading.Thread(target=self._serve, args=(s, rec),
			    daemon=True).start()

	def _serve(self, s, rec):
		buf = b""
		s.settimeout(0.2)
		try:
			while not self.stopping.is_set():
				while b"\r\n\r\n" not in buf:
					try:
						d = s.recv(65536)
					except socket.timeout:
						if self.stopping.is_set():
							return
						continue
					if not d:
						with self.lock:
							rec["closed"] = True
						return
					buf += d
				head, _, buf = buf.partition(b"\r\n\r\n")
				path = head.split(b" ")[1].decode("latin-1")
				with self.lock:
					rec["paths"].append(path)
				if not self.answer(s, rec, path):
					return
		except OSError:
			with self.lock:
				rec["closed"] = True
		finally:
			s.close()

	def answer(self, s, rec, path):
		"""Answer one request; False: close the connection (a subclass
		scripts other behaviour here)."""
		s.sendall(self.bad if path == "/bad" else GOOD)
		return True

	def closed_after_bad(self):
		"""Was every connection that carried /bad closed by the proxy?"""
		with self.lock:
			bad = [c for c in self.conns if "/bad" in c["paths"]]
			return bool(bad) and all(c["closed"] for c in bad)

	def stop(self):
		self.stopping.set()
		if self.lsock:
			self.lsock.close()
		if self.thread:
			self.thread.join(2)

	def __enter__(self):
		return self.start()

	def __exit__(self, *exc):
		self.stop()
		return False


def wait_ready(d, name, timeout=10.0):
	"""Wait for deployment name's handle and a replica to be ready."""
	def ready():
		dep = d.deployments().get(name) or {}
		return any(r["state"] == "ready" for r in dep.get("replicas", []))
	wait_until(ready, timeout, what="%s ready" % name)


def timed(fn):
	t0 = time.monotonic()
	out = fn()
	return out, time.monotonic() - t0


class Scripted(Hostile):
	"""A raw-socket backend scripted per request: on(s, rec, path) answers
	(rec["paths"] holds the paths this connection carried, this one
	last) and says whether the connection stays open."""

	def __init__(self, on):
		super().__init__(b"")
		self.on = on

	def answer(self, s, rec, path):
		return self.on(s, rec, path)

	def connections(self):
		with self.lock:
			return len(self.conns)

