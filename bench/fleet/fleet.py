#!/usr/bin/env python3
"""
bench/fleet/fleet.py -- a fleet on one etcd (issue 17): INSTANCES ingressd
processes (1 worker each) follow NAMES deployment names kept in one etcd
member (Debian's etcd-server on loopback, a temp data dir, stopped by pid).
Every name has one replica, the same replica-hello on a TCP port; every
instance has one route {"prefix": "/m/", "deployment_from": "path"} and
reaches etcd through a relay of its own (a Python byte pump, so the
compaction phase can cut it; it adds well under a millisecond).

Measures, in one run:
  1. propagation: CHANGES new names put one after another; for each, the
     time from sending the put to every instance routing GET /m/NAME/hello
     to the replica (200, not 404).  Every instance is asked in turn with
     pipelined requests on keep-alive connections (resolution: one round
     over the fleet, printed); p50/p99/max.
  2. idle: for IDLE_SECONDS, the gRPC calls started on etcd
     (grpc_server_started_total by method, from etcd's /metrics; the JSON
     gateway's calls are gRPC calls inside etcd, so they count) and the
     messages etcd sent on watch streams (progress notifications).
     Target: no call started, nothing but watch progress.
  3. RSS of each instance (VmRSS) with NAMES names and CHANGES warm handles.
  4. compaction re-list with nothing changed: every relay cut, the
     revision moved past every instance's (keys outside the prefix) and
     compacted, the relays restored: each instance's watch is cancelled for
     compaction and re-lists.  Time until every instance counted its
     re-list and is back in sync; Range calls etcd served; the sum of
     `resolutions` and of `version` over every name of every instance
     before and after (target: unchanged: no handle re-resolved).
  5. the per-handle long-poll design, computed: INSTANCES x NAMES handles,
     each holding one long-poll that returns at LONGPOLL_TIMEOUT (30 s) and
     is sent again: control-plane requests per minute at idle.

Environment: BUILD (build), INSTANCES (10), NAMES (10000), CHANGES (1000),
IDLE_SECONDS (30), PROGRESS (5: etcd's progress-notify interval, s),
LONGPOLL_TIMEOUT (30), OUT ($BUILD/bench-fleet), QUICK=1 (3 instances,
1,000 names, 100 changes, 10 s idle).  Results: OUT/results.md and
results.json.  Only 127.0.0.1; every process is started and stopped here by
its pid; every loop is bounded in count and time.
"""

import base64
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
QUICK = os.environ.get("QUICK", "") == "1"
INSTANCES = int(os.environ.get("INSTANCES", "3" if QUICK else "10"))
NAMES = int(os.environ.get("NAMES", "1000" if QUICK else "10000"))
CHANGES = int(os.environ.get("CHANGES", "100" if QUICK else "1000"))
IDLE_SECONDS = float(os.environ.get("IDLE_SECONDS", "10" if QUICK else "30"))
PROGRESS = float(os.environ.get("PROGRESS", "5"))
LONGPOLL_TIMEOUT = float(os.environ.get("LONGPOLL_TIMEOUT", "30"))
OUT = os.environ.get("OUT", os.path.join(BUILD, "bench-fleet"))
PREFIX = "/ingressd"
PUT_BATCH = 100			# puts per txn (etcd allows 128)
PROPAGATION_LIMIT = 10.0	# seconds one change may take before we give up

procs = []


def log(msg):
	print("bench/fleet: " + msg, flush=True)


def free_port():
	s = socket.socket()
	s.bind(("127.0.0.1", 0))
	port = s.getsockname()[1]
	s.close()
	return port


def start(argv, name):
	p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
	    stdout=open(os.path.join(OUT, name + ".log"), "wb"),
	    stderr=subprocess.STDOUT, cwd=ROOT)
	procs.append(p)
	return p


def stop_all():
	for p in procs:
		if p.poll() is None:
			p.terminate()
	for p in procs:
		try:
			p.wait(timeout=10)
		except subprocess.TimeoutExpired:
			p.kill()
			p.wait(timeout=5)


def wait_until(pred, timeout, what):
	deadline = time.monotonic() + timeout
	while time.monotonic() < deadline:
		v = pred()
		if v:
			return v
		time.sleep(0.05)
	raise RuntimeError("timed out (%.0f s) waiting for %s" % (timeout, what))


def b64(s):
	return base64.b64encode(s.encode()).decode()


def http(port, path, body=None, timeout=10.0):
	data = json.dumps(body).encode() if body is not None else None
	req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
	    data=data, headers={"Content-Type": "application/json"})
	with urllib.request.urlopen(req, timeout=timeout) as r:
		raw = r.read()
	return json.loads(raw) if path != "/metrics" else raw.decode()


def key(name):
	return "%s/deployments/%s/replicas/r1" % (PREFIX, name)


class Etcd:
	def __init__(self):
		self.dir = tempfile.mkdtemp(prefix="ingressd-bench-etcd-")
		self.port, self.peer = free_port(), free_port()

	def start(self):
		url = "http://127.0.0.1:%d" % self.port
		self.proc = start(["etcd", "--name", "b0", "--data-dir",
		    os.path.join(self.dir, "d"), "--listen-client-urls", url,
		    "--advertise-client-urls", url, "--listen-peer-urls",
		    "http://127.0.0.1:%d" % self.peer,
		    "--initial-advertise-peer-urls",
		    "http://127.0.0.1:%d" % self.peer, "--initial-cluster",
		    "b0=http://127.0.0.1:%d" % self.peer,
		    "--experimental-watch-progress-notify-interval",
		    "%gs" % PROGRESS, "--quota-backend-bytes", str(2 << 30)],
		    "etcd")

		def up():
			try:
				self.revision()
				return True
			except OSError:
				return False
		wait_until(up, 20, "etcd")

	def revision(self):
		return int(http(self.port, "/v3/kv/range", {"key": b64("x")},
		    timeout=2)["header"]["revision"])

	def put_many(self, kvs):
		ops = [{"request_put": {"key": b64(k), "value": b64(v)}}
		    for k, v in kvs]
		http(self.port, "/v3/kv/txn", {"success": ops})

	def put(self, k, v):
		http(self.port, "/v3/kv/put", {"key": b64(k), "value": b64(v)})

	def compact(self, rev):
		http(self.port, "/v3/kv/compaction", {"revision": str(rev),
		    "physical": True})

	def grpc_counts(self):
		"""{(family, method): value} of etcd's gRPC counters."""
		out = {}
		pat = re.compile(r'^(grpc_server_(?:started|msg_sent|'
		    r'msg_received)_total)\{([^}]*)\} ([0-9.e+]+)$')
		for line in http(self.port, "/metrics").splitlines():
			m = pat.match(line)
			if m:
				meth = re.search(r'grpc_method="([^"]*)"', m.group(2))
				k = (m.group(1), meth.group(1) if meth else "")
				out[k] = out.get(k, 0) + float(m.group(3))
		return out

	def stop(self):
		shutil.rmtree(self.dir, ignore_errors=True)


class Relay:
	"""A TCP relay in front of etcd that can be cut ("down": its
	connections closed, new ones refused) and restored ("up").  Blocking
	sockets without a timeout: an idle watch stays open for hours."""

	def __init__(self, target_port):
		self.target = target_port
		self.lsock = socket.socket()
		self.lsock.bind(("127.0.0.1", 0))
		self.lsock.listen(64)
		self.port = self.lsock.getsockname()[1]
		self.mode = "up"
		self.socks = []
		self.lock = threading.Lock()
		self.closed = False
		threading.Thread(target=self._accept, daemon=True).start()

	@property
	def endpoint(self):
		return "http://127.0.0.1:%d" % self.port

	def _accept(self):
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
				u.settimeout(None)
			except OSError:
				c.close()
				continue
			for s in (c, u):
				s.setsockopt(socket.IPPROTO_TCP,
				    socket.TCP_NODELAY, 1)
			with self.lock:
				self.socks += [c, u]
			for a, b in ((c, u), (u, c)):
				threading.Thread(target=self._pump, args=(a, b),
				    daemon=True).start()

	def _pump(self, a, b):
		for _ in range(100000000):
			try:
				data = a.recv(65536)
				if not data:
					break
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


class Instance:
	def __init__(self, i, etcd_endpoint):
		self.i = i
		self.port, self.admin = free_port(), free_port()
		self.dir = tempfile.mkdtemp(prefix="ingressd-bench-fleet-")
		conf = {"listen": ["127.0.0.1:%d" % self.port],
		    "admin": "127.0.0.1:%d" % self.admin, "workers": 1,
		    "runtime_dir": self.dir, "log_level": "warn",
		    "routes": [{"prefix": "/m/", "deployment_from": "path"}],
		    "deployments": {},
		    "registry": {"etcd": {"endpoints": [etcd_endpoint],
		        "prefix": PREFIX}}}
		self.conf = os.path.join(self.dir, "ingressd.json")
		with open(self.conf, "w") as f:
			json.dump(conf, f)
		self.sock = None
		self.buf = b""

	def start(self):
		self.proc = start([os.path.join(BUILD, "ingressd"), "-c",
		    self.conf], "ingressd-%d" % self.i)

	def metrics(self):
		m = {}
		for line in http(self.admin, "/metrics").splitlines():
			if line.startswith("ingressd_etcd_"):
				name, _, v = line.rpartition(" ")
				m[name[len("ingressd_etcd_"):]] = float(v)
		return m

	def rss_kib(self):
		with open("/proc/%d/status" % self.proc.pid) as f:
			for line in f:
				if line.startswith("VmRSS:"):
					return int(line.split()[1])
		return 0

	def totals(self):
		"""(sum of resolutions, sum of versions, names) over
		/-/deployments."""
		d = http(self.admin, "/-/deployments", timeout=30)
		return (sum(v["resolutions"] for v in d.values()),
		    sum(v["version"] for v in d.values()), len(d))

	# A keep-alive connection for the pipelined probes.
	def send_probe(self, name):
		if self.sock is None:
			self.sock = socket.create_connection(("127.0.0.1",
			    self.port), 2)
			self.sock.setsockopt(socket.IPPROTO_TCP,
			    socket.TCP_NODELAY, 1)
			self.buf = b""
		self.sock.sendall(b"GET /m/%s/hello HTTP/1.1\r\nHost: b\r\n\r\n"
		    % name.encode())

	def read_status(self):
		"""The status of the next response on the connection."""
		for _ in range(1000):
			head, sep, rest = self.buf.partition(b"\r\n\r\n")
			if sep:
				m = re.search(rb"(?i)\r\ncontent-length: *(\d+)",
				    head)
				n = int(m.group(1)) if m else 0
				if len(rest) >= n:
					self.buf = rest[n:]
					if re.search(rb"(?i)\r\nconnection: *close",
					    head):
						self.sock.close()
						self.sock = None
					return int(head.split(b" ", 2)[1])
			data = self.sock.recv(65536)
			if not data:
				raise OSError("instance %d closed" % self.i)
			self.buf += data
		raise OSError("no response from instance %d" % self.i)


def routes_everywhere(fleet, name, t0):
	"""Probe every instance not yet routing name, in pipelined rounds,
	until all do; (seconds from t0 until the last one did, rounds)."""
	todo = list(fleet)
	last = 0.0
	for rounds in range(1, 1000000):
		for inst in todo:
			inst.send_probe(name)
		now_todo = []
		for inst in todo:
			st = inst.read_status()
			if st == 200:
				last = time.monotonic() - t0
			elif st == 404:
				now_todo.append(inst)
			else:
				raise RuntimeError("instance %d: status %d for %s" %
				    (inst.i, st, name))
		todo = now_todo
		if not todo:
			return last, rounds
		if time.monotonic() - t0 > PROPAGATION_LIMIT:
			raise RuntimeError("%s not routed everywhere in %.0f s" %
			    (name, PROPAGATION_LIMIT))
	raise RuntimeError("probe rounds exhausted")


def pct(xs, p):
	xs = sorted(xs)
	return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def phase_load(etcd, addr):
	val = json.dumps({"address": addr, "max_ongoing_requests": 100})
	t0 = time.monotonic()
	names = ["n%05d" % i for i in range(NAMES)]
	for i in range(0, NAMES, PUT_BATCH):
		etcd.put_many([(key(n), val) for n in names[i:i + PUT_BATCH]])
	return time.monotonic() - t0


def phase_propagation(etcd, fleet, addr):
	val = json.dumps({"address": addr, "max_ongoing_requests": 100})
	lat, rounds = [], []
	for i in range(CHANGES):
		name = "c%05d" % i
		t0 = time.monotonic()
		etcd.put(key(name), val)
		s, r = routes_everywhere(fleet, name, t0)
		lat.append(s * 1000.0)
		rounds.append(r)
	return {"changes": CHANGES, "p50_ms": pct(lat, 50),
	    "p99_ms": pct(lat, 99), "max_ms": max(lat),
	    "mean_rounds": statistics.mean(rounds)}


def phase_idle(etcd):
	before = etcd.grpc_counts()
	time.sleep(IDLE_SECONDS)
	after = etcd.grpc_counts()
	delta = {}
	for k, v in after.items():
		d = v - before.get(k, 0)
		if d > 0:
			delta["%s{%s}" % k] = d
	started = sum(v for k, v in delta.items()
	    if k.startswith("grpc_server_started_total"))
	watch_sent = delta.get("grpc_server_msg_sent_total{Watch}", 0)
	return {"seconds": IDLE_SECONDS, "deltas": delta,
	    "calls_started_per_s": started / IDLE_SECONDS,
	    "watch_msgs_per_s": watch_sent / IDLE_SECONDS}


def phase_relist(etcd, fleet, relays):
	before = [inst.totals() for inst in fleet]
	relists0 = [inst.metrics().get("relists_total", 0) for inst in fleet]
	for r in relays:
		r.set("down")
	wait_until(lambda: all(inst.metrics().get("watch_up", 1) == 0
	    for inst in fleet), 30, "every watch down")
	for j in range(3):	# past every instance's revision, outside PREFIX
		etcd.put("/bench-other/%d" % j, "x")
	etcd.compact(etcd.revision())
	ranges0 = etcd.grpc_counts().get(("grpc_server_started_total",
	    "Range"), 0)
	cpu0 = [cpu_ticks(inst.proc.pid) for inst in fleet]
	t0 = time.monotonic()
	for r in relays:
		r.set("up")
	wait_until(lambda: all(inst.metrics().get("relists_total", 0) >
	    relists0[k] and inst.metrics().get("in_sync", 0) == 1
	    for k, inst in enumerate(fleet)), 60, "every instance re-listed")
	took = time.monotonic() - t0
	cpu = [cpu_ticks(inst.proc.pid) - c for inst, c in zip(fleet, cpu0)]
	ranges = etcd.grpc_counts().get(("grpc_server_started_total",
	    "Range"), 0) - ranges0
	after = [inst.totals() for inst in fleet]
	return {"seconds_until_all_relisted": took,
	    "range_calls": ranges,
	    "cpu_ms_per_instance_max": max(cpu) * 1000.0 /
	    os.sysconf("SC_CLK_TCK"),
	    "resolutions_before": sum(b[0] for b in before),
	    "resolutions_after": sum(a[0] for a in after),
	    "versions_before": sum(b[1] for b in before),
	    "versions_after": sum(a[1] for a in after),
	    "names_per_instance": before[0][2]}


def cpu_ticks(pid):
	with open("/proc/%d/stat" % pid) as f:
		fields = f.read().rsplit(")", 1)[1].split()
	return int(fields[11]) + int(fields[12])


def run():
	os.makedirs(OUT, exist_ok=True)
	etcd = Etcd()
	relays = []
	try:
		etcd.start()
		rport = free_port()
		addr = "127.0.0.1:%d" % rport
		start([os.path.join(BUILD, "replica-hello"), "--listen", addr,
		    "--id", "r1"], "replica-hello")
		log("putting %d names" % NAMES)
		load_s = phase_load(etcd, addr)
		relays = [Relay(etcd.port) for _ in range(INSTANCES)]
		fleet = [Instance(i, relays[i].endpoint)
		    for i in range(INSTANCES)]
		t0 = time.monotonic()
		for inst in fleet:
			inst.start()
		wait_until(lambda: all(_in_sync(inst) for inst in fleet),
		    120, "every instance in sync")
		sync_s = time.monotonic() - t0
		log("%d instances in sync in %.2f s; %d changes" % (INSTANCES,
		    sync_s, CHANGES))
		prop = phase_propagation(etcd, fleet, addr)
		log("propagation p50 %.2f ms p99 %.2f ms; idle %.0f s" % (
		    prop["p50_ms"], prop["p99_ms"], IDLE_SECONDS))
		idle = phase_idle(etcd)
		rss = [inst.rss_kib() for inst in fleet]
		log("compaction re-list")
		relist = phase_relist(etcd, fleet, relays)
		handles = INSTANCES * NAMES
		res = {"instances": INSTANCES, "names": NAMES, "quick": QUICK,
		    "put_names_s": load_s, "start_to_sync_s": sync_s,
		    "propagation": prop, "idle": idle,
		    "rss_kib": {"min": min(rss), "max": max(rss),
		        "mean": statistics.mean(rss)},
		    "relist": relist,
		    "longpoll": {"timeout_s": LONGPOLL_TIMEOUT,
		        "handles": handles,
		        "requests_per_min": handles * 60.0 / LONGPOLL_TIMEOUT},
		    "ours_requests_per_min": idle["calls_started_per_s"] * 60,
		    "ours_watch_msgs_per_min": idle["watch_msgs_per_s"] * 60}
		write(res)
		ok = (idle["calls_started_per_s"] == 0 and
		    relist["resolutions_before"] == relist["resolutions_after"]
		    and relist["versions_before"] == relist["versions_after"])
		return 0 if ok else 1
	finally:
		for r in relays:
			r.close()
		stop_all()
		etcd.stop()


def _in_sync(inst):
	try:
		m = inst.metrics()
	except OSError:
		return False
	return m.get("in_sync", 0) == 1


def write(res):
	with open(os.path.join(OUT, "results.json"), "w") as f:
		json.dump(res, f, indent=2)
	p, i, r, lp = (res["propagation"], res["idle"], res["relist"],
	    res["longpoll"])
	lines = [
	    "# bench/fleet: %d instances x %d names on one etcd%s" % (
	        res["instances"], res["names"], " (QUICK)" if res["quick"]
	        else ""),
	    "",
	    "| measure | result |",
	    "|---|---|",
	    "| %d names put (txn of %d) | %.1f s |" % (res["names"], PUT_BATCH,
	        res["put_names_s"]),
	    "| start to every instance in sync (list) | %.2f s |" %
	        res["start_to_sync_s"],
	    "| put -> every instance routes it, over %d changes | p50 %.2f ms, "
	        "p99 %.2f ms, max %.2f ms (%.1f probe rounds on average) |" % (
	        p["changes"], p["p50_ms"], p["p99_ms"], p["max_ms"],
	        p["mean_rounds"]),
	    "| idle %.0f s: gRPC calls started on etcd | %.2f /s |" % (
	        i["seconds"], i["calls_started_per_s"]),
	    "| idle: messages etcd sent on watch streams | %.2f /s |" %
	        i["watch_msgs_per_s"],
	    "| RSS per instance | mean %.0f KiB (min %d, max %d) |" % (
	        res["rss_kib"]["mean"], res["rss_kib"]["min"],
	        res["rss_kib"]["max"]),
	    "| compaction re-list, nothing changed: until every instance "
	        "re-listed | %.2f s, %d Range calls, max %.0f ms CPU per "
	        "instance |" % (r["seconds_until_all_relisted"],
	        r["range_calls"], r["cpu_ms_per_instance_max"]),
	    "| resolutions / versions summed over the fleet, before -> after "
	        "| %d -> %d / %d -> %d |" % (r["resolutions_before"],
	        r["resolutions_after"], r["versions_before"],
	        r["versions_after"]),
	    "| control plane at idle, this design | %.0f requests/min (+ %.0f "
	        "progress messages/min on open watches) |" % (
	        res["ours_requests_per_min"], res["ours_watch_msgs_per_min"]),
	    "| control plane at idle, a long-poll per handle (%.0f s) | "
	        "%d handles -> %.0f requests/min |" % (lp["timeout_s"],
	        lp["handles"], lp["requests_per_min"]),
	    "",
	    "idle deltas: " + json.dumps(i["deltas"]),
	]
	text = "\n".join(lines) + "\n"
	with open(os.path.join(OUT, "results.md"), "w") as f:
		f.write(text)
	sys.stdout.write(text)


if __name__ == "__main__":
	signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
	sys.exit(run())
