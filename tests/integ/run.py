#!/usr/bin/env python3
"""
run.py -- run the integration tests: tests/integ/test_*.py.

	python3 tests/integ/run.py [-k PATTERN]... [-t SECONDS] [-v]

Each test function runs with a hard timeout (60 s unless it is decorated
with harness.timeout(N), or -t); one line per test, then
"integ: N passed, M failed[, K skipped]".  Exit status 1 on any failure.
Logs go to $BUILD/integ-logs/; for a failing test the tail of every daemon
and replica log it wrote is printed.

Files are named test_AREA_TOPIC.py, so `-k test_AREA_` runs an area:
	http        HTTP/1.1 at the front door: keep-alive, pipelining,
	            HEAD, Expect, the errors the daemon answers itself
	proxy       requests through to replicas and back: bodies, streaming,
	            concurrency, the Python SDK's replicas
	names       how a request finds its replicas: routes, resolution,
	            registration, DNS, prewarm, expiry
	hostile     clients that attack: limits, slow clients, smuggling
	resilience  replicas that fail: crashes, restarts, deadlines, flow
	            control, protocol errors
	ops         the operator's side: CLI, admin API, conf check, stop,
	            reload, logs, metrics, sd_notify
"""

import argparse
import fnmatch
import glob
import os
import signal
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402


class TestTimeout(BaseException):
	"""Raised in the test by SIGALRM.  A BaseException so that a test's
	`except Exception` does not swallow it."""


def _on_alarm(signum, frame):
	raise TestTimeout("hard timeout")


def iter_tests(suite):
	for t in suite:
		if isinstance(t, unittest.TestSuite):
			yield from iter_tests(t)
		else:
			yield t


def matches(test_id, patterns):
	if not patterns:
		return True
	for p in patterns:
		if any(c in p for c in "*?["):
			if fnmatch.fnmatch(test_id, p) or \
			    fnmatch.fnmatch(test_id, "*" + p + "*"):
				return True
		elif p in test_id:
			return True
	return False


class Result(unittest.TestResult):
	"""Collects the outcome of one test at a time."""

	def __init__(self):
		super().__init__()
		self.outcome = None
		self.detail = ""

	def addSuccess(self, test):
		if self.outcome is None:
			self.outcome = "PASS"

	def addFailure(self, test, err):
		self.outcome = "FAIL"
		self.detail += self._exc_info_to_string(err, test)

	def addError(self, test, err):
		self.outcome = "FAIL"
		self.detail += self._exc_info_to_string(err, test)

	def addSkip(self, test, reason):
		self.outcome = "SKIP"
		self.detail = reason

	def addExpectedFailure(self, test, err):
		self.outcome = "PASS"

	def addUnexpectedSuccess(self, test):
		self.outcome = "FAIL"
		self.detail = "unexpected success"

	def addSubTest(self, test, subtest, err):
		if err is not None:
			self.outcome = "FAIL"
			self.detail += "%s:\n%s" % (subtest,
			    self._exc_info_to_string(err, test))


def test_limit(test, default):
	fn = getattr(test, test._testMethodName, None)
	return getattr(fn, "integ_timeout", default)


def run_one(test, limit):
	res = Result()
	# A watchdog for the case SIGALRM cannot break (stuck in C code):
	# kill what we started and give up on the whole run.
	def watchdog():
		print("\nintegration: %s stuck %.0fs past its timeout; killing "
		    "%r and exiting" % (test.id(), 30,
		    harness.kill_leftovers()), flush=True)
		os._exit(2)
	wd = threading.Timer(limit + 30, watchdog)
	wd.daemon = True
	wd.start()
	old = signal.signal(signal.SIGALRM, _on_alarm)
	signal.setitimer(signal.ITIMER_REAL, limit)
	try:
		test(res)
	except TestTimeout:
		# Raised outside the test method (setUp/tearDown/cleanups).
		res.outcome = "FAIL"
		res.detail += "hard timeout of %ds\n" % limit
	finally:
		signal.setitimer(signal.ITIMER_REAL, 0)
		signal.signal(signal.SIGALRM, old)
		wd.cancel()
	if "TestTimeout" in res.detail:
		res.detail += "\n(hard timeout of %ds)\n" % limit
	return res


def main():
	ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
	ap.add_argument("-k", action="append", default=[],
	    help="run tests whose id contains PATTERN (or matches a glob)")
	ap.add_argument("-t", type=float, default=60.0,
	    help="default per-test timeout in seconds (60)")
	ap.add_argument("-v", action="store_true",
	    help="print the log tail for passing tests too")
	ap.add_argument("-l", action="store_true", help="list tests and exit")
	args = ap.parse_args()

	loader = unittest.TestLoader()
	suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
	tests = [t for t in iter_tests(suite) if matches(t.id(), args.k)]
	# Import errors show up as _FailedTest: report them as failures.
	if args.l:
		for t in tests:
			print(t.id())
		return 0
	os.makedirs(harness.LOG_DIR, exist_ok=True)
	for pat in ("*.log", "*.conf.json"):
		for old in glob.glob(os.path.join(harness.LOG_DIR, pat)):
			os.unlink(old)

	passed = failed = skipped = 0
	t_all = time.monotonic()
	for t in tests:
		harness.current_test["name"] = t.id()
		harness.current_test["logs"] = []
		t0 = time.monotonic()
		res = run_one(t, test_limit(t, args.t))
		leftovers = harness.kill_leftovers()
		if leftovers and res.outcome == "PASS":
			res.outcome = "FAIL"
			res.detail += "processes left running (killed): %r\n" % \
			    leftovers
		dt = time.monotonic() - t0
		outcome = res.outcome or "FAIL"
		if outcome == "SKIP":
			skipped += 1
			print("SKIP %s (%s)" % (t.id(), res.detail), flush=True)
			continue
		print("%s %s (%.2fs)" % (outcome, t.id(), dt), flush=True)
		if outcome == "PASS":
			passed += 1
			if not args.v:
				continue
		else:
			failed += 1
			for line in res.detail.rstrip().splitlines():
				print("    " + line)
		for log in harness.current_test["logs"]:
			print("    --- tail of %s" % os.path.relpath(log))
			for line in harness.tail(log, 30):
				print("    | " + line)
		sys.stdout.flush()

	summary = "integ: %d passed, %d failed" % (passed, failed)
	if skipped:
		summary += ", %d skipped" % skipped
	print("(%.1fs)" % (time.monotonic() - t_all))
	print(summary)
	return 1 if failed or not tests and not args.k else 0


if __name__ == "__main__":
	sys.exit(main())
