#!/usr/bin/env python3
"""
run.py -- the raw-socket HTTP/1.1 conformance suite, against any proxy.

    run.py --ingressd [BUILD]          start ingressd + replica-echo, run, stop
    run.py --proxy HOST:PORT --admin HOST:PORT      a running ingressd
    run.py --proxy HOST:PORT --echo-listen HOST:PORT
                                       any HTTP proxy whose upstream is the
                                       recording echo origin started here
Options:
    -k PATTERN     only cases whose id contains PATTERN (repeatable)
    --strict       an ALT outcome (allowed by the RFC, not our rule) fails
    --name NAME    the proxy's name in the report; "ingressd" applies the
                   cases' xfail marks (known gaps waiting on a daemon change)
    --json FILE    write every result as JSON (bench/conformance.sh)
    --h2           also the HTTP/2 section (h2cases.py, python3-h2): h2c
                   with prior knowledge; on by default with --ingressd
    --header-timeout S / --body-timeout S   enable the "slow" cases
    --max-request-line N --max-header-bytes N --max-headers N --max-body N
                   the limits the proxy was configured with

Each case opens a connection, sends its bytes, reads every response, finds
out whether the connection is still usable (a probe request on it) and
counts the requests that reached the upstream: through ingressd's admin
page (the replicas' "requests") or the echo origin's own record.  One line
per case (PASS, ALT, XFAIL, FAIL, SKIP), then a summary; exit 1 on FAIL.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from cases import Ctx, Case, Outcome, all_cases, req  # noqa: E402
from client import Closed, Conn  # noqa: E402
from echo_server import EchoServer  # noqa: E402
from h2cases import run_h2  # noqa: E402

PROBE = "/__probe"


# --- recorders: how many requests reached the upstream --------------------


class AdminRecorder:
	"""ingressd: the sum of "requests" over the replicas of every
	deployment in /-/deployments (REQUEST frames sent)."""

	def __init__(self, hostport):
		self.url = "http://%s/-/deployments" % hostport

	def count(self):
		with urllib.request.urlopen(self.url, timeout=5) as r:
			doc = json.loads(r.read().decode())
		return sum(rep.get("requests", 0) for dep in doc.values()
		    for rep in dep.get("replicas", []))


class EchoRecorder:
	def __init__(self, server):
		self.server = server

	def count(self):
		return self.server.count()


# --- one case ---------------------------------------------------------------


class Result:
	def __init__(self, case):
		self.case = case
		self.statuses = []
		self.conn = "?"
		self.fwd = -1
		self.verdict = "FAIL"
		self.why = ""
		self.responses = []
		self.seconds = 0.0

	def actual(self):
		return "%s %s fwd=%d" % (self.statuses or "no response",
		    self.conn, self.fwd)


def method_of(case):
	if case.send is not None and case.send.startswith(b"HEAD "):
		return "HEAD"
	return "GET"


def read_all(conn, case, res):
	"""Read responses until the connection closes, goes quiet, or (when
	the case expects it to stay open) the expected number came."""
	nexp = len(case.expect.statuses)
	want_open = case.expect.conn == "open"
	while len(res.responses) <= nexp + 3:
		timeout = case.read_timeout
		if len(res.responses) >= nexp:
			if want_open:
				return None
			# A proxy that means to close does so at once; one
			# that keeps the connection open is found out by the
			# probe, before its own idle timeout closes it.
			timeout = 1.0
		try:
			res.responses.append(conn.read_response(
			    method_of(case), timeout=timeout))
		except Closed:
			return "closed"
		except socket.timeout:
			return None
		except (ValueError, OSError) as e:
			res.why = "unparsable response: %s" % e
			return "junk"
	return None


def probe(conn, res):
	"""Is the connection still usable?  Returns (state, forwarded)."""
	if not conn.send(req("GET", PROBE)):
		return "closed", 0
	try:
		r = conn.read_response(timeout=3.0)
	except Closed:
		return "closed", 0
	except socket.timeout:
		return "stalled", 0
	except (ValueError, OSError):
		return "junk", 0
	e = r.echo()
	if e is not None and e.get("path") == PROBE:
		return "open", 1
	# Not the probe's answer: an extra response, e.g. a smuggled one.
	res.responses.append(r)
	return "open", 0


def outcome_ok(o, res):
	if res.statuses != o.statuses:
		return "statuses %s, want %s" % (res.statuses, o.statuses)
	if res.conn != o.conn:
		return "connection %s, want %s" % (res.conn, o.conn)
	if not o.fwd[0] <= res.fwd <= o.fwd[1]:
		return "forwarded %d, want %s" % (res.fwd, o.fwd[0]
		    if o.fwd[0] == o.fwd[1] else "%d-%d" % o.fwd)
	if o.check is not None:
		why = o.check(res.responses)
		if why:
			return "upstream received: " + why
	return None


def run_case(case, args, ctx, rec):
	res = Result(case)
	t0 = time.monotonic()
	n0 = rec.count()
	conn = Conn(args.host, args.port, timeout=5.0)
	try:
		pre = None
		if case.driver is not None:
			pre = case.driver(conn, ctx, case)
		else:
			conn.send(case.send)
		res.responses = list(pre or [])
		state = read_all(conn, case, res)
		fwd_probe = 0
		if state is None:
			state, fwd_probe = probe(conn, res)
		res.conn = state
	finally:
		conn.close()
	res.statuses = [r.status for r in res.responses]
	# Give a proxy that would forward a smuggled request time to do it.
	time.sleep(0.15)
	res.fwd = rec.count() - n0 - fwd_probe
	res.seconds = time.monotonic() - t0
	case_fail = case.driver_fail
	case.driver_fail = None
	why = case_fail or outcome_ok(case.expect, res)
	if case_fail:
		res.why = case_fail
	elif why is None:
		res.verdict = "PASS"
	else:
		res.why = res.why or why
		for o in case.alt:
			if outcome_ok(o, res) is None:
				res.verdict = "ALT"
				res.why = "allowed alternative: %r" % o
				break
	if case.xfail and args.name == "ingressd":
		if res.verdict == "PASS":
			res.verdict = "XPASS"
			res.why = "passes: remove the xfail mark (%s)" % case.xfail
		elif res.verdict != "ALT":
			res.verdict = "XFAIL"
			res.why = case.xfail
	return res


def liveness(group):
	return Case("liveness." + group, "liveness", "a fresh connection is "
	    "served after the %s cases" % group, req("GET", "/live/" + group),
	    (200,), "open", 1, check=None)


# --- targets ------------------------------------------------------------------


def free_port():
	s = socket.socket()
	s.bind(("127.0.0.1", 0))
	port = s.getsockname()[1]
	s.close()
	return port


def wait_port(host, port, timeout, proc=None):
	deadline = time.monotonic() + timeout
	while time.monotonic() < deadline:
		if proc is not None and proc.poll() is not None:
			raise RuntimeError("exited with %d" % proc.returncode)
		try:
			socket.create_connection((host, port), 0.5).close()
			return
		except OSError:
			time.sleep(0.05)
	raise RuntimeError("%s:%d not listening after %.0fs" % (host, port,
	    timeout))


class Ingressd:
	"""build/ingressd with one deployment of build/replica-echo (an
	endpoints deployment, the replica started here), every path routed
	to it; stopped by pid."""

	def __init__(self, build, ctx):
		self.build = os.path.join(ROOT, build)
		self.ctx = ctx
		self.tmp = tempfile.mkdtemp(prefix="ingressd-conf-")
		self.port = free_port()
		self.admin = free_port()
		self.rport = free_port()
		self.procs = []

	def conf(self):
		c = self.ctx
		return {
			"listen": ["127.0.0.1:%d" % self.port],
			"admin": "127.0.0.1:%d" % self.admin,
			"workers": 2,
			"log_level": "warn",
			"runtime_dir": os.path.join(self.tmp, "run"),
			"limits": {
				"max_request_line": c.max_request_line,
				"max_header_bytes": c.max_header_bytes,
				"max_headers": c.max_headers,
				"max_body": c.max_body,
			},
			"timeouts": {"header": c.header_timeout,
			    "body": c.body_timeout, "drain": 1},
			"routes": [{"prefix": "/", "deployment": "echo"}],
			"deployments": {"echo": {
			    "endpoints": ["127.0.0.1:%d" % self.rport],
			    "prewarm": True}},
		}

	def start(self):
		path = os.path.join(self.tmp, "ingressd.json")
		with open(path, "w") as f:
			json.dump(self.conf(), f, indent=2)
		self.log = open(os.path.join(self.tmp, "log"), "wb")
		r = subprocess.Popen([os.path.join(self.build, "replica-echo"),
		    "--listen", "127.0.0.1:%d" % self.rport, "--id",
		    "conformance-echo"], stdout=self.log, stderr=self.log,
		    stdin=subprocess.DEVNULL)
		self.procs.append(r)
		wait_port("127.0.0.1", self.rport, 5, r)
		d = subprocess.Popen([os.path.join(self.build, "ingressd"), "-c",
		    path], stdout=self.log, stderr=self.log,
		    stdin=subprocess.DEVNULL, cwd=ROOT)
		self.procs.insert(0, d)
		wait_port("127.0.0.1", self.admin, 5, d)
		wait_port("127.0.0.1", self.port, 5, d)
		return self

	def stop(self):
		"""Stop by pid; returns ingressd's exit status."""
		status = None
		for p in self.procs:
			if p.poll() is None:
				p.send_signal(signal.SIGTERM)
				try:
					p.wait(timeout=5)
				except subprocess.TimeoutExpired:
					p.kill()
					p.wait(timeout=5)
			if status is None:
				status = p.returncode
		self.log.close()
		return status

	def log_tail(self, n=30):
		with open(os.path.join(self.tmp, "log"), "rb") as f:
			return f.read().decode(errors="replace").splitlines()[-n:]


# --- main ---------------------------------------------------------------------


def select_cases(args, ctx):
	groups = {}
	for c in all_cases(ctx):
		groups.setdefault(c.group, []).append(c)
	out = []
	for g, cs in groups.items():
		out += cs
		out.append(liveness(g))
	if args.k:
		out = [c for c in out if any(k in c.id for k in args.k)]
	return out


def report(results, name):
	counts = {}
	for r in results:
		counts[r.verdict] = counts.get(r.verdict, 0) + 1
	order = ("PASS", "ALT", "XFAIL", "XPASS", "FAIL", "SKIP")
	parts = ["%d %s" % (counts[v], v.lower()) for v in order if v in counts]
	return "conformance (%s): %d cases: %s" % (name, len(results),
	    ", ".join(parts))


def run_suite(args, ctx, rec):
	results = []
	for case in select_cases(args, ctx):
		if case.needs and getattr(ctx, case.needs) is None:
			r = Result(case)
			r.verdict = "SKIP"
			r.why = "needs --%s" % case.needs.replace("_", "-")
			results.append(r)
			print("SKIP %-36s %s" % (case.id, r.why), flush=True)
			continue
		try:
			r = run_case(case, args, ctx, rec)
		except (OSError, ValueError) as e:
			r = Result(case)
			r.why = "error: %r" % e
		results.append(r)
		line = "%-5s %-36s %s" % (r.verdict, case.id, r.actual())
		if r.verdict not in ("PASS",):
			line += "  -- " + r.why
		print(line, flush=True)
	return results


def write_json(path, results, name):
	doc = {"proxy": name, "results": [{
	    "id": r.case.id, "group": r.case.group, "title": r.case.title,
	    "rfc": r.case.rfc, "verdict": r.verdict, "why": r.why,
	    "expect": repr(r.case.expect), "actual": r.actual(),
	    "statuses": r.statuses, "conn": r.conn, "fwd": r.fwd,
	    "seconds": round(r.seconds, 3)} for r in results]}
	with open(path, "w") as f:
		json.dump(doc, f, indent=1)


def main():
	ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
	ap.add_argument("--ingressd", nargs="?", const="build", default=None,
	    metavar="BUILD")
	ap.add_argument("--proxy")
	ap.add_argument("--admin")
	ap.add_argument("--echo-listen")
	ap.add_argument("--name", default=None)
	ap.add_argument("--strict", action="store_true")
	ap.add_argument("--json")
	ap.add_argument("-k", action="append", default=[])
	ap.add_argument("--h2", action="store_true", help="also the HTTP/2 "
	    "section (h2c on the proxy's listener; on with --ingressd)")
	ap.add_argument("--header-timeout", type=float)
	ap.add_argument("--body-timeout", type=float)
	ap.add_argument("--max-request-line", type=int, default=8192)
	ap.add_argument("--max-header-bytes", type=int, default=32768)
	ap.add_argument("--max-headers", type=int, default=100)
	ap.add_argument("--max-body", type=int, default=1048576)
	args = ap.parse_args()

	ctx = Ctx(args.max_request_line, args.max_header_bytes,
	    args.max_headers, args.max_body, args.header_timeout,
	    args.body_timeout)
	daemon = echo = None
	if args.ingressd is not None:
		ctx.header_timeout = ctx.header_timeout or 2
		ctx.body_timeout = ctx.body_timeout or 2
		daemon = Ingressd(args.ingressd, ctx).start()
		args.proxy = "127.0.0.1:%d" % daemon.port
		args.admin = "127.0.0.1:%d" % daemon.admin
		args.name = args.name or "ingressd"
		args.h2 = True
	if not args.proxy or not (args.admin or args.echo_listen):
		ap.error("give --ingressd, or --proxy with --admin or "
		    "--echo-listen")
	args.host, port = args.proxy.rsplit(":", 1)
	args.port = int(port)
	args.name = args.name or args.proxy
	if args.admin:
		rec = AdminRecorder(args.admin)
	else:
		h, p = args.echo_listen.rsplit(":", 1)
		echo = EchoServer(h, int(p)).start()
		rec = EchoRecorder(echo)

	t0 = time.monotonic()
	failed = True
	try:
		results = run_suite(args, ctx, rec)
		if args.h2:
			results += run_h2(args, rec, args.k)
		bad = {"FAIL", "XPASS"} | ({"ALT"} if args.strict else set())
		failed = any(r.verdict in bad for r in results)
		if args.json:
			write_json(args.json, results, args.name)
		print("(%.1fs)" % (time.monotonic() - t0))
		print(report(results, args.name))
		if echo is not None and echo.errors:
			print("echo origin: %d protocol errors, first: %s" % (
			    len(echo.errors), echo.errors[0]))
	finally:
		if daemon is not None:
			st = daemon.stop()
			if st != 0:
				print("ingressd exited with %r; log tail:" % st)
				for ln in daemon.log_tail():
					print("    | " + ln)
				failed = True
		if echo is not None:
			echo.stop()
	return 1 if failed else 0


if __name__ == "__main__":
	sys.exit(main())
