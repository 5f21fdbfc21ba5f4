#!/usr/bin/env python3
"""
bench/handles/handles.py -- names at scale (issue 3): 10,000 registered
deployment names served by 2 local replica-hello processes through one
path-segment route (/m/NAME/...), ingressd with 1 worker.

Measures, in one run:
  1. registration: 20,000 PUT /-/deployments/NAME/replicas/ID on the admin
     listener (two replicas per name), per second;
  2. first request to a new name (the name resolved, its handle made,
     connections already warm): latency over 1,000 new names, against
     1,000 requests to one warm name, on one keep-alive connection;
  3. resident memory per idle warm handle: (RSS with 10,000 warm handles -
     RSS with the names registered and no handle) / 10,000;
  4. CPU of ingressd with 10,000 idle handles over IDLE_SECONDS (30):
     utime+stime from /proc/PID/stat;
  5. requests/s with wrk, the load spread uniformly over all 10,000 names
     vs the same load on one name, interleaved (one, all, one, all, ...)
     ROUNDS times; the ratio of the medians;
  6. idle expiry: handle_idle_ttl reloaded to 1 s, the time until all
     10,000 handles are freed, and the longest a request waited meanwhile.

Targets (issue 3): uniform >= 90% of one name; <= 4 KiB per handle;
< 1% of a core idle; first request p99 <= 2 ms.  Exit status 1 when one
is missed.  Environment: BUILD (build), NAMES (10000), NEW (1000),
IDLE_SECONDS (30), ROUNDS (3), DURATION (8), CONNS (64), OUT
($BUILD/bench-handles).  Only 127.0.0.1 and unix sockets; every process is
started and stopped here by its pid.
"""

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
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
NAMES = int(os.environ.get("NAMES", "10000"))
NEW = int(os.environ.get("NEW", "1000"))
IDLE_SECONDS = float(os.environ.get("IDLE_SECONDS", "30"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
DURATION = int(os.environ.get("DURATION", "8"))
CONNS = int(os.environ.get("CONNS", "64"))
OUT = os.environ.get("OUT", os.path.join(BUILD, "bench-handles"))
CLK_TCK = os.sysconf("SC_CLK_TCK")

procs = []


def free_port():
	s = socket.socket()
	s.bind(("127.0.0.1", 0))
	port = s.getsockname()[1]
	s.close()
	return port


def start(argv, log):
	p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
	    stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=ROOT)
	procs.append(p)
	return p


def stop_all():
	for p in procs:
		if p.poll() is not None and p.returncode != 0:
			print("bench/handles: %s exited with %d" % (p.args[0],
			    p.returncode), file=sys.stderr)
	for p in procs:
		if p.poll() is None:
			p.terminate()
	for p in procs:
		try:
			p.wait(timeout=10)
		except subprocess.TimeoutExpired:
			p.kill()
			p.wait(timeout=5)


class Conn:
	"""Minimal keep-alive HTTP/1.1 client (Content-Length answers)."""

	def __init__(self, port):
		self.s = socket.create_connection(("127.0.0.1", port), 10)
		self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
		self.buf = b""

	def request(self, method, target, body=b""):
		head = "%s %s HTTP/1.1\r\nHost: x\r\n" % (method, target)
		if body:
			head += "Content-Length: %d\r\n" % len(body)
		self.s.sendall(head.encode() + b"\r\n" + body)
		while b"\r\n\r\n" not in self.buf:
			self._fill()
		h, self.buf = self.buf.split(b"\r\n\r\n", 1)
		status = int(h.split(b" ", 2)[1])
		m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", h)
		n = int(m.group(1)) if m else 0
		while len(self.buf) < n:
			self._fill()
		b, self.buf = self.buf[:n], self.buf[n:]
		return status, b

	def _fill(self):
		d = self.s.recv(65536)
		if not d:
			raise OSError("connection closed")
		self.buf += d

	def close(self):
		self.s.close()


def rss_kib(pid):
	with open("/proc/%d/status" % pid) as f:
		for ln in f:
			if ln.startswith("VmRSS:"):
				return int(ln.split()[1])
	return 0


def cpu_ticks(pid):
	with open("/proc/%d/stat" % pid) as f:
		fields = f.read().rsplit(")", 1)[1].split()
	return int(fields[11]) + int(fields[12])	# utime, stime


def pct(xs, p):
	xs = sorted(xs)
	return xs[min(len(xs) - 1, int(len(xs) * p / 100.0))]


def wrk(port, script, log):
	out = subprocess.run(["timeout", "-k", "5", str(DURATION + 30), "wrk",
	    "-t1", "-c%d" % CONNS, "-d%ds" % DURATION, "-s", script,
	    "http://127.0.0.1:%d/" % port], capture_output=True, text=True)
	with open(log, "a") as f:
		f.write(out.stdout + out.stderr)
	m = re.search(r"Requests/sec:\s+([\d.]+)", out.stdout)
	errs = re.search(r"Non-2xx or 3xx responses: (\d+)", out.stdout)
	if m is None or errs is not None:
		raise RuntimeError("wrk failed: %s" % out.stdout[-500:])
	return float(m.group(1))


def main():
	os.makedirs(OUT, exist_ok=True)
	tmp = tempfile.mkdtemp(prefix="ingressd-bench-handles.")
	res = {}
	try:
		res = run(tmp)
	finally:
		stop_all()
		shutil.rmtree(tmp, ignore_errors=True)
	return report(res)


def run(tmp):
	reps = []
	for i in range(2):
		addr = "unix:%s/hello-%d.sock" % (tmp, i)
		start([os.path.join(BUILD, "replica-hello"), "--listen", addr,
		    "--id", "hello-%d" % i], os.path.join(OUT, "replica-%d.log" % i))
		reps.append(addr)
	port, admin = free_port(), free_port()
	conf = {"listen": ["127.0.0.1:%d" % port],
	    "admin": "127.0.0.1:%d" % admin, "workers": 1,
	    "log_level": os.environ.get("LOG_LEVEL", "warn"), "runtime_dir": os.path.join(tmp, "run"),
	    "handle_idle_ttl": 3600,
	    "routes": [{"prefix": "/m/", "deployment_from": "path"}],
	    "deployments": {}}
	cpath = os.path.join(tmp, "ingressd.json")
	with open(cpath, "w") as f:
		json.dump(conf, f)
	d = start([os.path.join(BUILD, "ingressd"), "-c", cpath],
	    os.path.join(OUT, "ingressd.log"))
	for _ in range(200):
		try:
			if Conn(admin).request("GET", "/-/healthz")[0] == 200:
				break
		except OSError:
			time.sleep(0.05)
	for r in reps:
		for _ in range(200):
			if os.path.exists(r[5:]):
				break
			time.sleep(0.05)
	res = {"names": NAMES, "rss_start_kib": rss_kib(d.pid)}

	# 1. Registration.
	names = ["n%d" % i for i in range(NAMES)]
	c = Conn(admin)
	t0 = time.monotonic()
	for name in names:
		for i, addr in enumerate(reps):
			st, b = c.request("PUT", "/-/deployments/%s/replicas/hello-%d"
			    % (name, i), json.dumps({"address": addr,
			    "max_ongoing_requests": 1024}).encode())
			if st != 200:
				raise RuntimeError("PUT %s: %d %r" % (name, st, b))
	res["register_per_s"] = 2 * NAMES / (time.monotonic() - t0)
	c.close()
	time.sleep(1)
	res["rss_registered_kib"] = rss_kib(d.pid)

	# 2. First request to a new name vs requests to a warm one.  The
	# replicas' connections are made (and warmed) by a first name.
	c = Conn(port)
	for target in ("/m/%s/x" % names[-1],) * 20:
		c.request("GET", target)
	first = []
	for name in names[:NEW]:
		t = time.perf_counter_ns()
		st, b = c.request("GET", "/m/%s/x" % name)
		first.append((time.perf_counter_ns() - t) / 1e6)
		if st != 200 or b != b"Hello world!":
			raise RuntimeError("%s: %d %r" % (name, st, b))
	warm = []
	for _ in range(NEW):
		t = time.perf_counter_ns()
		st, b = c.request("GET", "/m/%s/x" % names[0])
		warm.append((time.perf_counter_ns() - t) / 1e6)
	res["first_ms"] = (statistics.median(first), pct(first, 99),
	    max(first))
	res["warm_ms"] = (statistics.median(warm), pct(warm, 99), max(warm))
	for name in names[NEW:-1]:
		st, b = c.request("GET", "/m/%s/x" % name)
		if st != 200:
			raise RuntimeError("%s: %d" % (name, st))
	st, b = Conn(admin).request("GET", "/-/deployments/" + names[NAMES // 2])
	dep = json.loads(b)
	if dep["state"] != "ready" or dep["resolutions"] != 1:
		raise RuntimeError("not warm: %r" % dep)
	c.close()

	# 3, 4. Memory and idle CPU with every handle warm.
	time.sleep(2)
	res["rss_warm_kib"] = rss_kib(d.pid)
	res["per_handle_bytes"] = (res["rss_warm_kib"] -
	    res["rss_registered_kib"]) * 1024.0 / NAMES
	t0, c0 = time.monotonic(), cpu_ticks(d.pid)
	time.sleep(IDLE_SECONDS)
	t1, c1 = time.monotonic(), cpu_ticks(d.pid)
	res["idle_cpu_pct"] = (c1 - c0) / CLK_TCK / (t1 - t0) * 100.0
	res["idle_seconds"] = t1 - t0

	# 5. Uniform over every name vs one name, interleaved.
	lua_all = os.path.join(tmp, "all.lua")
	lua_one = os.path.join(tmp, "one.lua")
	with open(lua_all, "w") as f:
		f.write('request = function()\n  return wrk.format("GET", '
		    '"/m/n" .. math.random(0, %d) .. "/x")\nend\n' % (NAMES - 1))
	with open(lua_one, "w") as f:
		f.write('request = function()\n  return wrk.format("GET", '
		    '"/m/n" .. 0 .. "/x")\nend\n')
	one, every = [], []
	wlog = os.path.join(OUT, "wrk.log")
	open(wlog, "w").close()
	for _ in range(ROUNDS):
		one.append(wrk(port, lua_one, wlog))
		every.append(wrk(port, lua_all, wlog))
	res["rps_one"] = one
	res["rps_all"] = every
	res["ratio"] = statistics.median(every) / statistics.median(one)

	# 6. Idle expiry of every handle at once, requests meanwhile.
	time.sleep(1)
	res["rss_loaded_kib"] = rss_kib(d.pid)
	conf["handle_idle_ttl"] = 1
	with open(cpath, "w") as f:
		json.dump(conf, f)
	c = Conn(port)
	probe = []
	st, b = Conn(admin).request("GET", "/-/metrics")
	t0 = time.monotonic()
	os.kill(d.pid, signal.SIGHUP)
	done = None
	lost = 0
	while time.monotonic() - t0 < 30:
		t = time.perf_counter_ns()
		try:
			st, b = c.request("GET", "/-/healthz")
			if st != 200:
				print("bench/handles: probe got %d %r" % (st,
				    b[:200]), file=sys.stderr)
				raise OSError("probe refused")
		except OSError:
			lost += 1	# reported: a probe connection dropped
			c.close()
			c = Conn(port)
			continue
		probe.append((time.perf_counter_ns() - t) / 1e6)
		if len(probe) % 50 == 0:
			st, b = Conn(admin).request("GET", "/-/metrics")
			m = re.search(rb"\ningressd_handle_evictions_total (\d+)", b)
			if m and int(m.group(1)) >= NAMES:
				done = time.monotonic() - t0
				break
		time.sleep(0.002)
	c.close()
	res["expiry_s"] = done
	res["expiry_probe_max_ms"] = max(probe)
	res["expiry_probe_lost"] = lost
	time.sleep(1)
	res["rss_expired_kib"] = rss_kib(d.pid)
	return res


def report(res):
	if not res:
		print("bench/handles: no results", file=sys.stderr)
		return 1
	checks = [
	    ("uniform over %d names / one name >= 0.90" % res["names"],
	     res["ratio"] >= 0.90, "%.3f" % res["ratio"]),
	    ("RSS per idle warm handle <= 4096 B",
	     res["per_handle_bytes"] <= 4096,
	     "%.0f B" % res["per_handle_bytes"]),
	    ("CPU with %d idle handles < 1%% of a core" % res["names"],
	     res["idle_cpu_pct"] < 1.0, "%.3f%%" % res["idle_cpu_pct"]),
	    ("first request to a new name p99 <= 2 ms", res["first_ms"][1] <=
	     2.0, "%.3f ms" % res["first_ms"][1]),
	]
	lines = ["# bench/handles: %d names, 2 replica-hello, 1 worker" %
	    res["names"], "",
	    "| measure | value |", "|---|---|",
	    "| registrations/s (PUT, one connection) | %.0f |" %
	    res["register_per_s"],
	    "| RSS at start / names registered / %d warm handles (KiB) | "
	    "%d / %d / %d |" % (res["names"], res["rss_start_kib"],
	    res["rss_registered_kib"], res["rss_warm_kib"]),
	    "| RSS after the wrk runs / after every handle expired (KiB) | "
	    "%d / %d |" % (res["rss_loaded_kib"], res["rss_expired_kib"]),
	    "| RSS per idle warm handle | %.0f B |" % res["per_handle_bytes"],
	    "| CPU with %d idle handles over %.0f s | %.3f%% of a core |" % (
	    res["names"], res["idle_seconds"], res["idle_cpu_pct"]),
	    "| first request to a new name, ms (p50 / p99 / max, %d names) | "
	    "%.3f / %.3f / %.3f |" % ((NEW,) + res["first_ms"]),
	    "| request to a warm name, ms (p50 / p99 / max) | %.3f / %.3f / "
	    "%.3f |" % res["warm_ms"],
	    "| wrk -t1 -c%d, one name, req/s (rounds) | %s |" % (CONNS,
	    " ".join("%.0f" % x for x in res["rps_one"])),
	    "| wrk -t1 -c%d, uniform over all names, req/s (rounds) | %s |" % (
	    CONNS, " ".join("%.0f" % x for x in res["rps_all"])),
	    "| uniform / one (medians) | %.3f |" % res["ratio"],
	    "| all %d handles expired (ttl 1 s) after | %s |" % (res["names"],
	    "%.2f s" % res["expiry_s"] if res["expiry_s"] else "not in 30 s"),
	    "| longest request meanwhile (connections lost) | %.2f ms (%d) |" %
	    (res["expiry_probe_max_ms"], res["expiry_probe_lost"]),
	    "", "| target | met | value |", "|---|---|---|"]
	for what, ok, val in checks:
		lines.append("| %s | %s | %s |" % (what, "yes" if ok else "NO",
		    val))
	text = "\n".join(lines) + "\n"
	sys.stdout.write(text)
	with open(os.path.join(OUT, "results.md"), "w") as f:
		f.write(text)
	with open(os.path.join(OUT, "results.json"), "w") as f:
		json.dump(res, f, indent=2)
	return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
	sys.exit(main())
