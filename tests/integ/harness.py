"""
harness.py -- run a real ingressd with real replicas for one test.

Daemon writes a conf into a fresh temporary directory (its runtime_dir is
inside it), starts $BUILD/ingressd with stderr into a per-test log file and
waits for GET /-/healthz.  On stop it sends SIGTERM, then checks the exit
status, that no spawned replica it ever saw is still alive and that no unix
socket is left in runtime_dir.  Every wait is bounded; every process started
here is recorded so run.py can kill leftovers by pid.

Conn is a raw HTTP/1.1 client over one socket: it writes exactly the bytes a
test gives it and parses responses itself (Content-Length, chunked,
close-delimited, HEAD, 1xx), so tests can do keep-alive, pipelining and
malformed input that http.client would refuse to send.
"""

import copy
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
LOG_DIR = os.path.join(BUILD, "integ-logs")

# Set by run.py before each test: where logs go and which were written.
current_test = {"name": "adhoc", "logs": []}
# Every process started here, so run.py can kill leftovers (by pid).
_procs = []
_replica_pids = set()		# spawned by a daemon, seen in /-/deployments
_procs_lock = threading.Lock()
_ports = set()


def binary(name):
	return os.path.join(BUILD, name)


def free_port():
	"""A loopback TCP port nobody had a moment ago (and not handed out
	before by this process)."""
	for _ in range(50):
		s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
		try:
			s.bind(("127.0.0.1", 0))
			port = s.getsockname()[1]
		finally:
			s.close()
		if port not in _ports:
			_ports.add(port)
			return port
	raise RuntimeError("no free port")


def log_path(kind):
	"""A fresh log file name for the running test."""
	os.makedirs(LOG_DIR, exist_ok=True)
	safe = current_test["name"].replace("/", "_")
	n = len(current_test["logs"])
	path = os.path.join(LOG_DIR, "%s.%s.%d.log" % (safe, kind, n))
	current_test["logs"].append(path)
	return path


def _register(proc):
	with _procs_lock:
		_procs.append(proc)


def kill_leftovers():
	"""Kill (by pid) anything this module started that still runs.
	Returns the pids that had to be killed."""
	killed = []
	with _procs_lock:
		procs = list(_procs)
		_procs.clear()
		pids = sorted(_replica_pids)
		_replica_pids.clear()
	for p in procs:
		if p.poll() is None:
			killed.append(p.pid)
			try:
				p.kill()
			except OSError:
				pass
			try:
				p.wait(timeout=5)
			except subprocess.TimeoutExpired:
				pass
	# Replicas of a daemon that was killed may outlive it.
	for pid in pids:
		if pid_alive(pid) and "replica" in pid_cmdline(pid):
			killed.append(pid)
			try:
				os.kill(pid, signal.SIGKILL)
			except OSError:
				pass
	return killed


def pid_alive(pid):
	"""True if pid runs and is not a zombie."""
	try:
		with open("/proc/%d/stat" % pid) as f:
			data = f.read()
	except (FileNotFoundError, ProcessLookupError):
		return False
	except OSError:
		return True
	# The state follows the parenthesised command name.
	state = data[data.rfind(")") + 2:][:1]
	return state not in ("Z", "X", "")


def wait_pid_dead(pid, timeout=5.0):
	deadline = time.monotonic() + timeout
	while time.monotonic() < deadline:
		if not pid_alive(pid):
			return True
		time.sleep(0.02)
	return not pid_alive(pid)


def pid_cmdline(pid):
	try:
		with open("/proc/%d/cmdline" % pid, "rb") as f:
			return f.read().replace(b"\0", b" ").decode(errors="replace")
	except OSError:
		return ""


def deployment(d, name):
	"""GET /-/deployments/NAME on d's admin listener, as JSON."""
	r = d.admin_get("/-/deployments/" + name)
	if r.status != 200:
		raise AssertionError("GET /-/deployments/%s: %d %r" % (name,
		    r.status, r.body))
	return r.json()


def tcp_conns_to(port):
	"""Established TCP connections whose local port is port (the
	replica's side of each ingressd connection)."""
	n = 0
	for path in ("/proc/net/tcp", "/proc/net/tcp6"):
		try:
			with open(path) as f:
				lines = f.read().splitlines()[1:]
		except OSError:
			continue
		for ln in lines:
			fields = ln.split()
			local, state = fields[1], fields[3]
			if state == "01" and int(local.split(":")[1], 16) == port:
				n += 1
	return n


def stop_proc(proc, timeout=5.0):
	"""SIGTERM a child we started (if it still runs), SIGKILL it if it
	outlives timeout, and reap it."""
	if proc is None or proc.poll() is not None:
		return
	proc.terminate()
	try:
		proc.wait(timeout=timeout)
	except subprocess.TimeoutExpired:
		proc.kill()
		proc.wait(timeout=timeout)


def sockets_under(path):
	found = []
	for dirpath, _dirs, files in os.walk(path):
		for name in files:
			p = os.path.join(dirpath, name)
			try:
				if stat.S_ISSOCK(os.lstat(p).st_mode):
					found.append(p)
			except OSError:
				pass
	return found


def tail(path, n=40):
	try:
		with open(path, "rb") as f:
			lines = f.read().decode(errors="replace").splitlines()
	except OSError as e:
		return ["(cannot read %s: %s)" % (path, e)]
	return lines[-n:]


def wait_until(pred, timeout=5.0, interval=0.05, what="condition"):
	"""Poll pred() until it returns a true value; return it.  Raises
	AssertionError with the last value (or exception) on timeout."""
	deadline = time.monotonic() + timeout
	last = None
	while True:
		try:
			last = pred()
			if last:
				return last
		except (OSError, ValueError, KeyError, IndexError, TypeError,
		    HTTPError) as e:
			last = e
		if time.monotonic() >= deadline:
			raise AssertionError("timed out after %.1fs waiting for %s "
			    "(last: %r)" % (timeout, what, last))
		time.sleep(interval)


# ---------------------------------------------------------------- client


class HTTPError(Exception):
	"""The peer sent something that is not a valid HTTP response, or
	closed too early."""


class Response:
	def __init__(self):
		self.version = ""
		self.status = 0
		self.reason = ""
		self.headers = []		# [(name, value)] as received
		self.body = b""
		self.chunked = False
		self.close_delimited = False
		self.chunk_times = []		# [(monotonic, nbytes)] per chunk
		self.trailers = []		# [(name, value)] after the last chunk
		self.t_head = 0.0		# monotonic when the head was parsed
		self.t_end = 0.0

	def header(self, name, default=None):
		name = name.lower()
		for k, v in self.headers:
			if k.lower() == name:
				return v
		return default

	def header_all(self, name):
		name = name.lower()
		return [v for k, v in self.headers if k.lower() == name]

	def has_header(self, name):
		return self.header(name) is not None

	def json(self):
		return json.loads(self.body.decode("utf-8"))

	def __repr__(self):
		b = self.body[:200]
		return "<Response %s %d %s headers=%r body[:200]=%r>" % (
		    self.version, self.status, self.reason, self.headers, b)


def build_request(method, target, headers=None, body=None, chunks=None,
    version="HTTP/1.1", host="localhost"):
	"""The bytes of one request.  headers: dict or list of pairs, sent
	as given.  body (bytes) gets a Content-Length unless the headers
	already carry Content-Length or Transfer-Encoding; chunks (list of
	bytes) is sent chunked with Transfer-Encoding: chunked added."""
	if isinstance(headers, dict):
		headers = list(headers.items())
	headers = list(headers or [])
	names = {k.lower() for k, _ in headers}
	out = ["%s %s %s" % (method, target, version)]
	if host is not None and "host" not in names:
		out.append("Host: %s" % host)
	if chunks is not None:
		if "transfer-encoding" not in names:
			headers.append(("Transfer-Encoding", "chunked"))
	elif body is not None and "content-length" not in names and \
	    "transfer-encoding" not in names:
		headers.append(("Content-Length", str(len(body))))
	for k, v in headers:
		out.append("%s: %s" % (k, v))
	head = ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")
	if chunks is not None:
		parts = [head]
		for c in chunks:
			if c:
				parts.append(b"%x\r\n" % len(c) + c + b"\r\n")
		parts.append(b"0\r\n\r\n")
		return b"".join(parts)
	return head + (body or b"")


class Conn:
	"""One client connection to 127.0.0.1:port."""

	def __init__(self, port, timeout=10.0, host="127.0.0.1"):
		self.port = port
		self.sock = socket.create_connection((host, port),
		    timeout=timeout)
		self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
		self.buf = bytearray()
		self.eof = False

	def close(self):
		try:
			self.sock.close()
		except OSError:
			pass

	def __enter__(self):
		return self

	def __exit__(self, *exc):
		self.close()

	def settimeout(self, t):
		self.sock.settimeout(t)

	def send(self, data):
		self.sock.sendall(data)

	def send_in_thread(self, data):
		"""sendall() from a thread, for bodies that are mirrored back
		while they are still being sent.  join() the thread returned;
		its .error holds any exception."""
		def run():
			try:
				self.sock.sendall(data)
			except OSError as e:
				t.error = e
		t = threading.Thread(target=run, daemon=True)
		t.error = None
		t.start()
		return t

	def _fill(self):
		if self.eof:
			raise HTTPError("connection closed by peer")
		d = self.sock.recv(262144)
		if not d:
			self.eof = True
			raise HTTPError("connection closed by peer")
		self.buf += d

	def _line(self, limit=65536):
		while True:
			i = self.buf.find(b"\r\n")
			if i >= 0:
				line = bytes(self.buf[:i])
				del self.buf[:i + 2]
				return line
			if len(self.buf) > limit:
				raise HTTPError("line too long")
			self._fill()

	def _exact(self, n):
		while len(self.buf) < n:
			self._fill()
		d = bytes(self.buf[:n])
		del self.buf[:n]
		return d

	def _until_close(self):
		while True:
			try:
				self._fill()
			except HTTPError:
				break
			except ConnectionResetError:
				break
		d = bytes(self.buf)
		self.buf.clear()
		return d

	def read_head(self, resp):
		line = self._line()
		parts = line.decode("latin-1").split(" ", 2)
		if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
			raise HTTPError("bad status line %r" % line)
		resp.version = parts[0]
		try:
			resp.status = int(parts[1])
		except ValueError:
			raise HTTPError("bad status line %r" % line)
		resp.reason = parts[2] if len(parts) > 2 else ""
		resp.headers = []
		for _ in range(1000):
			line = self._line()
			if not line:
				break
			k, sep, v = line.decode("latin-1").partition(":")
			if not sep:
				raise HTTPError("bad header line %r" % line)
			resp.headers.append((k, v.strip(" \t")))
		else:
			raise HTTPError("too many header lines")
		resp.t_head = time.monotonic()

	def read_response(self, method="GET", skip_1xx=True):
		"""Read one response.  1xx responses are skipped unless
		skip_1xx is false, in which case one is returned as is."""
		while True:
			resp = Response()
			self.read_head(resp)
			if 100 <= resp.status < 200:
				if skip_1xx:
					continue
				return resp
			break
		te = (resp.header("transfer-encoding") or "").lower()
		cl = resp.header("content-length")
		if method == "HEAD" or resp.status in (204, 304):
			pass
		elif "chunked" in te:
			resp.chunked = True
			resp.body = self._read_chunked(resp)
		elif cl is not None:
			try:
				n = int(cl)
			except ValueError:
				raise HTTPError("bad content-length %r" % cl)
			resp.body = self._exact(n)
		else:
			resp.close_delimited = True
			resp.body = self._until_close()
		resp.t_end = time.monotonic()
		return resp

	def _read_chunked(self, resp):
		out = bytearray()
		for _ in range(10000000):
			line = self._line().decode("latin-1")
			size = int(line.split(";", 1)[0].strip(), 16)
			if size == 0:
				break
			out += self._exact(size)
			resp.chunk_times.append((time.monotonic(), size))
			if self._exact(2) != b"\r\n":
				raise HTTPError("chunk not followed by CRLF")
		# Trailers until the empty line.
		for _ in range(1000):
			line = self._line()
			if not line:
				break
			k, _, v = line.decode("latin-1").partition(":")
			resp.trailers.append((k.strip(), v.strip()))
		return bytes(out)

	def request(self, method, target, headers=None, body=None,
	    chunks=None, version="HTTP/1.1", host="localhost"):
		self.send(build_request(method, target, headers, body, chunks,
		    version, host))
		return self.read_response(method)

	def wait_closed(self, timeout=2.0):
		"""True when the peer closes (EOF or reset) within timeout.
		Bytes that arrive meanwhile are kept in self.buf."""
		if self.eof:
			return True
		deadline = time.monotonic() + timeout
		old = self.sock.gettimeout()
		try:
			while True:
				left = deadline - time.monotonic()
				if left <= 0:
					return False
				self.sock.settimeout(left)
				try:
					d = self.sock.recv(65536)
				except socket.timeout:
					return False
				except ConnectionResetError:
					self.eof = True
					return True
				if not d:
					self.eof = True
					return True
				self.buf += d
		finally:
			self.sock.settimeout(old)

	def pending(self, timeout=0.3):
		"""Whatever bytes arrive within timeout (none expected)."""
		self.wait_closed(timeout)
		return bytes(self.buf)


def request(port, method, target, headers=None, body=None, chunks=None,
    version="HTTP/1.1", timeout=10.0, host="localhost"):
	"""One request on a fresh connection."""
	with Conn(port, timeout=timeout) as c:
		return c.request(method, target, headers, body, chunks,
		    version, host)


def get_json(port, target, headers=None):
	r = request(port, "GET", target, headers=headers, timeout=5.0)
	if r.status != 200:
		raise HTTPError("GET %s: %d %r" % (target, r.status, r.body))
	return r.json()


# ---------------------------------------------------------------- daemon


def deep_merge(base, over):
	"""Merge over into a copy of base; a None value deletes the key."""
	out = copy.deepcopy(base)
	for k, v in over.items():
		if v is None:
			out.pop(k, None)
		elif isinstance(v, dict) and isinstance(out.get(k), dict):
			out[k] = deep_merge(out[k], v)
		else:
			out[k] = copy.deepcopy(v)
	return out


def spawn(kind, replicas=2, **extra):
	"""A spawn deployment of $BUILD/replica-KIND."""
	d = {"spawn": {"command": [binary("replica-" + kind)],
	    "replicas": replicas}}
	d.update(extra)
	return d


# How the example replicas of a conf run (test_inproc_parity.py sets it):
# "wire" as build/replica-KIND processes; "inproc" as build/mod-KIND.so
# loaded into ingressd; "hosted" as the same .so served over the wire by
# build/ingressd-host.  Applied to the whole conf a test builds.
REPLICA_MODE = {"mode": "wire"}


def apply_replica_mode(c, mode=None):
	"""Rewrite spawn deployments of build/replica-KIND for the mode."""
	mode = mode or REPLICA_MODE["mode"]
	if mode == "wire":
		return c
	prefix = binary("replica-")
	for name, dep in c.get("deployments", {}).items():
		cmd = dep.get("spawn", {}).get("command", [])
		if len(cmd) != 1 or not cmd[0].startswith(prefix):
			continue
		module = binary("mod-%s.so" % cmd[0][len(prefix):])
		if mode == "inproc":
			del dep["spawn"]
			dep["inproc"] = {"module": module}
		else:
			dep["spawn"]["command"] = [binary("ingressd-host"), module]
	return c


def base_conf():
	"""The default conf (conf/ingressd.json) shape, with ports, paths and
	drain filled in by Daemon."""
	return {
		"workers": 1,
		"log_level": "info",
		"limits": {
			"max_request_line": 8192,
			"max_header_bytes": 32768,
			"max_headers": 100,
			"max_body": 16777216,
			"max_connections": 10000,
		},
		"timeouts": {
			"header": 10, "body": 60, "keepalive": 75,
			"request": 60, "connect": 5, "queue": 5,
			"ping_interval": 5, "drain": 2,
		},
		"routes": [
			{"prefix": "/echo", "deployment": "echo"},
			{"prefix": "/hello", "deployment": "hello"},
			{"prefix": "/sleep", "deployment": "sleep"},
		],
		"deployments": {
			"echo": spawn("echo", 2, max_ongoing_requests=256),
			"hello": spawn("hello", 2, max_ongoing_requests=1024),
			"sleep": spawn("sleep", 2, max_ongoing_requests=1024),
		},
	}


class Daemon:
	"""
	with Daemon({"limits": {"max_body": 1024}}) as d:
		r = d.request("GET", "/echo")

	overrides are deep-merged into base_conf() (None deletes a key);
	conf replaces base_conf() entirely.  expect_exit is the exit status
	stop() asserts (None: don't check).
	"""

	def __init__(self, overrides=None, conf=None, expect_exit=0,
	    start_timeout=5.0, admin=True):
		self.tmpdir = tempfile.mkdtemp(prefix="ingressd-integ-")
		self.runtime_dir = os.path.join(self.tmpdir, "run")
		os.mkdir(self.runtime_dir)
		self.port = free_port()
		self.admin_port = free_port() if admin else None
		c = copy.deepcopy(conf) if conf is not None else base_conf()
		if overrides:
			c = deep_merge(c, overrides)
		c = apply_replica_mode(c)
		c.setdefault("listen", ["127.0.0.1:%d" % self.port])
		if admin:
			c.setdefault("admin", "127.0.0.1:%d" % self.admin_port)
		c.setdefault("runtime_dir", self.runtime_dir)
		self.conf = c
		self.conf_path = os.path.join(self.tmpdir, "ingressd.json")
		with open(self.conf_path, "w") as f:
			json.dump(c, f, indent=2)
		self.expect_exit = expect_exit
		self.start_timeout = start_timeout
		self.proc = None
		self.log = None
		self.logfile = None
		self.seen_pids = set()
		self.stopped = False
		# Sent with the harness's own admin requests (an admin token).
		self.admin_headers = None
		self.exit_status = None
		self.stop_elapsed = None

	# -- life cycle

	def start(self):
		exe = binary("ingressd")
		if not os.access(exe, os.X_OK):
			raise AssertionError("%s is not built" % exe)
		self.log = log_path("ingressd")
		# A copy of the conf next to the log: the temp dir goes away.
		with open(self.log[:-len(".log")] + ".conf.json", "w") as f:
			json.dump(self.conf, f, indent=2)
		self.logfile = open(self.log, "wb")
		self.proc = subprocess.Popen([exe, "-c", self.conf_path],
		    cwd=ROOT, stdin=subprocess.DEVNULL,
		    stdout=self.logfile, stderr=self.logfile)
		_register(self.proc)
		deadline = time.monotonic() + self.start_timeout
		last = None
		while time.monotonic() < deadline:
			if self.proc.poll() is not None:
				raise AssertionError("ingressd exited with %d "
				    "during start-up (log %s)" % (
				    self.proc.returncode, self.log))
			try:
				r = request(self.port, "GET", "/-/healthz",
				    timeout=1.0)
				if r.status == 200:
					return self
				last = "status %d" % r.status
			except (OSError, HTTPError) as e:
				last = e
			time.sleep(0.05)
		raise AssertionError("ingressd not healthy within %.1fs "
		    "(last: %r)" % (self.start_timeout, last))

	def send_signal(self, sig):
		self.proc.send_signal(sig)

	def stop(self, sig=signal.SIGTERM, timeout=5.0, check=True):
		"""Stop the daemon and check it cleaned up.  Returns the exit
		status; self.stop_elapsed is how long it took."""
		if self.stopped:
			return self.exit_status
		self.stopped = True
		problems = []
		if self.proc.poll() is None:
			try:
				self.deployments()	# records pids
			except (OSError, HTTPError, ValueError) as e:
				problems.append("/-/deployments before "
				    "stop: %r" % (e,))
			t0 = time.monotonic()
			self.proc.send_signal(sig)
			try:
				self.proc.wait(timeout=timeout)
			except subprocess.TimeoutExpired:
				problems.append("ingressd still running %.1fs "
				    "after %s; killed" % (timeout,
				    signal.Signals(sig).name))
				self.proc.kill()
				self.proc.wait(timeout=5)
			self.stop_elapsed = time.monotonic() - t0
		self.exit_status = self.proc.returncode
		if self.expect_exit is not None and \
		    self.exit_status != self.expect_exit:
			problems.append("ingressd exit status %r, expected %r"
			    % (self.exit_status, self.expect_exit))
		# The daemon is gone: its replicas must be too.
		alive = []
		for pid in sorted(self.seen_pids):
			if not wait_pid_dead(pid, 1.0) and \
			    "replica" in pid_cmdline(pid):
				alive.append(pid)
				try:
					os.kill(pid, signal.SIGKILL)
				except OSError:
					pass
		if alive:
			problems.append("replica pids still alive after "
			    "ingressd exited: %r" % alive)
		socks = sockets_under(self.runtime_dir)
		if socks:
			problems.append("sockets left in runtime_dir: %r" %
			    socks)
		if self.logfile:
			self.logfile.close()
		# Sanitizer reports from the daemon or its replicas (SAN=1).
		for line in self.log_text().splitlines():
			if "ERROR: AddressSanitizer" in line or \
			    "ERROR: LeakSanitizer" in line or \
			    "runtime error:" in line:
				problems.append("sanitizer: %s" % line.strip())
				break
		if check and problems:
			raise AssertionError("; ".join(problems))
		return self.exit_status

	def __enter__(self):
		try:
			return self.start()
		except BaseException:
			self._kill_quietly()
			raise

	def __exit__(self, exc_type, exc, tb):
		if exc_type is None:
			try:
				self.stop()
			finally:
				self._cleanup_dir()
			return False
		# The test already failed: clean up without masking it.
		try:
			self.stop(timeout=3.0, check=False)
		except BaseException:
			self._kill_quietly()
		self._cleanup_dir()
		return False

	def _kill_quietly(self):
		if self.proc and self.proc.poll() is None:
			self.proc.kill()
			try:
				self.proc.wait(timeout=5)
			except subprocess.TimeoutExpired:
				pass
		for pid in self.seen_pids:
			if pid_alive(pid) and "replica" in pid_cmdline(pid):
				try:
					os.kill(pid, signal.SIGKILL)
				except OSError:
					pass
		if self.logfile:
			self.logfile.close()
		self._cleanup_dir()

	def _cleanup_dir(self):
		shutil.rmtree(self.tmpdir, ignore_errors=True)

	# -- talking to it

	def conn(self, timeout=10.0):
		return Conn(self.port, timeout=timeout)

	def request(self, method, target, headers=None, body=None, **kw):
		return request(self.port, method, target, headers, body, **kw)

	def admin_get(self, target):
		return request(self.admin_port, "GET", target, timeout=5.0)

	def deployments(self, port=None):
		d = get_json(port or self.admin_port or self.port,
		    "/-/deployments", self.admin_headers)
		for dep in d.values():
			for r in dep.get("replicas", []):
				if isinstance(r.get("pid"), int) and \
				    r["pid"] > 0:
					self.seen_pids.add(r["pid"])
					with _procs_lock:
						_replica_pids.add(r["pid"])
		return d

	def routes(self):
		return get_json(self.admin_port, "/-/routes", self.admin_headers)

	def replica_pids(self, name=None):
		"""{replica id: pid} of spawned replicas."""
		out = {}
		for dname, dep in self.deployments().items():
			if name is not None and dname != name:
				continue
			for r in dep.get("replicas", []):
				if r.get("pid"):
					out[r["id"]] = r["pid"]
		return out

	def log_text(self):
		try:
			with open(self.log, "rb") as f:
				return f.read().decode(errors="replace")
		except OSError:
			return ""


class Replica:
	"""A replica run by hand (for `endpoints` deployments):
	$BUILD/replica-KIND --listen ADDR --id ID, stderr to the test log."""

	def __init__(self, kind, listen=None, rid=None):
		if listen is None:
			listen = "127.0.0.1:%d" % free_port()
		self.listen = listen
		self.rid = rid or "%s-byhand" % kind
		self.kind = kind
		self.proc = None
		self.logfile = None

	def start(self, timeout=5.0):
		self.log = log_path("replica-" + self.kind)
		self.logfile = open(self.log, "wb")
		self.proc = subprocess.Popen([binary("replica-" + self.kind),
		    "--listen", self.listen, "--id", self.rid], cwd=ROOT,
		    stdin=subprocess.DEVNULL, stdout=self.logfile,
		    stderr=self.logfile)
		_register(self.proc)
		# Ready once its socket exists / accepts.
		def ready():
			if self.proc.poll() is not None:
				raise AssertionError("replica exited with %d" %
				    self.proc.returncode)
			if self.listen.startswith("unix:"):
				return os.path.exists(self.listen[5:])
			host, port = self.listen.rsplit(":", 1)
			s = socket.create_connection((host, int(port)), 0.5)
			s.close()
			return True
		wait_until(ready, timeout, what="replica %s listening" %
		    self.listen)
		return self

	def stop(self):
		stop_proc(self.proc)
		if self.logfile:
			self.logfile.close()

	def __enter__(self):
		try:
			return self.start()
		except BaseException:
			self.stop()
			raise

	def __exit__(self, *exc):
		self.stop()
		return False


def timeout(seconds):
	"""Decorator: a per-test hard timeout other than run.py's default."""
	def deco(fn):
		fn.integ_timeout = seconds
		return fn
	return deco


# ---------------------------------------------------------------- operations
# (issue 6: reload, drain, metrics, logs, sd_notify)


class EnvDaemon(Daemon):
	"""A Daemon started with extra environment variables (e.g.
	NOTIFY_SOCKET); the test process's own environment is restored."""

	def __init__(self, overrides=None, env=None, **kw):
		super().__init__(overrides, **kw)
		self.env = dict(env or {})

	def start(self):
		saved = {k: os.environ.get(k) for k in self.env}
		os.environ.update(self.env)
		try:
			return super().start()
		finally:
			for k, v in saved.items():
				if v is None:
					os.environ.pop(k, None)
				else:
					os.environ[k] = v


def rewrite_conf(d, overrides=None, conf=None):
	"""Write a new conf for a running Daemon (same listen, admin and
	runtime_dir unless given) and return it; no signal is sent."""
	c = copy.deepcopy(conf) if conf is not None else base_conf()
	if overrides:
		c = deep_merge(c, overrides)
	for k in ("listen", "admin", "runtime_dir"):
		if k in d.conf:
			c.setdefault(k, d.conf[k])
	with open(d.conf_path, "w") as f:
		json.dump(c, f, indent=2)
	d.conf = c
	return c


def reload(d, overrides=None, conf=None):
	"""rewrite_conf() then SIGHUP."""
	c = rewrite_conf(d, overrides, conf)
	d.send_signal(signal.SIGHUP)
	return c


def wait_log(d, text, timeout=5.0, after=0):
	"""Wait until the daemon's log holds text (at or past offset after);
	return the log."""
	return wait_until(lambda: text in d.log_text()[after:] and
	    d.log_text(), timeout, what="%r in the daemon log" % text)


class LoadLoop:
	"""Client threads sending requests over keep-alive connections until
	stop().  Every request must get a status in ok_status (default 200);
	anything else, or a connection failure, is recorded in .failures.
	paths: the targets, taken in turn."""

	def __init__(self, port, paths, threads=4, ok_status=(200,)):
		self.port = port
		self.paths = list(paths)
		self.ok_status = set(ok_status)
		self.stopping = threading.Event()
		self.failures = []
		self.count = 0
		self.lock = threading.Lock()
		self.threads = [threading.Thread(target=self._run, args=(i,),
		    daemon=True) for i in range(threads)]

	def start(self):
		for t in self.threads:
			t.start()
		return self

	def _run(self, n):
		conn = None
		i = n
		for _ in range(10000000):
			if self.stopping.is_set():
				break
			path = self.paths[i % len(self.paths)]
			i += 1
			try:
				if conn is None:
					conn = Conn(self.port, timeout=10.0)
				r = conn.request("GET", path)
				bad = None if r.status in self.ok_status else \
				    "%s: %d %r" % (path, r.status, r.body[:200])
				if r.header("connection", "").lower() == \
				    "close":
					conn.close()
					conn = None
			except (OSError, HTTPError) as e:
				bad = "%s: %r" % (path, e)
				if conn is not None:
					conn.close()
				conn = None
			with self.lock:
				self.count += 1
				if bad:
					self.failures.append(bad)
		if conn is not None:
			conn.close()

	def stop(self):
		self.stopping.set()
		for t in self.threads:
			t.join(15)
		return self.failures


def scrape(port, target="/-/metrics"):
	"""GET the metrics page and parse the Prometheus text format into
	{(name, frozenset(labels.items())): float}; also checks that every
	sample's family was declared with # TYPE before it and that no sample
	repeats.  The parser is Prometheus's own (python3-prometheus-client,
	so run the tests with /usr/bin/python3), not one written by the
	renderer's authors."""
	try:
		from prometheus_client.parser import \
		    text_string_to_metric_families
	except ImportError:
		raise unittest.SkipTest("prometheus_client missing: apt-get "
		    "install python3-prometheus-client, run /usr/bin/python3")
	r = request(port, "GET", target, timeout=5.0)
	if r.status != 200:
		raise HTTPError("GET %s: %d %r" % (target, r.status, r.body))
	out = {}
	text = r.body.decode("utf-8")
	for family in text_string_to_metric_families(text):
		# A sample with no # TYPE before it gets a family of its own
		# of type "unknown".
		if family.type in ("unknown", "untyped"):
			raise AssertionError("sample before its # TYPE: %r" %
			    [s.name for s in family.samples])
		for s in family.samples:
			key = (s.name, frozenset(s.labels.items()))
			if key in out:
				raise AssertionError("duplicate sample: %s%r" %
				    (s.name, s.labels))
			out[key] = float(s.value)
	return out


def metric(samples, name, **labels):
	"""The value of one sample (0.0 when absent)."""
	return samples.get((name, frozenset(labels.items())), 0.0)


def metric_sum(samples, name, **labels):
	"""The sum of the samples of name whose labels include these (e.g.
	every code of a status_class)."""
	want = set(labels.items())
	return sum(v for (n, ls), v in samples.items()
	    if n == name and want <= ls)


# ---------------------------------------------------------------- resilience
# (issue 4: balancing, backpressure, deadlines, failures, flow control)


class BadReplica:
	"""tests/integ/bad_replica.py run by hand on a unix socket in a
	private directory (for `endpoints` deployments).  mode: see that
	file.  events() reads the JSON lines it reports."""

	def __init__(self, mode, rid=None, args=()):
		import sys
		self.python = sys.executable
		self.dir = tempfile.mkdtemp(prefix="ingressd-bad-")
		self.path = os.path.join(self.dir, "bad.sock")
		self.listen = "unix:" + self.path
		self.mode = mode
		self.rid = rid or "bad-" + mode
		self.args = list(args)
		self.report = os.path.join(self.dir, "events.jsonl")
		self.proc = None
		self.logfile = None

	def start(self, timeout=5.0):
		self.log = log_path("bad-replica-" + self.mode)
		self.logfile = open(self.log, "wb")
		script = os.path.join(ROOT, "tests", "integ", "bad_replica.py")
		self.proc = subprocess.Popen([self.python, script, "--listen",
		    self.listen, "--mode", self.mode, "--id", self.rid,
		    "--report", self.report] + self.args, cwd=ROOT,
		    stdin=subprocess.DEVNULL, stdout=self.logfile,
		    stderr=self.logfile)
		_register(self.proc)

		def ready():
			if self.proc.poll() is not None:
				raise AssertionError("bad replica exited with %d"
				    % self.proc.returncode)
			return self.events("listening") and \
			    os.path.exists(self.path)
		wait_until(ready, timeout, what="bad replica listening")
		return self

	def events(self, kind=None):
		out = []
		try:
			with open(self.report) as f:
				for line in f:
					if not line.endswith("\n"):
						break	# being written
					ev = json.loads(line)
					if kind is None or ev["event"] == kind:
						out.append(ev)
		except FileNotFoundError:
			pass
		return out

	def wait_event(self, kind, timeout=5.0):
		return wait_until(lambda: self.events(kind), timeout,
		    what="bad replica event %r" % kind)

	def stop(self):
		if self.proc and self.proc.poll() is None:
			self.proc.kill()
			try:
				self.proc.wait(timeout=5)
			except subprocess.TimeoutExpired:
				pass
		if self.logfile:
			self.logfile.close()
		shutil.rmtree(self.dir, ignore_errors=True)

	def __enter__(self):
		try:
			return self.start()
		except BaseException:
			self.stop()
			raise

	def __exit__(self, *exc):
		self.stop()
		return False


def rss_kb(pid):
	"""VmRSS of pid in kB (0 when it cannot be read)."""
	try:
		with open("/proc/%d/status" % pid) as f:
			for line in f:
				if line.startswith("VmRSS:"):
					return int(line.split()[1])
	except (OSError, ValueError, IndexError):
		pass
	return 0


class RssSampler:
	"""Samples a process's VmRSS every interval from a thread until
	stop(); .max_kb and .samples ([(monotonic, kB)])."""

	def __init__(self, pid, interval=0.05):
		self.pid = pid
		self.interval = interval
		self.samples = []
		self.max_kb = 0
		self.stopping = threading.Event()
		self.thread = threading.Thread(target=self._run, daemon=True)

	def _run(self):
		while not self.stopping.is_set():
			kb = rss_kb(self.pid)
			self.samples.append((time.monotonic(), kb))
			self.max_kb = max(self.max_kb, kb)
			self.stopping.wait(self.interval)

	def start(self):
		self.thread.start()
		return self

	def stop(self):
		self.stopping.set()
		self.thread.join(5)
		return self.max_kb


def replica_entry(d, deployment, rid):
	"""The /-/deployments record of one replica (by id), or None."""
	for r in d.deployments()[deployment]["replicas"]:
		if r["id"] == rid:
			return r
	return None


def wait_replica(d, deployment, rid, pred, timeout=5.0, what=None):
	"""Wait until pred(record of replica rid) is true; return the
	record."""
	def check():
		r = replica_entry(d, deployment, rid)
		return r if r is not None and pred(r) else None
	return wait_until(check, timeout, interval=0.02,
	    what=what or "replica %s of %s" % (rid, deployment))


def sleep_stats(port, prefix="/sleep"):
	"""The counters of the replica-sleep process that answers (use a
	deployment with one replica)."""
	return get_json(port, prefix + "/stats")


class ActivatedDaemon(Daemon):
	"""A Daemon started as systemd socket activation would: a listening
	socket bound here (on the daemon's port unless passed_port is
	given) becomes descriptor 3, with LISTEN_FDS=1 and LISTEN_PID set
	to the daemon's pid."""

	def __init__(self, overrides=None, passed_port=None, **kw):
		super().__init__(overrides, **kw)
		self.passed_port = passed_port or self.port

	def start(self):
		exe = binary("ingressd")
		lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
		lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		lsock.bind(("127.0.0.1", self.passed_port))
		lsock.listen(128)
		self.log = log_path("ingressd")
		self.logfile = open(self.log, "wb")
		try:
			# sh's $$ is the pid ingressd keeps after exec.
			self.proc = subprocess.Popen(["/bin/sh", "-c",
			    'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"', exe,
			    "-c", self.conf_path], cwd=ROOT,
			    stdin=subprocess.DEVNULL, stdout=self.logfile,
			    stderr=self.logfile, pass_fds=(3,),
			    preexec_fn=lambda: os.dup2(lsock.fileno(), 3))
		finally:
			lsock.close()	# the daemon holds the only copy now
		_register(self.proc)
		wait_until(lambda: self.proc.poll() is None and request(
		    self.port, "GET", "/-/healthz", timeout=1.0).status ==
		    200, self.start_timeout, what="ingressd healthy")
		return self
