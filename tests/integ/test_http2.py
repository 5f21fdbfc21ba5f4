"""HTTP/2 at the front door (issue 14): h2c with prior knowledge on the
public listener beside HTTP/1.1; routes, header policy and the access log
as for HTTP/1.1; RFC 9113 edge cases answered with the codes it names
(raw frames, tests/integ/h2_client.py) while the daemon stays up and
serves others; curl and h2load as real clients."""

import json
import os
import shutil
import struct
import subprocess
import threading
import time
import unittest

from h2_client import H2, frame, PREFACE, DATA, HEADERS, CONTINUATION, \
    RST_STREAM, SETTINGS, PING, WINDOW_UPDATE, GOAWAY, END_HEADERS, \
    PROTOCOL_ERROR, FLOW_CONTROL_ERROR, STREAM_CLOSED, CANCEL, \
    ENHANCE_YOUR_CALM, NO_ERROR
import harness
from harness import Daemon, timeout


def curl(port, path, *args):
	if shutil.which("curl") is None:
		raise unittest.SkipTest("curl missing")
	out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge",
	    "-w", "\n%{http_version} %{http_code}", *args,
	    "http://127.0.0.1:%d%s" % (port, path)], capture_output=True,
	    timeout=10)
	body, _, tail = out.stdout.rpartition(b"\n")
	version, code = tail.decode().split()
	return version, int(code), body


class Http2(unittest.TestCase):
	"""A daemon per case; each case also shows it still serves."""

	def setUp(self):
		self.tmp = harness.tempfile.mkdtemp(prefix="ingressd-h2-")
		self.alog = os.path.join(self.tmp, "access.log")
		self.d = Daemon({"access_log": self.alog,
		    "access_log_format": "json"})
		self.d.__enter__()

	def tearDown(self):
		self.d.__exit__(None, None, None)
		shutil.rmtree(self.tmp, ignore_errors=True)

	def served(self):
		"""Other clients are served, over HTTP/2 and HTTP/1.1."""
		self.assertEqual(curl(self.d.port, "/hello"),
		    ("2", 200, b"Hello world!"))
		r = self.d.request("GET", "/hello")
		self.assertEqual((r.status, r.body), (200, b"Hello world!"))

	@timeout(20)
	def test_curl_get_post_through_routes(self):
		self.assertEqual(curl(self.d.port, "/hello"),
		    ("2", 200, b"Hello world!"))
		v, code, body = curl(self.d.port, "/echo/x?q=1", "-d", "abc123",
		    "-H", "x-custom: yes")
		self.assertEqual((v, code), ("2", 200))
		j = json.loads(body)
		self.assertEqual((j["method"], j["path"], j["query"], j["body"]),
		    ("POST", "/echo/x", "q=1", "abc123"))
		self.assertEqual(j["headers"]["x-custom"], "yes")
		self.assertEqual(j["headers"]["host"], "127.0.0.1:%d" %
		    self.d.port)
		self.assertEqual(j["headers"]["x-forwarded-for"], "127.0.0.1")
		v, code, body = curl(self.d.port, "/nope")
		self.assertEqual((v, code), ("2", 404))
		self.assertIn(b"no route for this path", body)
		self.served()

	@timeout(20)
	def test_access_log_says_http2(self):
		curl(self.d.port, "/hello?alog=1")

		def line():
			if not os.path.exists(self.alog):
				return None
			for ln in open(self.alog):
				j = json.loads(ln)
				if j["target"] == "/hello?alog=1":
					return j
			return None
		j = harness.wait_until(line, 5.0, what="the access log line")
		self.assertEqual((j["protocol"], j["status"], j["deployment"]),
		    ("HTTP/2.0", 200, "hello"))

	@timeout(20)
	def test_connection_specific_fields_are_protocol_errors(self):
		c = H2(self.d.port)
		c.request(1, "/hello", extra=[("connection", "keep-alive")])
		_, _, _, rst = c.response(1)
		self.assertEqual(rst, PROTOCOL_ERROR)
		c.request(3, "/hello", extra=[("te", "gzip")])
		self.assertEqual(c.response(3)[3], PROTOCOL_ERROR)
		c.request(5, "/hello", extra=[("te", "trailers")])
		h, body, _, rst = c.response(5)
		self.assertEqual((h[":status"], body, rst),
		    ("200", b"Hello world!", None))
		c.close()
		self.served()

	@timeout(20)
	def test_split_cookies_joined(self):
		"""RFC 9113 8.2.3: cookie crumbs in separate fields reach the
		replica as one Cookie field, joined with "; "."""
		c = H2(self.d.port)
		c.request(1, "/echo/c", extra=[("cookie", "a=1"),
		    ("x-between", "y"), ("cookie", "b=2"), ("cookie", "c=3")])
		h, body, _, rst = c.response(1)
		self.assertEqual((h[":status"], rst), ("200", None))
		j = json.loads(body)
		self.assertEqual(j["headers"]["cookie"], "a=1; b=2; c=3")
		self.assertEqual(j["headers"]["x-between"], "y")
		c.request(3, "/echo/c", extra=[("cookie", "only=1")])
		j = json.loads(c.response(3)[1])
		self.assertEqual(j["headers"]["cookie"], "only=1")
		c.close()

	@timeout(20)
	def test_bad_preface_goaway_protocol_error(self):
		c = H2(self.d.port, preface=b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
		    settings=False)
		g = c.goaway()
		self.assertIsNotNone(g, c.frames)
		self.assertEqual(g.error_code(), PROTOCOL_ERROR)
		self.assertTrue(c.wait_closed())
		self.served()

	@timeout(20)
	def test_frames_on_closed_stream(self):
		c = H2(self.d.port)
		c.request(1, "/hello")
		self.assertEqual(c.response(1)[0][":status"], "200")
		c.data(1, b"late")
		f = c.until(lambda f: f.type in (GOAWAY, RST_STREAM) and
		    f.sid in (0, 1))
		self.assertIsNotNone(f, c.frames)
		self.assertEqual(f.error_code(), STREAM_CLOSED)
		c.close()
		self.served()

	@timeout(20)
	def test_oversized_headers_431(self):
		c = H2(self.d.port)
		big = [("x-big-%d" % i, "v" * 4000) for i in range(20)]
		c.request(1, "/echo", extra=big)
		h, body, _, rst = c.response(1)
		self.assertEqual(h[":status"], "431", (h, body, rst))
		# The connection goes on.
		c.request(3, "/hello")
		self.assertEqual(c.response(3)[1], b"Hello world!")
		c.close()
		self.served()

	@timeout(20)
	def test_continuation_flood(self):
		c = H2(self.d.port)
		c.send(frame(HEADERS, 0, 1, b"\x82"))	# :method GET, no end
		c.send(b"".join(frame(CONTINUATION, 0, 1, b"") for _ in
		    range(200)))
		g = c.goaway()
		self.assertIsNotNone(g, c.frames)
		self.assertEqual(g.error_code(), ENHANCE_YOUR_CALM)
		self.assertTrue(c.wait_closed())
		self.served()

	@timeout(20)
	def test_rapid_reset(self):
		c = H2(self.d.port)
		out = []
		for i in range(500):
			sid = 1 + 2 * i
			block = c.enc.encode([(":method", "GET"), (":scheme",
			    "http"), (":authority", "x"), (":path", "/sleep?ms=1000")])
			out.append(frame(HEADERS, END_HEADERS | 1, sid, block))
			out.append(frame(RST_STREAM, 0, sid,
			    CANCEL.to_bytes(4, "big")))
		try:
			c.send(b"".join(out))
		except OSError:
			pass			# closed on us mid-send
		g = c.goaway()
		self.assertIsNotNone(g, c.frames)
		self.assertEqual(g.error_code(), ENHANCE_YOUR_CALM)
		self.served()

	@timeout(20)
	def test_window_overflow(self):
		c = H2(self.d.port)
		c.send(frame(WINDOW_UPDATE, 0, 0, (0x7fffffff).to_bytes(4, "big")))
		g = c.goaway()
		self.assertIsNotNone(g, c.frames)
		self.assertEqual(g.error_code(), FLOW_CONTROL_ERROR)
		self.served()

	@timeout(20)
	def test_settings_flood(self):
		c = H2(self.d.port)
		try:
			c.send(b"".join(frame(SETTINGS, 0, 0) for _ in range(1000)))
		except OSError:
			pass
		g = c.goaway()
		self.assertIsNotNone(g, c.frames)
		self.assertEqual(g.error_code(), ENHANCE_YOUR_CALM)
		self.served()

	@timeout(20)
	def test_ping_flood(self):
		c = H2(self.d.port)
		try:
			c.send(b"".join(frame(PING, 0, 0, b"12345678")
			    for _ in range(1000)))
		except OSError:
			pass
		g = c.goaway()
		self.assertIsNotNone(g, c.frames)
		self.assertEqual(g.error_code(), ENHANCE_YOUR_CALM)
		self.served()

	@timeout(60)
	def test_h2load_no_errors(self):
		if shutil.which("h2load") is None:
			self.skipTest("h2load missing (nghttp2-client)")
		out = subprocess.run(["h2load", "-c", "10", "-m", "10", "-n",
		    "2000", "http://127.0.0.1:%d/hello" % self.d.port],
		    capture_output=True, text=True, timeout=50).stdout
		self.assertIn("2000 succeeded, 0 failed, 0 errored, 0 timeout",
		    out, out)
		self.assertIn("status codes: 2000 2xx", out, out)


class Http2Flow(unittest.TestCase):
	"""Flow control bridged, never buffered: a slow HTTP/2 reader of a
	200 MB response keeps ingressd's RSS flat, because the replica is
	credited only as DATA leaves for the client."""

	SIZE = 200 * 1024 * 1024	# ~10.5 s at RATE
	RATE = 20 * 1000 * 1000		# bytes/s
	RSS_MAX_KB = 64 * 1024		# as test_resilience_flow's bound
	AHEAD_MAX = 32 * 1024 * 1024

	@timeout(60)
	def test_slow_reader_large_stream_rss_flat(self):
		if os.environ.get("INGRESSD_SANITIZED") == "1":
			self.skipTest("RSS bound not meaningful under ASan")
		with Daemon({"deployments": {"sleep": {"spawn":
		    {"replicas": 1}}}}) as d:
			self.assertEqual(d.request("GET", "/sleep?ms=0").status,
			    200)
			rss = harness.RssSampler(d.proc.pid).start()
			try:
				got, elapsed, ahead = self.slow_read(d)
			finally:
				max_kb = rss.stop()
			self.assertEqual(got, self.SIZE)
			self.assertGreater(elapsed, 0.9 * self.SIZE / self.RATE)
			self.assertLess(ahead, self.AHEAD_MAX, "the replica ran "
			    "%d bytes ahead of the client" % ahead)
			self.assertLess(max_kb, self.RSS_MAX_KB, "ingressd VmRSS "
			    "reached %d kB" % max_kb)
			self.assertGreater(len(rss.samples), 20)

	def slow_read(self, d):
		"""Stream 1 GETs SIZE bytes; DATA is read (and the windows
		reopened) at RATE.  (bytes, seconds, how far ahead the replica
		was half way)."""
		c = H2(d.port, timeout=30)
		c.request(1, "/sleep?source=%d" % self.SIZE)
		got, ahead, t0 = 0, None, time.monotonic()
		deadline = t0 + 50
		for _ in range(10 * self.SIZE // 16384):
			if got >= self.SIZE:
				break
			wait = t0 + got / self.RATE - time.monotonic()
			if wait > 0:
				time.sleep(wait)
			f = c.read_frame(deadline)
			self.assertIsNotNone(f, "closed after %d" % got)
			self.assertNotEqual(f.type, RST_STREAM, got)
			if f.type != DATA or f.sid != 1 or not f.payload:
				continue
			got += len(f.payload)
			n = struct.pack(">I", len(f.payload))
			c.send(frame(WINDOW_UPDATE, 0, 0, n) +
			    frame(WINDOW_UPDATE, 0, 1, n))
			if ahead is None and got >= self.SIZE // 2:
				ahead = harness.sleep_stats(d.port)["bytes_out"] - \
				    got
		elapsed = time.monotonic() - t0
		c.close()
		return got, elapsed, ahead


class Http2Stop(unittest.TestCase):

	@timeout(30)
	def test_stop_sends_goaway_and_finishes_streams(self):
		with Daemon() as d:
			c = H2(d.port)
			c.request(1, "/sleep?ms=800")
			time.sleep(0.3)
			stopper = threading.Thread(target=d.stop, daemon=True)
			stopper.start()
			g = c.goaway()
			self.assertIsNotNone(g, c.frames)
			self.assertEqual(g.error_code(), NO_ERROR)
			h, _, _, rst = c.response(1)
			self.assertEqual((h[":status"], rst), ("200", None))
			self.assertTrue(c.wait_closed())
			stopper.join(10)


if __name__ == "__main__":
	unittest.main()
